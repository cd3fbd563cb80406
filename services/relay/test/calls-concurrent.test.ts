// Five WebRTC calls set up at once against one relay (one UDP port): every offer in flight together, every call
// must get session.created on oai-events and the echo of its spoken turn on its track. The callers run in this
// process, then in a process of their own (as the relay benchmark's do).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { mintClientSecret } from '@s2s/sessions';
import { BrowserPeer } from '@s2s/webrtc/testing';
import { placeCalls, type CallResult } from './concurrent-calls.js';
import { browserSession, createKey, createModel, setupRelay, type RelayEnv } from './helpers.js';

const MODEL = 'test/call-concurrent';
const CALLS = 5;
/** From the first offer to the last call's session.created. One call alone takes well under a second here. */
const SETUP_BOUND_MS = 10_000;

async function relayWithSecrets(t: Test): Promise<{ env: RelayEnv; callsUrl: string; secrets: string[] }> {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 10_000);
  const secrets: string[] = [];
  for (let i = 0; i < CALLS; i++) {
    const session = await browserSession(env.db, key, MODEL);
    secrets.push(
      (await mintClientSecret({ ctx: { db: env.db }, input: { sessionId: session.id, ttlSeconds: 60, now: new Date() } })).value,
    );
  }
  const callsUrl = `${env.url.replace(/^ws/, 'http').replace(/\/v1\/realtime$/, '')}/v1/realtime/calls`;
  return { env, callsUrl, secrets };
}

function check(t: Test, env: RelayEnv, results: CallResult[]): void {
  t.comment(JSON.stringify(results));
  results.forEach((r, i) => {
    t.equal(r.status, 201, `call ${i}: answered`);
    t.equal(r.error, undefined, `call ${i}: no failure`);
    t.ok(r.createdMs !== undefined && r.createdMs < SETUP_BOUND_MS, `call ${i}: session.created at ${r.createdMs} ms`);
    t.ok((r.echoPackets ?? 0) * 20 >= 900, `call ${i}: the echo played on its track (${r.echoPackets} packets)`);
  });
  t.equal(env.webrtc.counters.callsConnected, CALLS, 'the relay counts every call connected');
  t.equal(env.webrtc.counters.iceFailures + env.webrtc.counters.dtlsFailures, 0, 'no call failed');
}

t.test(`${CALLS} calls set up at once by peers in this process`, async (t) => {
  const { env, callsUrl, secrets } = await relayWithSecrets(t);
  const peers = secrets.map(() => new BrowserPeer());
  t.teardown(() => Promise.all(peers.map((b) => b.close())));
  check(t, env, await placeCalls(callsUrl, peers, secrets));
});

t.test(`${CALLS} calls set up at once by peers in a process of their own`, async (t) => {
  const { env, callsUrl, secrets } = await relayWithSecrets(t);
  const script = fileURLToPath(new URL('./concurrent-callers.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script, JSON.stringify({ url: callsUrl, secrets })], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => child.kill());
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  t.equal(code, 0, 'the callers exited cleanly');
  check(t, env, JSON.parse(out.trim().split('\n').pop() ?? '[]') as CallResult[]);
});
