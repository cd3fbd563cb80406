import t from 'tap';
import { ZERO_USAGE } from '@s2s/core';
import { createLogger } from '@s2s/telemetry';
import type { InternalClientEvent } from '../src/codecs/events.js';
import type { MeteredUpstream } from '../src/providers/shared/types.js';
import { UpstreamLink, type UpstreamLinkDeps } from '../src/attachment/upstream-link.js';

const log = createLogger({ service: 'relay-test', level: 'silent' });
const commit = (eventId: string): InternalClientEvent => ({ type: 'input.commit', eventId });
const update = (eventId: string): InternalClientEvent => ({ type: 'session.update', update: {}, eventId });

/** A link whose open is settled by the test; what it asked of the attachment is recorded in order. */
function setup(over: Partial<UpstreamLinkDeps> = {}) {
  const calls: string[] = [];
  let settle!: { ok(up: MeteredUpstream): void; fail(err: unknown): void };
  let signal!: AbortSignal;
  const closed: string[] = [];
  const up = { meter: { usage: () => ({ audio_in_ms: 7 }) }, close: async () => void closed.push('closed') } as unknown as MeteredUpstream;
  const link = new UpstreamLink({
    open: (s) => {
      signal = s;
      calls.push('open');
      return new Promise<MeteredUpstream>((ok, fail) => (settle = { ok, fail }));
    },
    stage: (e) => (calls.push(`stage ${e.eventId}`), e.eventId !== 'refused'),
    opened: (staged) => calls.push(`opened staged=${staged}`),
    apply: (e) => calls.push(`apply ${e.eventId}`),
    overflow: (e) => calls.push(`overflow ${e.eventId}`),
    failed: () => calls.push('failed'),
    log,
    ...over,
  });
  return { link, calls, up, closed, settle: () => settle, signal: () => signal };
}

t.test('the first event opens the upstream; events meanwhile are applied in order once it is open', async (t) => {
  const s = setup();
  t.same(s.link.meter.usage(), ZERO_USAGE, 'zero before it opens');
  s.link.accept(commit('a'));
  s.link.accept(commit('b'));
  t.same(s.calls, ['open'], 'nothing applied while opening');
  t.equal(s.link.current, null);
  s.settle().ok(s.up);
  await new Promise((r) => setImmediate(r));
  s.link.accept(commit('c'));
  t.same(s.calls, ['open', 'opened staged=false', 'apply a', 'apply b', 'apply c']);
  t.equal(s.link.current, s.up);
  t.same(s.link.meter.usage(), { audio_in_ms: 7 });
});

t.test('a first session.update is staged into the opening; a refused one opens nothing', async (t) => {
  const refused = setup();
  refused.link.accept(update('refused'));
  t.same(refused.calls, ['stage refused'], 'no open for a refused first update');
  const s = setup();
  s.link.accept(update('u1'));
  s.settle().ok(s.up);
  await new Promise((r) => setImmediate(r));
  t.same(s.calls, ['stage u1', 'open', 'opened staged=true'], 'the staged update is not applied again');
});

t.test('beyond 1000 events while opening, each further one is refused', async (t) => {
  const s = setup();
  for (let i = 0; i < 1002; i++) s.link.accept(commit(String(i)));
  t.same(s.calls.slice(1), ['overflow 1000', 'overflow 1001']);
});

t.test('stop before the open settles: the open is aborted, queued events dropped, the upstream still closed', async (t) => {
  const s = setup();
  s.link.accept(commit('a'));
  s.link.stop();
  t.ok(s.link.finishing);
  t.ok(s.signal().aborted, 'the open under way is aborted');
  s.settle().ok(s.up);
  const up = await s.link.settled();
  t.equal(up, s.up, 'an open that still succeeded is handed to the end');
  t.same(s.calls, ['open'], 'neither opened nor applied after the stop');
  await s.link.close(up);
  t.same(s.closed, ['closed']);
  t.same(s.link.meter.usage(), { audio_in_ms: 7 }, 'usage readable for the final checkpoint');
});

t.test('a failed open is reported; after stop() the settled upstream is null', async (t) => {
  const s = setup();
  s.link.accept(commit('a'));
  s.settle().fail(new Error('refused'));
  await new Promise((r) => setImmediate(r));
  t.same(s.calls, ['open', 'failed']);
  s.link.stop();
  t.equal(await s.link.settled(), null);
  await s.link.close(null);
  t.equal(s.link.current, null);
});
