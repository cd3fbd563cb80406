// `s2s call --webrtc --wav`: a WebRTC call from the CLI's werift peer, through the edge of one origin.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { decodeWav, S2SClient } from '@s2s/client';
import { placeCall } from './cli-call.js';

t.test('s2s call --webrtc --wav: Opus on the tracks, the transcripts, the answer saved, the settled bill', async (t) => {
  const { r, out, edge, minted } = await placeCall(t, ['--webrtc'], { WEBRTC_ANNOUNCED_ADDRESSES: '127.0.0.1' });
  t.equal(r.code, 0, r.stderr + r.stdout);
  t.match(r.stdout, /calling \/v1\/realtime\/calls over WebRTC/);
  t.match(r.stdout, /you said: speech \d+ ms\n/, "the caller's turn transcribed (from oai-events)");
  const said = Number(/model said: speech (\d+) ms\n/.exec(r.stdout)?.[1]);
  t.ok(said >= 700, `the model's answer transcribed: the echo of ${said} ms`);
  const heard = Number(/heard (\d+) ms of answer/.exec(r.stdout)?.[1]);
  t.ok(heard >= said - 100, `heard ${heard} ms of the ${said} ms answer on the remote track`);
  const answer = decodeWav(readFileSync(out));
  t.equal(answer.sampleRate, 24_000, 'the answer saved as decoded from the track: 24 kHz');
  const id = /session (vs_\w+): completed/.exec(r.stdout)?.[1];
  t.ok(id, 'the hangup ended the session');
  const settled = await new S2SClient({ baseUrl: edge.origin, apiKey: minted.key }).sessions.get(id!);
  t.equal(Number(/billed (\d+) cents/.exec(r.stdout)?.[1]), settled.usage.billed_cents, 'the printed bill is the settled one');
  t.equal(settled.usage.audio_in_ms, 1800, 'audio_in_ms: the question and its trailing silence, decoded from the track');
  t.equal(settled.usage.audio_out_ms, said, 'audio_out_ms: the echoed answer');
});
