import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { request } from 'node:http';
import type { Socket } from 'node:net';
import { loadConfig } from '../src/config.js';

t.test('config: defaults, overrides and readable errors', async (t) => {
  const defaults = {
    port: 8090,
    host: '127.0.0.1',
    apiKey: null,
    replyChunkIntervalMs: 10,
    maxConnectionMs: null,
    capWarningMs: null,
    refuseConnections: false,
  };
  t.same(loadConfig({}), { logLevel: 'info', provider: defaults });
  t.same(loadConfig({ LOCAL_PROVIDER_PORT: '0', LOCAL_PROVIDER_API_KEY: 'k', LOCAL_PROVIDER_API_KEY_UNUSED: 'x', LOG_LEVEL: 'warn' }), {
    logLevel: 'warn',
    provider: { ...defaults, port: 0, apiKey: 'k' },
  });
  t.same(loadConfig({ LOCAL_PROVIDER_API_KEY: '' }).provider.apiKey, null, 'empty means unset');
  t.throws(() => loadConfig({ LOCAL_PROVIDER_PORT: '70000' }), /LOCAL_PROVIDER_PORT/);
  t.throws(() => loadConfig({ LOCAL_PROVIDER_REFUSE_CONNECTIONS: 'maybe' }), /LOCAL_PROVIDER_REFUSE_CONNECTIONS/);
  t.same(
    loadConfig({
      LOCAL_PROVIDER_MAX_CONNECTION_MS: '3000',
      LOCAL_PROVIDER_CAP_WARNING_MS: '1000',
      LOCAL_PROVIDER_REFUSE_CONNECTIONS: 'false',
    }).provider,
    { ...defaults, maxConnectionMs: 3000, capWarningMs: 1000 },
  );
  t.equal(loadConfig({ LOCAL_PROVIDER_REFUSE_CONNECTIONS: '1' }).provider.refuseConnections, true);
  t.equal(loadConfig({ LOCAL_PROVIDER_REFUSE_CONNECTIONS: 'yes' }).provider.refuseConnections, true, 'the booleans of every service');
  t.equal(loadConfig({}).provider.maxConnectionMs, null, '0 means no cap');
  t.throws(() => loadConfig({ LOCAL_PROVIDER_PORT: 'abc', LOG_LEVEL: 'loud' }), /LOCAL_PROVIDER_PORT[\s\S]*LOG_LEVEL/);
});

t.test('main: serves on the configured port, requires the key, drains on SIGTERM', { timeout: 20_000 }, async (t) => {
  const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', main], {
    env: { ...process.env, LOCAL_PROVIDER_PORT: '0', LOCAL_PROVIDER_API_KEY: 'svc-key-123', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let out = '';
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.includes('local provider listening'));
      if (line) resolve(JSON.parse(line).port as number);
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}`)));
  });
  t.equal((await upgrade(port, undefined)).status, 401, 'no key, no upgrade');
  const ok = await upgrade(port, 'Bearer svc-key-123');
  t.equal(ok.status, 101);
  const frames = frameReader(ok.socket!, ok.head!);
  const first = await frames.next();
  t.same([first.opcode, JSON.parse(first.payload.toString()).type], [1, 'session.created']);
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const close = await frames.next();
  t.same([close.opcode, close.payload.readUInt16BE(0)], [8, 1001], 'live sockets are closed with 1001');
  ok.socket!.destroy();
  t.same(await exited, [0, null], 'exits 0');
  t.notMatch(out, 'svc-key-123', 'the key is never logged');
});

/** A WebSocket handshake by hand (this service does not depend on a WebSocket client). */
function upgrade(port: number, authorization: string | undefined): Promise<{ status: number; socket?: Socket; head?: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/v1/realtime?model=echo-1',
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
        ...(authorization ? { Authorization: authorization } : {}),
      },
    });
    req.on('upgrade', (res, socket, head) => resolve({ status: res.statusCode ?? 0, socket, head }));
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0 });
    });
    req.on('error', reject);
    req.end();
  });
}

/** Reads unmasked server frames (no fragmentation; payloads under 64 KiB). */
function frameReader(socket: Socket, head: Buffer): { next(): Promise<{ opcode: number; payload: Buffer }> } {
  // `head`: bytes that came with the 101 response, i.e. the start of the first frame.
  let buf = Buffer.from(head);
  let wake: (() => void) | null = null;
  socket.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    wake?.();
  });
  return {
    async next() {
      for (;;) {
        if (buf.length >= 2) {
          const opcode = buf[0]! & 0x0f;
          let len = buf[1]! & 0x7f;
          let off = 2;
          if (len === 126 && buf.length >= 4) {
            len = buf.readUInt16BE(2);
            off = 4;
          }
          if (len !== 126 && buf.length >= off + len) {
            const payload = buf.subarray(off, off + len);
            buf = buf.subarray(off + len);
            return { opcode, payload };
          }
        }
        await new Promise<void>((r) => (wake = r));
      }
    },
  };
}
