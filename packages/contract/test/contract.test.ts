import fc from 'fast-check';
import t from 'tap';
import { isDeepStrictEqual } from 'node:util';
import {
  AUDIO_FORMAT,
  AudioFormat,
  BusMessage,
  Rate,
  RateInput,
  LEGACY_BUS_MESSAGES,
  UsageCheckpointFromV1,
  UsageCheckpointFromV2,
  UsageCheckpointFromV3,
  UsageCheckpointV3,
  checkpointRoutes,
  compactRoutes,
  USAGE_COUNTER_NAMES,
  MAX_CHECKPOINT_ROUTES,
  type CheckpointRoute,
  ClientEvent,
  CreateSessionRequest,
  EndSessionRequest,
  ERROR_STATUS,
  errorTypeForStatus,
  IdempotencyKey,
  isSupportedAudioFormat,
  ModelId,
  busSubjects,
  CLIENT_EVENT_TYPES,
  UsageCheckpoint,
  fastUsageCheckpoint,
  encodeUsageCheckpoint,
  UsageCheckpointEncoder,
} from '../src/index.js';

t.test('create request is strict', async (t) => {
  t.ok(CreateSessionRequest.safeParse({ model: 'local/echo', mode: 'speech_to_speech' }).success);
  t.notOk(CreateSessionRequest.safeParse({ model: 'local/echo', mode: 'text' }).success);
  t.notOk(CreateSessionRequest.safeParse({ model: 'local/echo' }).success);
  t.notOk(CreateSessionRequest.safeParse({ model: 'local/echo', mode: 'speech_to_speech', x: 1 }).success);
});

t.test('end request refuses client-reported usage and unknown reasons', async (t) => {
  t.ok(EndSessionRequest.safeParse({}).success);
  t.ok(EndSessionRequest.safeParse({ reason: 'timeout' }).success);
  t.notOk(EndSessionRequest.safeParse({ reason: 'bored' }).success);
  for (const field of ['usage_cents', 'elapsed_ms', 'input_audio_tokens']) {
    t.notOk(EndSessionRequest.safeParse({ [field]: 1 }).success, field);
  }
});

t.test('audio format is the one constant', async (t) => {
  t.ok(AudioFormat.safeParse(AUDIO_FORMAT).success);
  t.notOk(isSupportedAudioFormat({ ...AUDIO_FORMAT, sample_rate_hz: 16000 }));
  t.notOk(isSupportedAudioFormat({ type: 'audio/pcmu' }));
  t.ok(isSupportedAudioFormat({ ...AUDIO_FORMAT }));
});

t.test('client events discriminate on type and are strict', async (t) => {
  t.same(CLIENT_EVENT_TYPES.sort(), [
    'conversation.item.create',
    'conversation.item.delete',
    'conversation.item.retrieve',
    'conversation.item.truncate',
    'input_audio_buffer.append',
    'input_audio_buffer.clear',
    'input_audio_buffer.commit',
    'output_audio_buffer.clear',
    'response.cancel',
    'response.create',
    'session.update',
  ]);
  t.ok(ClientEvent.safeParse({ type: 'input_audio_buffer.append', audio: 'AAAA' }).success);
  t.notOk(ClientEvent.safeParse({ type: 'input_audio_buffer.append' }).success);
  t.notOk(ClientEvent.safeParse({ type: 'response.create', usage: 1 }).success);
  t.notOk(ClientEvent.safeParse({ type: 'nope' }).success);
  const update = ClientEvent.safeParse({
    type: 'session.update',
    session: { voice: 'alloy', turn_detection: { type: 'server_vad' }, audio: { input: { format: { type: 'audio/pcm', rate: 8000 } } } },
  });
  t.ok(update.success, 'a wrong format still parses, so it can answer invalid_audio_format');
});

t.test('model ids and idempotency keys', async (t) => {
  t.ok(ModelId.safeParse('local/echo-1').success);
  t.notOk(ModelId.safeParse('echo').success);
  t.notOk(ModelId.safeParse('https://provider.example/v1').success);
  t.ok(IdempotencyKey.safeParse('a'.repeat(255)).success);
  t.notOk(IdempotencyKey.safeParse('a'.repeat(256)).success);
  t.notOk(IdempotencyKey.safeParse('').success);
  t.notOk(IdempotencyKey.safeParse('tab\there').success);
});

t.test('error codes map to the statuses and types of the spec', async (t) => {
  t.equal(ERROR_STATUS.invalid_vr_sk, 401);
  t.equal(ERROR_STATUS.insufficient_wallet_balance, 402);
  t.equal(ERROR_STATUS.session_expired, 410);
  t.equal(ERROR_STATUS.session_termination_failed, 409);
  t.equal(errorTypeForStatus(402), 'billing_error');
  t.equal(errorTypeForStatus(410), 'gone_error');
  t.equal(errorTypeForStatus(503), 'service_unavailable_error');
});

t.test('bus messages carry type and version', async (t) => {
  const v1 = {
    type: 'usage.checkpoint',
    version: 1,
    session_id: 'vs_1',
    attachment_id: 'att_1',
    relay_id: 'r1',
    seq: 1,
    audio_in_ms: 10,
    audio_out_ms: 0,
    input_audio_tokens: 3,
    output_audio_tokens: 0,
    final: false,
    emitted_at: 1,
  };
  const v2 = { ...v1, version: 2, input_text_tokens: 4, cached_input_tokens: 5, output_text_tokens: 6, transcribed_ms: 7 };
  const routes = [
    { provider: 'openai', provider_model: 'gpt-realtime', ...v2, audio_in_ms: 6, input_audio_tokens: 1, transcribed_ms: 7 },
    { provider: 'azure', provider_model: 'dep', ...v2, audio_in_ms: 4, input_audio_tokens: 2, transcribed_ms: 0 },
  ].map(({ provider, provider_model, ...c }) => ({
    provider,
    provider_model,
    audio_in_ms: c.audio_in_ms,
    audio_out_ms: 0,
    input_audio_tokens: c.input_audio_tokens,
    input_text_tokens: provider === 'azure' ? 4 : 0,
    cached_input_tokens: provider === 'azure' ? 5 : 0,
    output_audio_tokens: 0,
    output_text_tokens: provider === 'azure' ? 6 : 0,
    transcribed_ms: c.transcribed_ms,
  }));
  const msg = { ...v2, version: 3, routes };
  // Version 3 (relays before version 4) is still read: each route an array with its counters.
  t.ok(UsageCheckpointV3.safeParse(msg).success, 'version 3 carries every counter and their split by route');
  t.ok(UsageCheckpointV3.safeParse({ ...msg, routes: null }).success, 'routes null: the split is unknown');
  t.ok(
    UsageCheckpointV3.safeParse({ ...msg, ...Object.fromEntries(USAGE_COUNTER_NAMES.map((k) => [k, 0])), routes: [] }).success,
    'nothing used: no route',
  );
  t.notOk(UsageCheckpointV3.safeParse({ ...msg, audio_in_ms: 11 }).success, 'the routes must add up to the totals');
  t.notOk(UsageCheckpointV3.safeParse({ ...msg, routes: [routes[0]] }).success, 'a route missing does not add up');
  t.notOk(
    UsageCheckpointV3.safeParse({ ...msg, routes: [{ ...routes[0], url: 'wss://x' }, routes[1]] }).success,
    'a route is a provider and a model, nothing else',
  );
  t.notOk(UsageCheckpointV3.safeParse({ ...msg, routes: undefined }).success, 'version 3 needs routes');
  t.notOk(UsageCheckpointV3.safeParse({ ...msg, transcribed_ms: undefined }).success, 'version 3 needs every counter');
  t.notOk(UsageCheckpointV3.safeParse({ ...msg, seq: 0 }).success);
  t.notOk(BusMessage.safeParse(msg).success, 'version 3 is not a current message');
  const asArrays = routes.map((r) => [r.provider, r.provider_model, ...USAGE_COUNTER_NAMES.map((k) => r[k])]);
  t.same(UsageCheckpointFromV3.parse(msg), { ...msg, version: 4, routes: asArrays });
  t.same(checkpointRoutes(UsageCheckpointFromV3.parse(msg)), routes, 'and back to objects, exactly');
  // Version 4: the same split as arrays; a single route that served everything without its counters.
  const v4 = { ...msg, version: 4, routes: asArrays };
  t.ok(BusMessage.safeParse(v4).success, 'version 4 carries every counter and their split by route');
  t.ok(BusMessage.safeParse({ ...v4, routes: null }).success, 'routes null: the split is unknown');
  t.ok(BusMessage.safeParse({ ...v4, routes: [['openai', 'gpt-realtime']] }).success, 'one route served it all');
  t.same(
    checkpointRoutes(UsageCheckpoint.parse({ ...v4, routes: [['openai', 'gpt-realtime']] })),
    [{ provider: 'openai', provider_model: 'gpt-realtime', ...Object.fromEntries(USAGE_COUNTER_NAMES.map((k) => [k, v2[k]])) }],
    'its counters are the totals',
  );
  t.same(compactRoutes([routes[0]!]), [['openai', 'gpt-realtime']], 'the relay sends a single route without its counters');
  t.same(compactRoutes(routes), asArrays, 'and several with theirs');
  t.ok(
    BusMessage.safeParse({ ...v4, ...Object.fromEntries(USAGE_COUNTER_NAMES.map((k) => [k, 0])), routes: [] }).success,
    'nothing used: no route',
  );
  t.notOk(BusMessage.safeParse({ ...v4, audio_in_ms: 11 }).success, 'the routes must add up to the totals');
  t.notOk(BusMessage.safeParse({ ...v4, routes: [asArrays[0]] }).success, 'a route missing does not add up');
  t.notOk(
    BusMessage.safeParse({ ...v4, routes: [['openai', 'gpt-realtime'], asArrays[1]] }).success,
    'a route without counters only alone',
  );
  t.notOk(BusMessage.safeParse({ ...v4, routes: [[...asArrays[0]!, 1], asArrays[1]] }).success, 'a route array has no other item');
  t.notOk(BusMessage.safeParse({ ...v4, routes: [['openai', 'gpt-realtime', 1]] }).success, 'all the counters or none');
  t.notOk(BusMessage.safeParse({ ...v4, routes: [['', 'gpt-realtime']] }).success, 'a route names its provider');
  t.notOk(BusMessage.safeParse({ ...v4, routes: routes }).success, 'version 4 routes are arrays');
  t.notOk(BusMessage.safeParse({ ...msg, version: 2 }).success, 'version 2 has no routes');
  t.notOk(BusMessage.safeParse(v2).success, 'version 2 is not a current message');
  t.notOk(BusMessage.safeParse({ ...msg, version: 1 }).success, 'version 1 has audio counters only');
  t.notOk(BusMessage.safeParse({ ...v4, transcribed_ms: undefined }).success, 'version 4 needs every counter');
  t.notOk(BusMessage.safeParse({ ...v4, seq: 0 }).success);
  t.notOk(BusMessage.safeParse(v1).success, 'version 1 is not a current message');
  // Version 2 (relays before the route split) is still read: version 4 with the split unknown.
  t.same(UsageCheckpointFromV2.parse(v2), { ...v2, version: 4, routes: null });
  t.notOk(UsageCheckpointFromV2.safeParse({ ...v2, routes: null }).success, 'strict: no version 3 fields in a version 2');
  // Version 1 (relays before issue 9) is still read: the new counters 0, the split unknown.
  t.same(UsageCheckpointFromV1.parse(v1), {
    ...v1,
    version: 4,
    input_text_tokens: 0,
    cached_input_tokens: 0,
    output_text_tokens: 0,
    transcribed_ms: 0,
    routes: null,
  });
  t.notOk(UsageCheckpointFromV1.safeParse({ ...v1, input_text_tokens: 1 }).success, 'strict: no version 2 fields in a version 1');
  t.same(
    LEGACY_BUS_MESSAGES.map((l) => [l.type, l.version]),
    [
      ['usage.checkpoint', 1],
      ['usage.checkpoint', 2],
      ['usage.checkpoint', 3],
    ],
  );
  const s = busSubjects('t_abc');
  t.equal(s.stream, 'T_ABC_EVENTS');
  t.equal(s.usageCheckpoint('vs_1'), 't_abc.usage.checkpoint.vs_1');
});

t.test('PUT /admin/v1/models pricing: the modality rates are optional and default to 0; the catalog rate has them all', async (t) => {
  const audio = { per_minute: 1, audio_in_token: 2, audio_out_token: 3, relay_fee_milli_cents: 4 };
  t.same(RateInput.parse(audio), { ...audio, text_in_token: 0, text_out_token: 0, cached_in_token: 0, transcription_per_minute: 0 });
  const full = { ...audio, text_in_token: 5, text_out_token: 6, cached_in_token: 7, transcription_per_minute: 8 };
  t.same(RateInput.parse(full), full);
  t.notOk(RateInput.safeParse({ ...audio, text_in_token: -1 }).success);
  t.notOk(RateInput.safeParse({ ...audio, text_in_token: 1.5 }).success);
  t.notOk(Rate.safeParse(audio).success, 'a stored or listed rate shows every field');
  t.ok(Rate.safeParse(full).success);
});

t.test('fastUsageCheckpoint accepts exactly what UsageCheckpoint accepts, with the same result', async (t) => {
  const id = fc.string({ minLength: 1, maxLength: 128 });
  const count = fc.oneof(fc.nat(), fc.constant(Number.MAX_SAFE_INTEGER));
  // Route counters small enough that a checkpoint's sums stay exact integers.
  const part = fc.nat({ max: 2 ** 45 });
  const route = fc.record({
    provider: fc.string({ minLength: 1, maxLength: 64 }),
    provider_model: fc.string({ minLength: 1, maxLength: 200 }),
    ...Object.fromEntries(USAGE_COUNTER_NAMES.map((k) => [k, part])),
  }) as fc.Arbitrary<CheckpointRoute>;
  const header = fc.record({
    session_id: id,
    attachment_id: id,
    relay_id: id,
    seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  });
  const totals = fc.record(Object.fromEntries(USAGE_COUNTER_NAMES.map((k) => [k, count])));
  // In the schema's key order (zod's output order), the totals the sums of the routes unless the split is unknown.
  const valid = fc
    .tuple(header, totals, fc.option(fc.array(route, { maxLength: MAX_CHECKPOINT_ROUTES }), { nil: null }), fc.boolean(), count)
    .map(([h, unsplit, routes, final, emitted_at]) => ({
      type: 'usage.checkpoint',
      version: 3,
      ...h,
      ...(routes === null ? unsplit : Object.fromEntries(USAGE_COUNTER_NAMES.map((k) => [k, routes.reduce((sum, r) => sum + r[k], 0)]))),
      routes,
      final,
      emitted_at,
    }));
  // Version 4 of the same: a single route sometimes without its counters, several always with theirs.
  const validV4 = fc.tuple(valid, fc.boolean()).map(([c, compact]) => ({
    ...c,
    version: 4,
    routes: c.routes === null ? null : compact ? compactRoutes(c.routes) : c.routes.map((r) => compactRoutes([r, r])[0]!),
  }));
  // The schema that decides a message of its version: version 3 turned into version 4, version 4 as it is.
  const slowParse = (json: unknown) =>
    typeof json === 'object' && json !== null && (json as { version?: unknown }).version === 3
      ? UsageCheckpointFromV3.safeParse(json)
      : UsageCheckpoint.safeParse(json);
  // Every valid checkpoint takes the fast path: version 4 unchanged, version 3 as the schema turns it into version 4.
  fc.assert(
    fc.property(fc.oneof(valid, validV4), (c) => {
      const json = JSON.parse(JSON.stringify(c));
      const slow = slowParse(structuredClone(json));
      t.ok(slow.success);
      const fast = fastUsageCheckpoint(json);
      t.same(fast, slow.data);
      return fast !== undefined && fast.version === 4;
    }),
    { numRuns: 300 },
  );
  // A valid checkpoint with one key dropped, added or given any other value: never accepted where the schema refuses.
  const odd = fc.oneof(
    fc.constant(undefined),
    fc.jsonValue(),
    fc.double(),
    fc.integer(),
    fc.constantFrom(0, -1, 1.5, 2 ** 53, '', 'x'.repeat(129), 'usage.checkpoint', 1, 2, true, null, [], {}),
  );
  const keys = [
    'type',
    'version',
    'session_id',
    'attachment_id',
    'relay_id',
    'seq',
    'audio_in_ms',
    'final',
    'emitted_at',
    'transcribed_ms',
    'routes',
    'extra',
    '__proto__',
  ];
  const mutated = fc
    .tuple(fc.oneof(valid, validV4), fc.array(fc.tuple(fc.constantFrom(...keys), odd), { minLength: 1, maxLength: 3 }))
    .map(([c, edits]) => {
      let text = JSON.stringify(c);
      for (const [k, v] of edits) {
        const o = JSON.parse(text);
        if (v === undefined) delete o[k];
        // Spliced, not String#replace: a generated value may hold `$'`, a replacement pattern.
        else if (k === '__proto__') text = `{"__proto__":${JSON.stringify(v)},${text.slice(1)}`;
        else o[k] = v;
        if (k !== '__proto__') text = JSON.stringify(o);
      }
      return JSON.parse(text) as unknown;
    });
  // The same inside a route.
  const routeKeys = ['provider', 'provider_model', 'audio_in_ms', 'transcribed_ms', 'extra', 0, 1, 2, 9, 10];
  const mutatedRoute = fc
    .tuple(fc.oneof(valid, validV4), fc.nat(), fc.constantFrom(...routeKeys), odd)
    .filter(([c]) => Array.isArray(c.routes) && c.routes.length > 0)
    .map(([c, i, k, v]) => {
      const o = JSON.parse(JSON.stringify(c));
      const r = o.routes[i % o.routes.length];
      if (v === undefined) delete r[k];
      else r[k] = v;
      return JSON.parse(JSON.stringify(o)) as unknown;
    });
  fc.assert(
    fc.property(fc.oneof(mutated, mutatedRoute, fc.jsonValue()), (json) => {
      const slow = slowParse(structuredClone(json));
      const fast = fastUsageCheckpoint(json);
      if (fast === undefined) return true;
      // The same content; key order aside (an edit that drops a key and adds it back moves it to the end).
      return slow.success && isDeepStrictEqual(fast, slow.data);
    }),
    { numRuns: 3000 },
  );

  // The one encoder: its JSON is JSON.stringify of the message (a single route in its short form), the schema and
  // the fast decoder accept it, and both give back the same checkpoint; one encoder serves an attachment's whole
  // run, its single route's JSON reused while the route stays.
  const canonical = (c: UsageCheckpoint): UsageCheckpoint => ({
    ...c,
    routes: c.routes === null ? null : compactRoutes(checkpointRoutes(c)!),
  });
  fc.assert(
    fc.property(fc.array(validV4, { minLength: 1, maxLength: 5 }), (run) => {
      const checkpoints = run.map((c) => UsageCheckpoint.parse(c));
      const first = checkpoints[0]!;
      const encoder = new UsageCheckpointEncoder(first);
      for (const c of checkpoints) {
        const json = encodeUsageCheckpoint(c);
        const same = { ...c, session_id: first.session_id, attachment_id: first.attachment_id, relay_id: first.relay_id };
        const reused = encoder.encode(c.seq, c, checkpointRoutes(c), c.final, c.emitted_at);
        if (json !== JSON.stringify(canonical(c)) || reused !== JSON.stringify(canonical(same))) return false;
        const slow = UsageCheckpoint.safeParse(JSON.parse(json));
        const fast = fastUsageCheckpoint(JSON.parse(json));
        if (!slow.success || !isDeepStrictEqual(fast, slow.data) || !isDeepStrictEqual(checkpointRoutes(fast!), checkpointRoutes(c)))
          return false;
      }
      return true;
    }),
    { numRuns: 300 },
  );
});
