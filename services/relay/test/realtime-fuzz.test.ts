// Issue 8, item 7 (realtime): generated client frames against a real relay and the local simulator. Only
// documented answers: server events that match the contract, error events with documented codes, documented
// close codes; never a crash, never a 5xx before the upgrade. Runs are bounded to keep this well under a minute.
import fc from 'fast-check';
import t from 'tap';
import { REALTIME_ERROR_TYPE, ServerEvent, type RealtimeErrorCode } from '@s2s/contract';
import { attach, attachUrl, createKey, createModel, newSession, refused, setupRelay, sleep, tone } from './helpers.js';

const DOCUMENTED_CLOSES = new Set([1000, 1007, 1008, 1009, 1011, 1012, 4001]);
const DOCUMENTED_CODES = new Set<string>(Object.keys(REALTIME_ERROR_TYPE));

const eventId = fc.oneof(fc.constant(undefined), fc.string({ minLength: 0, maxLength: 140 }), fc.integer(), fc.constant(null));
const pcm = fc.oneof(
  fc.constant(tone(20).toString('base64')),
  fc.uint8Array({ minLength: 0, maxLength: 200 }).map((b) => Buffer.from(b).toString('base64')),
  fc.string({ maxLength: 40 }),
);
const knownEvent = fc.oneof(
  fc.record({ type: fc.constant('input_audio_buffer.append'), event_id: eventId, audio: pcm }, { requiredKeys: ['type', 'audio'] }),
  fc.record(
    {
      type: fc.constantFrom('input_audio_buffer.commit', 'input_audio_buffer.clear', 'response.create', 'response.cancel'),
      event_id: eventId,
    },
    { requiredKeys: ['type'] },
  ),
  fc.record(
    {
      type: fc.constant('session.update'),
      event_id: eventId,
      session: fc.oneof(
        fc.record(
          {
            voice: fc.string({ maxLength: 70 }),
            turn_detection: fc.oneof(
              fc.constant(null),
              fc.record({ type: fc.constantFrom('server_vad', 'none'), silence_duration_ms: fc.integer({ min: -10, max: 6000 }) }),
            ),
            audio: fc.jsonValue(),
          },
          { requiredKeys: [] },
        ),
        fc.jsonValue(),
      ),
    },
    { requiredKeys: ['type'] },
  ),
  fc.record({ type: fc.string({ maxLength: 30 }), event_id: eventId, extra: fc.jsonValue() }, { requiredKeys: ['type'] }),
);

type Frame = { kind: 'text'; data: string } | { kind: 'binary'; data: Uint8Array } | { kind: 'bad-utf8' };
const frame: fc.Arbitrary<Frame> = fc.oneof(
  { weight: 6, arbitrary: knownEvent.map((e): Frame => ({ kind: 'text', data: JSON.stringify(e) })) },
  { weight: 2, arbitrary: fc.jsonValue().map((v): Frame => ({ kind: 'text', data: JSON.stringify(v) ?? 'null' })) },
  { weight: 2, arbitrary: fc.string({ maxLength: 60 }).map((s): Frame => ({ kind: 'text', data: s })) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 60 }).map((d): Frame => ({ kind: 'binary', data: d })) },
  { weight: 1, arbitrary: fc.constant<Frame>({ kind: 'bad-utf8' }) },
);

t.test('generated realtime frames get only documented answers', async (t) => {
  const env = await setupRelay(t, { RESPONSE_GRACE_MS: '200' });
  await createModel(env.db, { id: 'local/echo', providerModel: 'echo-stream' });
  await createModel(env.db, { id: 'local/vad', providerModel: 'vad-1' });
  const key = await createKey(env.db, 100_000_000);
  let runs = 0;

  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom('local/echo', 'local/vad'),
      fc.array(frame, { minLength: 1, maxLength: 12 }),
      async (model, frames) => {
        runs++;
        const s = await newSession(env.db, key, model);
        const { client } = await attach(attachUrl(env.url, s.id), key.secret);
        for (const f of frames) {
          if (client.closeCode !== null) break;
          if (f.kind === 'text') client.ws.send(f.data);
          else if (f.kind === 'binary') client.ws.send(f.data, { binary: true });
          else client.ws.send(Buffer.from([0x7b, 0xc3, 0x28, 0x7d]), { binary: false });
        }
        await sleep(50);
        const serverClosed = client.closeCode;
        await client.close();
        for (const e of client.events) {
          const parsed = ServerEvent.safeParse(e);
          if (!parsed.success) throw new Error(`undocumented event ${JSON.stringify(e).slice(0, 200)}`);
          if (parsed.data.type === 'error') {
            const { code, type, event_id } = parsed.data.error;
            if (!DOCUMENTED_CODES.has(code) || REALTIME_ERROR_TYPE[code as RealtimeErrorCode] !== type)
              throw new Error(`undocumented error ${code}/${type}`);
            if (event_id !== undefined && (event_id.length < 1 || event_id.length > 128)) throw new Error('echoed an invalid event_id');
          }
        }
        if (serverClosed !== null && !DOCUMENTED_CLOSES.has(serverClosed)) throw new Error(`undocumented close ${serverClosed}`);
      },
    ),
    { numRuns: 40, endOnFailure: true },
  );
  t.equal(runs >= 40, true, 'every run attached');

  const health = await fetch(env.url.replace('ws://', 'http://').replace('/v1/realtime', '/healthz'));
  t.equal(health.status, 200, 'the relay is alive');
});

t.test('generated session ids before the upgrade: 4xx ErrorResponses, never a 5xx', async (t) => {
  const env = await setupRelay(t);
  const key = await createKey(env.db, 10_000);
  await fc.assert(
    fc.asyncProperty(fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: 'binary', maxLength: 40 })), async (id) => {
      const r = await refused(attachUrl(env.url, id), { secret: key.secret });
      if (r.status >= 500 || ![400, 404, 410].includes(r.status)) throw new Error(`${JSON.stringify(id)} answered ${r.status}`);
      if (typeof r.body.error?.request_id !== 'string') throw new Error('not an ErrorResponse');
    }),
    { numRuns: 60, endOnFailure: true },
  );
  t.pass('all refused with documented statuses');
});
