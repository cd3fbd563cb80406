// The application a browser WebRTC test talks to: a backend on its own origin that serves the test's page and
// scripts and mints an `ek_` secret at POST /credential (what a real backend does), beside the gateway's stack and
// edge, with the backend's origin allowed by the relay and a funded key.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Test } from 'tap';
import { api, startEdge, startStack } from '../e2e/stack.js';

export interface WebRtcApp {
  /** The backend's origin (the page's). */
  origin: string;
  stack: Awaited<ReturnType<typeof startStack>>;
  edge: Awaited<ReturnType<typeof startEdge>>;
  key: { id: string; key: string; wallet_id: string };
  /** The model's public pricing, for the expected bill. */
  rate: Record<string, number>;
  /** The voice session of the last secret minted. */
  sessionId(): string;
}

/**
 * Starts the backend serving `files` (path → content type and body) and POST /credential (a client secret for
 * `model` with instructions "Answer briefly.", answered as `{ value, model }`), then the stack and its edge.
 */
export async function startWebRtcApp(
  t: Test,
  opts: { model: string; files: Record<string, { type: string; body: string | Buffer }>; provider?: Record<string, string> },
): Promise<WebRtcApp> {
  let mint: () => Promise<{ value: string; model: string }> = () => Promise.reject(new Error('not ready'));
  const backend = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const file = opts.files[url.pathname];
    if (file) res.setHeader('content-type', file.type).end(file.body);
    else if (url.pathname === '/credential' && req.method === 'POST') {
      mint().then(
        (c) => res.setHeader('content-type', 'application/json').end(JSON.stringify(c)),
        (err: Error) => res.writeHead(500).end(err.message),
      );
    } else res.writeHead(404).end();
  });
  backend.listen(0, '127.0.0.1');
  await once(backend, 'listening');
  t.teardown(() => new Promise((r) => backend.close(r)));
  const origin = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;

  const stack = await startStack(t, {
    relay: { REALTIME_ALLOWED_ORIGINS: origin, WEBRTC_ANNOUNCED_ADDRESSES: '127.0.0.1' },
    ...(opts.provider ? { provider: opts.provider } : {}),
  });
  const edge = await startEdge(t, stack);
  const { body: key } = await api<{ id: string; key: string; wallet_id: string }>(stack, 'POST', '/admin/v1/keys', {
    admin: true,
    body: { balance_cents: 1000 },
  });
  const models = await api<{ data: { id: string; pricing: Record<string, number> }[] }>(stack, 'GET', '/v1/models');
  const rate = models.body.data.find((m) => m.id === opts.model)!.pricing;
  let sessionId = '';
  mint = async () => {
    const res = await api<{ value: string; session: { id: string } }>(stack, 'POST', '/v1/realtime/client_secrets', {
      key: key.key,
      body: { session: { type: 'realtime', model: opts.model, instructions: 'Answer briefly.' } },
    });
    if (res.status !== 200) throw new Error(`mint failed: ${res.status}`);
    sessionId = res.body.session.id;
    return { value: res.body.value, model: opts.model };
  };
  return { origin, stack, edge, key, rate, sessionId: () => sessionId };
}
