// The `s2s` CLI against the real processes (issue 14, Tests): `talk` with a WAV file (and with a recorder
// standing in for sox's `rec`) writes the answer and prints the bill; models and sessions; bad flags, a
// missing key and an unreachable URL give a clear message and a non-zero exit.
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { decodeWav, encodeWav, S2SClient } from '@s2s/client';
import { CreateKeyResponse } from '@s2s/contract';
import { pcmSilence, pcmTone } from '@s2s/local-provider';
import { closedPort } from '@s2s/testing';
import { api, startStack } from './stack.js';

// Every `s2s` run is a fresh Node process and two of them stream real time: on a loaded CI machine the file
// needs more than tap's default 240 s.
t.setTimeout(600_000);

const BIN = fileURLToPath(new URL('../../packages/cli/bin/s2s.mjs', import.meta.url));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function s2s(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...process.env, S2S_BASE_URL: undefined, S2S_API_KEY: undefined, ...env }, timeout: 120_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

t.test('s2s against a real gateway', async (t) => {
  const stack = await startStack(t);
  const minted = CreateKeyResponse.parse((await api(stack, 'POST', '/admin/v1/keys', { admin: true, body: { balance_cents: 5000 } })).body);
  const client = new S2SClient({ baseUrl: stack.baseUrl, apiKey: minted.key });
  const dir = mkdtempSync(join(tmpdir(), 's2s-cli-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const env = { S2S_BASE_URL: stack.baseUrl, S2S_API_KEY: minted.key };

  t.test('talk --wav: transcripts, a tool call, the answer saved and the settled bill', async (t) => {
    // 48 kHz stereo on purpose: the CLI converts any 16-bit WAV to 24 kHz mono.
    const mono = Buffer.concat([pcmTone(800), pcmSilence(300)]);
    const stereo48 = Buffer.alloc(mono.length * 4);
    for (let i = 0; i < mono.length / 2; i++) {
      const v = mono.readInt16LE(i * 2);
      for (let k = 0; k < 4; k++) stereo48.writeInt16LE(v, i * 8 + k * 2);
    }
    writeFileSync(join(dir, 'in.wav'), encodeWav(stereo48, { sampleRate: 48000, channels: 2 }));
    const out = join(dir, 'out.wav');
    const r = await s2s(
      ['talk', '--wav', join(dir, 'in.wav'), '--out', out, '--tool', '--instructions', 'Be brief.', '--voice', 'alloy'],
      env,
    );
    t.equal(r.code, 0, r.stderr + r.stdout);
    t.match(r.stdout, /you said: speech \d+ ms/);
    t.match(r.stdout, /model said: speech \d+ ms/);
    t.match(r.stdout, 'model calls lookup_order({"order_id":"42"})');
    t.match(r.stdout, 'model said: {"order_id":"42","status":"shipped","arrives":"tomorrow"}');
    t.match(r.stdout, /running cost \d+\.\d{3} cents/);
    const id = /session (vs_\w+): completed/.exec(r.stdout)?.[1];
    t.ok(id, 'the bill names the completed session');
    const billed = Number(/billed (\d+) cents/.exec(r.stdout)?.[1]);
    const settled = await client.sessions.get(id!);
    t.equal(settled.status, 'completed');
    t.equal(billed, settled.usage.billed_cents, 'the printed bill is the settled one');
    t.ok(billed > 0);
    t.match(r.stdout, `audio_out_ms ${settled.usage.audio_out_ms}`);
    const answer = decodeWav(readFileSync(out));
    t.equal(answer.sampleRate, 24000);
    t.equal(answer.pcm.byteLength, settled.usage.audio_out_ms * 48, 'every output byte the gateway metered is in the file');
  });

  t.test('talk --mic with a recorder on PATH (sox rec stands in)', async (t) => {
    // A `rec` that writes 800 ms of tone and silence as raw PCM16 24 kHz mono, then waits to be stopped.
    const bin = join(dir, 'bin');
    const rec = join(bin, 'rec');
    writeFileSync(join(dir, 'turn.raw'), Buffer.concat([pcmTone(800), pcmSilence(200)]));
    rmSync(bin, { recursive: true, force: true });
    (await import('node:fs')).mkdirSync(bin);
    writeFileSync(
      rec,
      `#!${process.execPath}\nprocess.stdout.write(require('fs').readFileSync(${JSON.stringify(join(dir, 'turn.raw'))}));\nsetInterval(() => {}, 1000);\n`,
    );
    chmodSync(rec, 0o755);
    const r = await s2s(['talk', '--mic', '--seconds', '2', '--out', join(dir, 'mic.wav')], { ...env, PATH: `${bin}:${process.env.PATH}` });
    t.equal(r.code, 0, r.stderr + r.stdout);
    t.match(r.stdout, 'recording from the microphone for 2 s');
    t.match(r.stdout, /model said: speech \d+ ms/);
    t.match(r.stdout, /session vs_\w+: completed/);
    t.ok(decodeWav(readFileSync(join(dir, 'mic.wav'))).pcm.byteLength > 0, r.stdout);
  });

  t.test('models and sessions create / get / end', async (t) => {
    const models = await s2s(['models'], { S2S_BASE_URL: stack.baseUrl });
    t.equal(models.code, 0, models.stderr);
    t.match(models.stdout, /^id\s+name\s+per_minute/);
    t.match(models.stdout, /local\/echo-1/);
    const json = await s2s(['models', '--json', '--base-url', stack.baseUrl]);
    t.equal(JSON.parse(json.stdout).object, 'list');

    const created = await s2s(['sessions', 'create', '--model', 'local/echo-1', '--idempotency-key', 'cli-1', '--json'], env);
    t.equal(created.code, 0, created.stderr);
    const session = JSON.parse(created.stdout) as { id: string; status: string };
    t.equal(session.status, 'ready');
    const replay = await s2s(['sessions', 'create', '--idempotency-key', 'cli-1', '--json'], env);
    t.equal(JSON.parse(replay.stdout).id, session.id);
    const got = await s2s(['sessions', 'get', session.id], env);
    t.match(got.stdout, `session ${session.id}: ready (local/echo-1)`);
    const ended = await s2s(['sessions', 'end', session.id, '--reason', 'client_closed'], env);
    t.equal(ended.code, 0, ended.stderr);
    t.match(ended.stdout, `session ${session.id}: cancelled`);
    t.match(ended.stdout, 'billed 0 cents (settled)');
  });

  t.test('errors: the gateway refusal, a missing session, an unknown model', async (t) => {
    const wrongKey = await s2s(['sessions', 'get', 'vs_x', '--key', `vr_sk_${'y'.repeat(40)}`, '--base-url', stack.baseUrl]);
    t.equal(wrongKey.code, 1);
    t.match(wrongKey.stderr, `s2s: GET ${stack.baseUrl}/v1/voice/sessions/vs_x failed with 401 invalid_vr_sk`);
    const model = await s2s(['talk', '--tone', '--model', 'nope/none'], env);
    t.equal(model.code, 1);
    t.match(model.stderr, `s2s: model nope/none is not in the catalog at ${stack.baseUrl}/v1/models`);
  });
});

t.test('bad command lines and an unreachable gateway: a clear message, non-zero exit', async (t) => {
  const unknownFlag = await s2s(['talk', '--wav', 'x.wav', '--base', 'http://127.0.0.1:9']);
  t.equal(unknownFlag.code, 2);
  t.match(unknownFlag.stderr, /^s2s: Unknown option '--base'/);
  t.match(unknownFlag.stderr, 'Usage: s2s <command>');
  const both = await s2s(['talk', '--wav', 'x.wav', '--mic', '--key', 'k']);
  t.equal(both.code, 2);
  t.match(both.stderr, 'talk needs exactly one of --wav FILE, --mic or --tone');
  const unknownCommand = await s2s(['speak']);
  t.equal(unknownCommand.code, 2);
  t.match(unknownCommand.stderr, "Unknown command 'speak'");
  const noKey = await s2s(['sessions', 'get', 'vs_1']);
  t.equal(noKey.code, 2);
  t.match(noKey.stderr, 'an API key is needed: --key vr_sk_… or S2S_API_KEY');
  const nowhere = `http://127.0.0.1:${await closedPort()}`;
  const down = await s2s(['models'], { S2S_BASE_URL: nowhere });
  t.equal(down.code, 1);
  t.ok(down.stderr.startsWith(`s2s: GET ${nowhere}/v1/models failed: fetch failed: `), down.stderr);
  t.match(down.stderr, /ECONNREFUSED/);
  const missingWav = await s2s(['talk', '--wav', '/nonexistent.wav', '--key', 'vr_sk_x', '--base-url', nowhere]);
  t.equal(missingWav.code, 1);
  t.match(missingWav.stderr, 'cannot read --wav /nonexistent.wav');
  const help = await s2s(['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, 'talk (--wav FILE | --mic [--seconds N] | --tone)');
});
