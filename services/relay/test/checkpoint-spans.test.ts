import type { UsageCheckpoint } from '@s2s/contract';
import { ZERO_USAGE } from '@s2s/core';
import { context, disabledMetrics, trace, type Span, type Tracer } from '@s2s/telemetry';
import t from 'tap';
import { RelayTelemetry } from '../src/telemetry.js';

// A synchronous context manager: enough to see which context the publish starts in.
const ROOT = context.active();
let current = ROOT;
context.setGlobalContextManager({
  active: () => current,
  with: (ctx, fn, thisArg, ...args) => {
    const previous = current;
    current = ctx;
    try {
      return fn.call(thisArg, ...args);
    } finally {
      current = previous;
    }
  },
  bind: (_ctx, target) => target,
  enable() {
    return this;
  },
  disable() {
    return this;
  },
});

const message: UsageCheckpoint = {
  type: 'usage.checkpoint',
  version: 4,
  session_id: 'sess_1',
  attachment_id: 'att_1',
  relay_id: 'relay_1',
  seq: 1,
  ...ZERO_USAGE,
  routes: [],
  final: false,
  emitted_at: 0,
};

/** The attachment's span: recording or not, and the spans the relay's tracer was asked for. */
function setup(recording: boolean) {
  const telemetry = new RelayTelemetry(disabledMetrics().meter, 'relay_1');
  const attachment = trace.wrapSpanContext({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: recording ? 1 : 0 });
  const parent = trace.setSpan(
    context.active(),
    recording ? Object.assign(Object.create(attachment) as Span, { isRecording: () => true }) : attachment,
  );
  const started: string[] = [];
  const startSpan = telemetry.tracer.startSpan.bind(telemetry.tracer);
  telemetry.tracer.startSpan = (...args: Parameters<Tracer['startSpan']>) => {
    started.push(args[0]);
    return startSpan(...args);
  };
  const source = {
    sessionId: 'sess_1',
    attachmentId: 'att_1',
    usage: () => ZERO_USAGE,
    routes: () => [],
    trace: { context: parent, headers: {} as never },
  };
  return { telemetry, source, started };
}

t.test('an attachment that records no span: no span per checkpoint publish, the publish in its trace', async (t) => {
  const { telemetry, source, started } = setup(false);
  let traceId: string | undefined;
  const result = await telemetry.published(source, message, async (ctx) => {
    traceId = trace.getSpanContext(ctx)?.traceId;
    return 'acked';
  });
  t.equal(result, 'acked');
  t.same(started, [], 'no span started');
  t.equal(traceId, 'a'.repeat(32), "published in the attachment's trace (its headers carry it)");
});

t.test('a recording attachment: each acknowledged publish in its producer span', async (t) => {
  const { telemetry, source, started } = setup(true);
  t.equal(await telemetry.published(source, message, async () => 'acked'), 'acked');
  t.same(started, ['publish usage.checkpoint']);
});
