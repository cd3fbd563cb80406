import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface HealthChecks {
  /** True while the process should receive no new work (draining). */
  draining(): boolean;
  /** Resolves when the database and the bus answer; rejects otherwise. */
  ready(): Promise<void>;
  /** The Prometheus scrape handler, served at /metrics. */
  metrics?(req: IncomingMessage, res: ServerResponse): void;
}

/** /healthz (the process is up), /readyz (its dependencies answer) for orchestrator probes, and /metrics. */
export function startHealthServer(port: number, host: string, checks: HealthChecks): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const answer = (status: number, body: object) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (path === '/healthz') return answer(200, { status: 'ok' });
    if (path === '/metrics' && checks.metrics) return checks.metrics(req, res);
    if (path !== '/readyz') return answer(404, { status: 'not_found' });
    if (checks.draining()) return answer(503, { status: 'draining' });
    checks.ready().then(
      () => answer(200, { status: 'ready' }),
      () => answer(503, { status: 'unavailable' }),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
