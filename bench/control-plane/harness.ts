// What the control plane's bench scripts share: server children and the open-loop load generator.
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { serviceDir } from '../services.js';

/** services/control-plane: the servers run from there, as `npm start` runs them. */
export const controlPlaneDir = serviceDir('control-plane');
/** The bare express server the control plane's figures are divided by. */
export const baselineServer = fileURLToPath(new URL('baseline-server.ts', import.meta.url));

export interface Started {
  child: ChildProcess;
  port: number;
}

/** Spawns a server script (from `cwd`, by default this service's directory) and resolves with the port its first log line with `port` names. */
export function startServer(args: string[], env: Record<string, string>, cwd: string = controlPlaneDir): Promise<Started> {
  const child = spawn(process.execPath, [...(env.NODE_ARGS ? env.NODE_ARGS.split(' ') : []), '--import', 'tsx', ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${args.at(-1)} exited with ${code}`)));
    // Lines after the first are read and dropped, as a log shipper would, so the pipe never blocks.
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const port = (JSON.parse(line) as { port?: number }).port;
        if (typeof port === 'number') resolve({ child, port });
      } catch {
        // not JSON: ignore
      }
    });
  });
}

export async function stop(s: Started): Promise<void> {
  if (s.child.exitCode !== null) return;
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  await exited;
}

export interface RateResult {
  sent: number;
  ok: number;
  failed: number;
  reqPerSec: number;
  p50: number;
  p99: number;
  max: number;
}

/**
 * Open-loop load: requests are sent on a fixed schedule whatever the answers do, and each latency is
 * measured from its scheduled time, so a stall shows up in the percentiles (no coordinated omission).
 */
export async function constantRate(
  url: string,
  init: { method: string; headers: Record<string, string>; body: string },
  rate: number,
  seconds: number,
): Promise<RateResult> {
  // Like a client fleet behind a bounded connection pool: beyond 64 in flight, requests wait client-side
  // (still timed from their schedule) instead of piling hundreds of sockets onto the server.
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const target = new URL(url);
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  let sent = 0;
  const total = rate * seconds;
  const start = performance.now();
  const inFlight: Promise<void>[] = [];
  const fire = (scheduled: number) =>
    new Promise<void>((resolve) => {
      const req = request(
        { agent, host: target.hostname, port: target.port, path: target.pathname, method: init.method, headers: init.headers },
        (res) => {
          res.resume();
          res.on('end', () => {
            latencies.push(performance.now() - scheduled);
            if (res.statusCode && res.statusCode < 300) ok++;
            else failed++;
            resolve();
          });
        },
      );
      req.on('error', () => {
        failed++;
        resolve();
      });
      req.end(init.body);
    });
  await new Promise<void>((done) => {
    const tick = setInterval(() => {
      const now = performance.now();
      const due = Math.min(total, Math.floor(((now - start) / 1000) * rate));
      while (sent < due) {
        inFlight.push(fire(start + (sent * 1000) / rate));
        sent++;
      }
      if (sent >= total) {
        clearInterval(tick);
        done();
      }
    }, 1);
  });
  await Promise.all(inFlight);
  const elapsed = (performance.now() - start) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => Math.round((latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0) * 10) / 10;
  return { sent, ok, failed, reqPerSec: Math.round(ok / elapsed), p50: at(0.5), p99: at(0.99), max: at(1) };
}

/** The bench's key (admin token `bench-admin-token`): a wallet and limits far above what a run creates, so every
 * create still checks and counts them and none is refused; every create reserves on its one wallet row. */
export async function mintBenchKey(url: string): Promise<string> {
  const res = await fetch(`${url}/admin/v1/keys`, {
    method: 'POST',
    headers: { authorization: 'Bearer bench-admin-token', 'content-type': 'application/json' },
    body: JSON.stringify({ balance_cents: 1_000_000_000_000, max_live_sessions: 2_147_483_647, max_creates_per_minute: 2_147_483_647 }),
  });
  return ((await res.json()) as { key: string }).key;
}
