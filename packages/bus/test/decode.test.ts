import t from 'tap';
import { checkpointRoutes, USAGE_COUNTER_NAMES, type CompactRoute } from '@s2s/contract';
import { decodeMessage, encodeMessage } from '../src/index.js';

const v1 = {
  type: 'usage.checkpoint',
  version: 1,
  session_id: 'vs_1',
  attachment_id: 'att_1',
  relay_id: 'r1',
  seq: 3,
  audio_in_ms: 1500,
  audio_out_ms: 1000,
  input_audio_tokens: 15,
  output_audio_tokens: 20,
  final: true,
  emitted_at: 1_700_000_000_000,
};
const bytes = (m: unknown) => new TextEncoder().encode(JSON.stringify(m));

const usageOf = (c: Record<(typeof USAGE_COUNTER_NAMES)[number], number>) => Object.fromEntries(USAGE_COUNTER_NAMES.map((k) => [k, c[k]]));
const v2 = { ...v1, version: 2 as const, input_text_tokens: 4, cached_input_tokens: 5, output_text_tokens: 6, transcribed_ms: 7 };

t.test('a version 3 checkpoint (a relay before version 4) decodes into version 4, each route an array with its counters', async (t) => {
  // v2's counters: 1500 / 1000 ms, 15 / 20 audio tokens, 4 text in, 5 cached, 6 text out, 7 ms transcribed.
  const zero = { input_text_tokens: 0, cached_input_tokens: 0, output_text_tokens: 0, transcribed_ms: 0 };
  const routes = [
    {
      provider: 'openai',
      provider_model: 'gpt-realtime',
      audio_in_ms: 500,
      audio_out_ms: 1000,
      input_audio_tokens: 5,
      output_audio_tokens: 20,
      ...zero,
    },
    {
      provider: 'azure',
      provider_model: 'dep',
      audio_in_ms: 1000,
      audio_out_ms: 0,
      input_audio_tokens: 10,
      output_audio_tokens: 0,
      input_text_tokens: 4,
      cached_input_tokens: 5,
      output_text_tokens: 6,
      transcribed_ms: 7,
    },
  ];
  const v3 = { ...v2, type: 'usage.checkpoint' as const, version: 3 as const, routes };
  t.same(decodeMessage(bytes(v3)), {
    ok: true,
    message: {
      ...v3,
      version: 4,
      routes: [
        ['openai', 'gpt-realtime', 500, 1000, 5, 0, 0, 20, 0, 0],
        ['azure', 'dep', 1000, 0, 10, 4, 5, 0, 6, 7],
      ],
    },
  });
  t.same(
    decodeMessage(bytes({ ...v3, audio_in_ms: 1 })),
    { ok: false, reason: 'malformed', detail: 'routes' },
    'routes that do not add up',
  );
});

t.test('a version 4 checkpoint decodes as it is: a single route without its counters, several with theirs', async (t) => {
  const single = { ...v2, type: 'usage.checkpoint' as const, version: 4 as const, routes: [['openai', 'gpt-realtime']] as CompactRoute[] };
  t.same(decodeMessage(encodeMessage(single)), { ok: true, message: single });
  t.same(checkpointRoutes(single), [{ provider: 'openai', provider_model: 'gpt-realtime', ...usageOf(v2) }], 'the route served it all');
  const split = {
    ...single,
    routes: [
      ['openai', 'gpt-realtime', 500, 1000, 5, 0, 0, 20, 0, 0],
      ['azure', 'dep', 1000, 0, 10, 4, 5, 0, 6, 7],
    ] as CompactRoute[],
  };
  t.same(decodeMessage(encodeMessage(split)), { ok: true, message: split });
  t.same(
    decodeMessage(bytes({ ...split, audio_in_ms: 1 })),
    { ok: false, reason: 'malformed', detail: 'routes' },
    'routes that do not add up',
  );
  t.same(
    decodeMessage(bytes({ ...split, routes: [['openai', 'gpt-realtime'], split.routes[1]] })),
    { ok: false, reason: 'malformed', detail: 'routes' },
    'a route without counters only alone',
  );
  t.same(decodeMessage(bytes({ ...single, routes: [['openai']] })).ok, false, 'a route names its provider and its model');
});

t.test('a version 2 checkpoint (a relay before the route split) decodes into version 4 with the split unknown', async (t) => {
  t.same(decodeMessage(bytes(v2)), { ok: true, message: { ...v2, version: 4, routes: null } });
});

t.test('a version 1 checkpoint (a relay not yet upgraded) decodes into version 4 with the new counters 0', async (t) => {
  t.same(decodeMessage(bytes(v1)), {
    ok: true,
    message: { ...v1, version: 4, input_text_tokens: 0, cached_input_tokens: 0, output_text_tokens: 0, transcribed_ms: 0, routes: null },
  });
  const bad = decodeMessage(bytes({ ...v1, seq: 0 }));
  t.same(bad, { ok: false, reason: 'malformed', detail: 'seq' }, 'a broken version 1 is malformed, not unknown');
});

t.test('an unknown version is told apart from a malformed message', async (t) => {
  t.same(decodeMessage(bytes({ ...v1, version: 5 })), { ok: false, reason: 'unknown_version', detail: 'usage.checkpoint@5' });
  t.same(decodeMessage(bytes({ ...v1, version: 2 })), {
    ok: false,
    reason: 'malformed',
    detail: 'input_text_tokens,cached_input_tokens,output_text_tokens,transcribed_ms',
  });
});
