import t from 'tap';
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

const v2 = { ...v1, version: 2 as const, input_text_tokens: 4, cached_input_tokens: 5, output_text_tokens: 6, transcribed_ms: 7 };

t.test('a version 3 checkpoint decodes as it is, its split by route too', async (t) => {
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
  t.same(decodeMessage(encodeMessage(v3)), { ok: true, message: v3 });
  t.same(
    decodeMessage(bytes({ ...v3, audio_in_ms: 1 })),
    { ok: false, reason: 'malformed', detail: 'routes' },
    'routes that do not add up',
  );
});

t.test('a version 2 checkpoint (a relay before the route split) decodes into version 3 with the split unknown', async (t) => {
  t.same(decodeMessage(bytes(v2)), { ok: true, message: { ...v2, version: 3, routes: null } });
});

t.test('a version 1 checkpoint (a relay not yet upgraded) decodes into version 3 with the new counters 0', async (t) => {
  t.same(decodeMessage(bytes(v1)), {
    ok: true,
    message: { ...v1, version: 3, input_text_tokens: 0, cached_input_tokens: 0, output_text_tokens: 0, transcribed_ms: 0, routes: null },
  });
  const bad = decodeMessage(bytes({ ...v1, seq: 0 }));
  t.same(bad, { ok: false, reason: 'malformed', detail: 'seq' }, 'a broken version 1 is malformed, not unknown');
});

t.test('an unknown version is told apart from a malformed message', async (t) => {
  t.same(decodeMessage(bytes({ ...v1, version: 4 })), { ok: false, reason: 'unknown_version', detail: 'usage.checkpoint@4' });
  t.same(decodeMessage(bytes({ ...v1, version: 2 })), {
    ok: false,
    reason: 'malformed',
    detail: 'input_text_tokens,cached_input_tokens,output_text_tokens,transcribed_ms',
  });
});
