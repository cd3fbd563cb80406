// `s2s call --twilio --wav`: a simulated phone call in Twilio's protocol, through the edge of one origin.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { decodeWav, S2SClient } from '@s2s/client';
import { placeCall } from './cli-call.js';

t.test('s2s call --twilio --wav: the question in μ-law, the answer saved, the settled bill', async (t) => {
  const { r, out, edge, minted } = await placeCall(t, ['--twilio']);
  t.equal(r.code, 0, r.stderr + r.stdout);
  t.match(r.stdout, /calling \/v1\/telephony\/twilio/);
  const heard = Number(/heard (\d+) ms of answer/.exec(r.stdout)?.[1]);
  t.ok(heard > 500, `heard ${heard} ms`);
  const answer = decodeWav(readFileSync(out));
  t.equal(answer.sampleRate, 8000, 'the answer saved as the caller heard it: 8 kHz');
  const id = /session (vs_\w+): completed/.exec(r.stdout)?.[1];
  t.ok(id, 'the call ended the session');
  const settled = await new S2SClient({ baseUrl: edge.origin, apiKey: minted.key }).sessions.get(id!);
  t.equal(Number(/billed (\d+) cents/.exec(r.stdout)?.[1]), settled.usage.billed_cents, 'the printed bill is the settled one');
  t.equal(settled.usage.audio_in_ms, 1800, 'audio_in_ms: the question and its trailing silence, in real milliseconds');
});
