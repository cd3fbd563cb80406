// Issue 10 in a real browser: a page using the official @openai/agents-realtime (bundled here with esbuild)
// talks to the gateway's OpenAI dialect with an `ek_` secret minted by its backend, its microphone a WAV, and
// receives the spoken answer; a page that offers an API key in a subprotocol is refused before the upgrade.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { build } from 'esbuild';
import type { AdminSession } from '@s2s/contract';
import { eventually } from '@s2s/testing';
import { api, startStack } from '../e2e/stack.js';
import { launchChromium, skipWithoutChromium, speechWav } from './chromium.js';

const MODEL = 'local/echo-1';

interface PageResult {
  connected: boolean;
  audioBytes: number;
  history: { role?: string; type: string; content?: { type: string; transcript?: string | null }[] }[];
  errors: string[];
  connectError: string | null;
  closed: boolean;
}

t.test('@openai/agents-realtime in Chromium', { skip: skipWithoutChromium() }, async (t) => {
  const bundle = await build({
    entryPoints: [fileURLToPath(new URL('./pages/agents.js', import.meta.url))],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    logLevel: 'error',
  });
  const script = bundle.outputFiles[0]!.text;

  // The page's backend: serves the page and hands it a credential. `stack` is set once the gateway runs.
  let mint: (mode: string) => Promise<{ value: string; model: string }> = () => Promise.reject(new Error('not ready'));
  const backend = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/agents.html') {
      res
        .setHeader('content-type', 'text/html')
        .end('<!doctype html><meta charset="utf-8"><script type="module" src="/agents.js"></script>');
    } else if (url.pathname === '/agents.js') {
      res.setHeader('content-type', 'text/javascript').end(script);
    } else if (url.pathname === '/credential' && req.method === 'POST') {
      mint(url.searchParams.get('mode') ?? '').then(
        (c) => res.setHeader('content-type', 'application/json').end(JSON.stringify(c)),
        (err: Error) => res.writeHead(500).end(err.message),
      );
    } else res.writeHead(404).end();
  });
  backend.listen(0, '127.0.0.1');
  await once(backend, 'listening');
  t.teardown(() => new Promise((r) => backend.close(r)));
  const origin = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;

  // The relay admits browser pages from the backend's origin only.
  const stack = await startStack(t, { relay: { REALTIME_ALLOWED_ORIGINS: origin } });
  const { body: key } = await api<{ id: string; key: string }>(stack, 'POST', '/admin/v1/keys', {
    admin: true,
    body: { balance_cents: 1000 },
  });
  mint = async (mode) => {
    if (mode === 'api-key') return { value: key.key, model: MODEL };
    const res = await api<{ value: string }>(stack, 'POST', '/v1/realtime/client_secrets', {
      key: key.key,
      body: { session: { type: 'realtime', model: MODEL, instructions: 'Answer briefly.' } },
    });
    if (res.status !== 200) throw new Error(`mint failed: ${res.status}`);
    return { value: res.body.value, model: MODEL };
  };
  const sessionsOfKey = async () =>
    (await api<{ data: AdminSession[] }>(stack, 'GET', `/admin/v1/sessions?key_id=${key.id}`, { admin: true })).body.data;

  const browser = await launchChromium(t, { microphoneWav: speechWav({ rate: 24_000, speechMs: 1000, tailMs: 3000 }) });
  const relayUrl = encodeURIComponent(stack.relayUrl);

  await t.test('an API key in a subprotocol is refused (401 before the upgrade)', async (t) => {
    const page = await browser.newPage();
    await page.goto(`${origin}/agents.html?mode=api-key&relay=${relayUrl}`);
    const result = await eventually(
      () => page.evaluate<PageResult>('window.result'),
      (r) => r !== undefined && (r.connectError !== null || r.errors.length > 0 || r.connected),
      15_000,
    );
    t.equal(result.connected, false, 'the SDK never connects');
    t.same(await sessionsOfKey(), [], 'no session was created');
    const refusals = stack.relay.output.filter((l) => l.includes('"attach refused"')).map((l) => (JSON.parse(l) as { code: string }).code);
    t.same(refusals, ['invalid_vr_sk'], 'the relay refused the upgrade: invalid_vr_sk (secret keys stay server-side)');
    await page.close();
  });

  await t.test('an ek_ secret: the page speaks through its microphone and receives the spoken answer', async (t) => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${origin}/agents.html?mode=secret&relay=${relayUrl}`);
    const result = await eventually(
      () => page.evaluate<PageResult>('window.result'),
      (r) =>
        r?.connectError != null || (r?.audioBytes >= 48_000 && r.history.some((i) => i.role === 'assistant' && i.content?.[0]?.transcript)),
      25_000,
    );
    t.equal(result.connectError, null, 'connected with the ek_ secret');
    t.same(result.errors, [], 'no error event');
    t.ok(result.audioBytes >= 48_000, `the answer's audio arrived through the SDK's audio events (${result.audioBytes} bytes)`);
    const said = result.history.find((i) => i.role === 'assistant')?.content?.[0]?.transcript;
    t.match(said, /^speech \d+ ms$/, 'the spoken answer is in the SDK history');
    await page.evaluate('window.endSession()');
    const settled = await eventually(sessionsOfKey, (s) => s[0]?.status === 'completed', 15_000);
    t.equal(settled.length, 1, 'one session: the one the secret was minted for');
    t.ok(settled[0]!.usage.audio_out_ms >= 1000 && settled[0]!.usage.billed_cents > 0, 'billed for the answer');
    t.same(errors, []);
    await page.close();
  });
});
