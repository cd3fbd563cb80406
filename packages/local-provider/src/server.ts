import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { SpanKind, extractHeaders, gatewayTracer, type Logger } from '@s2s/telemetry';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { ClientEvent, DEFAULT_REPLY_CHUNK_INTERVAL_MS, type ServerEventBody } from './protocol.js';
import { SimulatedSession } from './session.js';

export const REALTIME_PATH = '/v1/realtime';
const MAX_EVENT_BYTES = 16 * 1024 * 1024;

/** What a test (or a curious operator) can observe of one client event the simulator received. */
export interface ReceivedClientEvent {
  /** Per-server connection counter, 1, 2, … in order of connection. */
  connection: number;
  model: string;
  event: ClientEvent;
}

export interface LocalProviderOptions {
  port: number;
  host?: string;
  /** When set, `Authorization: Bearer <apiKey>` is required; anything else is refused 401 before the upgrade. */
  apiKey?: string | null;
  /** `api-key`: the key is expected in an `api-key` header instead, as Azure OpenAI takes it. */
  apiKeyHeader?: 'authorization' | 'api-key';
  /** The realtime endpoint's path (default `/v1/realtime`; Azure OpenAI's GA endpoint: `/openai/v1/realtime`). */
  path?: string;
  logger?: Logger;
  /** The process's Prometheus scrape handler, served at /metrics (the service passes its telemetry's). */
  metrics?: (req: IncomingMessage, res: ServerResponse) => void;
  /** Pause between two reply deltas (default 10 ms; 0 sends them back to back). */
  replyChunkIntervalMs?: number;
  /** Called with every well-formed client event, before the simulator acts on it. */
  onClientEvent?: (received: ReceivedClientEvent) => void;
  /** Called for every upgrade request that reaches the simulator, accepted or not. */
  onHandshake?: (handshake: { path: string; model: string | null; authorized: boolean }) => void;
  /**
   * Maximum length of one connection in ms (absent: none). At the cap the simulator ends the connection
   * as OpenAI does at its 60-minute cap: an `error` event `session_expired`, then close 1001 with
   * OpenAI's reason text.
   */
  maxConnectionMs?: number | null;
  /**
   * Announce the cap this long before it, as Gemini's `goAway` does: an `error` event `session_expiring`
   * whose message gives the time left (`... ends in <ms> ms.`). Absent: no warning (OpenAI's behaviour).
   */
  capWarningMs?: number | null;
  /** Refuse every new connection with 503 before the upgrade, as a provider outage would. */
  refuseConnections?: boolean;
}

export interface LocalProvider {
  /** Base URL of the realtime endpoint, without the query: `ws://<host>:<port>/v1/realtime`. */
  url: string;
  port: number;
  /** Number of live connections. */
  connections(): number;
  /** Drops every live connection without a close frame, as a crashed upstream would. */
  terminateConnections(): void;
  /** Starts (true) or stops (false) refusing new connections; live connections are not touched. */
  refuseConnections(refuse: boolean): void;
  /** Ends every live connection as the cap does, now announced (`session_expiring`), in `timeLeftMs`. */
  expireConnections(timeLeftMs: number): void;
  /** Stops accepting, closes live connections with 1001 and resolves when the server is closed. */
  close(): Promise<void>;
}

/**
 * Starts the deterministic upstream simulator: a WebSocket server speaking the OpenAI Realtime (GA) subset
 * the relay's `openai` adapter uses, at `/v1/realtime?model=<name>`. See README.md for its behaviour.
 */
const tracer = gatewayTracer('local-provider');

export async function startLocalProvider(opts: LocalProviderOptions): Promise<LocalProvider> {
  const host = opts.host ?? '127.0.0.1';
  const log = opts.logger;
  const interval = opts.replyChunkIntervalMs ?? DEFAULT_REPLY_CHUNK_INTERVAL_MS;
  const azureAuth = opts.apiKeyHeader === 'api-key';
  const expectedAuth = opts.apiKey ? Buffer.from(azureAuth ? opts.apiKey : `Bearer ${opts.apiKey}`) : null;
  const path = opts.path ?? REALTIME_PATH;
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_EVENT_BYTES, perMessageDeflate: false });
  const server: Server = createServer((req, res) => {
    if (req.url === '/metrics' && opts.metrics) return opts.metrics(req, res);
    // Ready as soon as it listens: it has no dependencies.
    const status = req.url === '/healthz' || req.url === '/readyz' ? 200 : 404;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(status === 200 ? { status: 'ok' } : errorBody('not_found', 'Not found.')));
  });
  let connectionSeq = 0;
  const live = new Map<WebSocket, SimulatedSession>();
  let refusing = opts.refuseConnections ?? false;
  const cap = connectionCap(opts.maxConnectionMs ?? null, opts.capWarningMs ?? null);

  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const model = url.searchParams.get('model');
    const given = azureAuth ? req.headers['api-key'] : req.headers.authorization;
    const authorized = expectedAuth === null || sameSecret(typeof given === 'string' ? given : undefined, expectedAuth);
    opts.onHandshake?.({ path: url.pathname, model, authorized });
    if (url.pathname !== path) return refuse(socket, 404, 'not_found', 'Unknown path.');
    if (!authorized) return refuse(socket, 401, 'invalid_api_key', 'Incorrect or missing API key.');
    if (!model) return refuse(socket, 400, 'missing_model', 'The model query parameter is required.');
    if (refusing) return refuse(socket, 503, 'service_unavailable', 'The service is temporarily unavailable.', 'server_error');
    // One span per upstream session, a child of the relay's connect span when it sent its trace context.
    const span = tracer.startSpan(
      'local-provider realtime session',
      { kind: SpanKind.SERVER, attributes: { 'gen_ai.provider.name': 'local', 'gen_ai.request.model': model } },
      extractHeaders(req.headers),
    );
    socket.once('close', () => span.end());
    wss.handleUpgrade(req, socket, head, (ws) => accept(ws, model));
  });

  function accept(ws: WebSocket, model: string): void {
    const connection = ++connectionSeq;
    const send = (event: ServerEventBody & { event_id: string }) => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(event));
    };
    const session = new SimulatedSession(String(connection), model, send, interval);
    log?.debug({ connection, model }, 'local provider connection opened');
    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (isBinary) return session.rejectEvent('invalid_event', 'Binary frames are not supported.');
      let raw: unknown;
      try {
        raw = JSON.parse(data.toString());
      } catch {
        return session.rejectEvent('invalid_json', 'The event is not valid JSON.');
      }
      if (isAppend(raw)) {
        // The hot event skips the schema: its one field is checked here and decoded by the session.
        opts.onClientEvent?.({ connection, model, event: raw });
        return session.append(raw.audio);
      }
      const parsed = ClientEvent.safeParse(raw);
      if (!parsed.success) {
        const type = (raw as { type?: unknown } | null)?.type;
        const named = typeof type === 'string' ? ` '${type.slice(0, 64)}'` : '';
        return session.rejectEvent('invalid_event', `Invalid or unsupported event${named}.`);
      }
      opts.onClientEvent?.({ connection, model, event: parsed.data });
      session.handle(parsed.data);
    });
    const timers = cap ? cap.arm(session, ws) : [];
    live.set(ws, session);
    ws.on('close', () => {
      live.delete(ws);
      for (const timer of timers) clearTimeout(timer);
      session.close();
      log?.debug({ connection }, 'local provider connection closed');
    });
    ws.on('error', (err) => log?.debug({ connection, err }, 'local provider socket error'));
    session.start();
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  log?.info({ host, port }, 'local provider listening');

  return {
    url: `ws://${urlHost}:${port}${path}`,
    port,
    connections: () => wss.clients.size,
    terminateConnections: () => {
      for (const ws of wss.clients) ws.terminate();
    },
    refuseConnections: (refuse: boolean) => {
      refusing = refuse;
    },
    expireConnections: (timeLeftMs: number) => {
      for (const [ws, session] of live) {
        session.notify('session_expiring', `Your session reaches its maximum duration and ends in ${timeLeftMs} ms.`);
        const timer = setTimeout(() => expire(session, ws, 'Your session hit the maximum duration.'), timeLeftMs);
        ws.once('close', () => clearTimeout(timer));
      }
    },
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const ws of wss.clients) ws.close(1001, 'server shutting down');
      // A peer that never answers the close frame must not hold the shutdown.
      const force = setTimeout(() => {
        for (const ws of wss.clients) ws.terminate();
      }, 1000);
      force.unref();
      server.closeAllConnections();
      await closed;
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      clearTimeout(force);
    },
  };
}

function isAppend(raw: unknown): raw is { type: 'input_audio_buffer.append'; audio: string; event_id?: string } {
  const e = raw as { type?: unknown; audio?: unknown; event_id?: unknown } | null;
  return (
    e !== null &&
    typeof e === 'object' &&
    e.type === 'input_audio_buffer.append' &&
    typeof e.audio === 'string' &&
    (e.event_id === undefined || typeof e.event_id === 'string')
  );
}

function sameSecret(header: string | undefined, expected: Buffer): boolean {
  if (!header) return false;
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * The connection cap: a warning `capWarningMs` ahead (Gemini-like announcement), then OpenAI's own ending:
 * `error` `session_expired` and close 1001 "Your session hit the maximum duration of …".
 */
function connectionCap(maxMs: number | null, warningMs: number | null) {
  if (maxMs === null || maxMs <= 0) return null;
  const reason = `Your session hit the maximum duration of ${durationText(maxMs)}.`;
  return {
    arm(session: SimulatedSession, ws: WebSocket): NodeJS.Timeout[] {
      const timers: NodeJS.Timeout[] = [];
      if (warningMs !== null && warningMs > 0) {
        const lead = Math.min(warningMs, maxMs);
        timers.push(
          setTimeout(
            () =>
              session.notify(
                'session_expiring',
                `Your session reaches its maximum duration of ${durationText(maxMs)} and ends in ${lead} ms.`,
              ),
            maxMs - lead,
          ),
        );
      }
      timers.push(setTimeout(() => expire(session, ws, reason), maxMs));
      return timers;
    },
  };
}

/** OpenAI's ending at its cap: an `error` `session_expired`, then close 1001 with the same reason. */
function expire(session: SimulatedSession, ws: WebSocket, reason: string): void {
  session.notify('session_expired', reason);
  session.close();
  ws.close(1001, reason);
}

/** "60 minutes", as OpenAI words its cap; a cap that is not whole minutes in seconds or ms. */
function durationText(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000} minute${ms === 60_000 ? '' : 's'}`;
  if (ms % 1000 === 0) return `${ms / 1000} second${ms === 1000 ? '' : 's'}`;
  return `${ms} ms`;
}

function errorBody(code: string, message: string, type = 'invalid_request_error') {
  return { error: { type, code, message, param: null, event_id: null } };
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 404: 'Not Found', 503: 'Service Unavailable' };

/** Answers an upgrade request with a plain HTTP error, as the real API does before the handshake. */
function refuse(socket: Socket, status: number, code: string, message: string, type?: string): void {
  const body = JSON.stringify(errorBody(code, message, type));
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
