// `s2s call --twilio --wav`: a simulated phone call in Twilio's protocol, through the edge of one origin.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { decodeWav, encodeWav, S2SClient } from '@s2s/client';
import { CreateKeyResponse } from '@s2s/contract';
import { pcmSilence, pcmTone } from '@s2s/local-provider';
import { api, startEdge, startStack } from './stack.js';

const BIN = fileURLToPath(new URL('../../packages/cli/bin/s2s.mjs', import.meta.url));

t.test('s2s call --twilio --wav: the question in μ-law, the answer saved, the settled bill', async (t) => {
  const stack = await startStack(t);
  const edge = await startEdge(t, stack);
  const minted = CreateKeyResponse.parse((await api(stack, 'POST', '/admin/v1/keys', { admin: true, body: { balance_cents: 5000 } })).body);
  const dir = mkdtempSync(join(tmpdir(), 's2s-call-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'question.wav'), encodeWav(Buffer.concat([pcmTone(800), pcmSilence(200)])));
  const out = join(dir, 'answer.wav');
  const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile(
      process.execPath,
      [BIN, 'call', '--twilio', '--wav', join(dir, 'question.wav'), '--out', out],
      { env: { ...process.env, S2S_BASE_URL: edge.origin, S2S_API_KEY: minted.key }, timeout: 120_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
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
