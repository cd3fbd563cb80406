// `s2s call`, run as a user runs it: the binary against the edge of a stack (one origin).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeWav } from '@s2s/client';
import { CreateKeyResponse } from '@s2s/contract';
import { pcmSilence, pcmTone } from '@s2s/local-provider';
import { api, startEdge, startStack, type Teardown } from './stack.js';

const BIN = fileURLToPath(new URL('../../packages/cli/bin/s2s.mjs', import.meta.url));

/**
 * A stack with its edge and a key of 50 $, and `s2s call <flags> --wav` run against the edge with a question of
 * an 800 ms tone and 200 ms of silence (the CLI adds 800 ms of silence).
 */
export async function placeCall(t: Teardown, flags: string[], relay: Record<string, string> = {}) {
  const stack = await startStack(t, { relay });
  const edge = await startEdge(t, stack);
  const minted = CreateKeyResponse.parse((await api(stack, 'POST', '/admin/v1/keys', { admin: true, body: { balance_cents: 5000 } })).body);
  const dir = mkdtempSync(join(tmpdir(), 's2s-call-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'question.wav'), encodeWav(Buffer.concat([pcmTone(800), pcmSilence(200)])));
  const out = join(dir, 'answer.wav');
  const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile(
      process.execPath,
      [BIN, 'call', ...flags, '--wav', join(dir, 'question.wav'), '--out', out],
      { env: { ...process.env, S2S_BASE_URL: edge.origin, S2S_API_KEY: minted.key }, timeout: 120_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
  return { r, out, edge, minted };
}
