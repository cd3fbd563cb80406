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

t.test('a version 2 checkpoint decodes as it is', async (t) => {
  const v2 = { ...v1, version: 2 as const, input_text_tokens: 4, cached_input_tokens: 5, output_text_tokens: 6, transcribed_ms: 7 };
  const d = decodeMessage(encodeMessage(v2 as never));
  t.same(d, { ok: true, message: v2 });
});

t.test('a version 1 checkpoint (a relay not yet upgraded) decodes into version 2 with the new counters 0', async (t) => {
  t.same(decodeMessage(bytes(v1)), {
    ok: true,
    message: { ...v1, version: 2, input_text_tokens: 0, cached_input_tokens: 0, output_text_tokens: 0, transcribed_ms: 0 },
  });
  const bad = decodeMessage(bytes({ ...v1, seq: 0 }));
  t.same(bad, { ok: false, reason: 'malformed', detail: 'seq' }, 'a broken version 1 is malformed, not unknown');
});

t.test('an unknown version is told apart from a malformed message', async (t) => {
  t.same(decodeMessage(bytes({ ...v1, version: 3 })), { ok: false, reason: 'unknown_version', detail: 'usage.checkpoint@3' });
  t.same(decodeMessage(bytes({ ...v1, version: 2 })), {
    ok: false,
    reason: 'malformed',
    detail: 'input_text_tokens,cached_input_tokens,output_text_tokens,transcribed_ms',
  });
});
