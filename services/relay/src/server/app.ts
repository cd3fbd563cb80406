import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { errors, newId, sessionPolicyOf } from '@s2s/core';
import { isStoreUnavailableError } from '@s2s/db';
import { injectConnection } from '@s2s/handoff';
import {
  answerParserRefusals,
  SERVER_KEEP_ALIVE_MS,
  httpErrorAnswer,
  isServerError,
  newRequestId,
  pathOf,
  toAppError,
  writeRawError,
} from '@s2s/http-errors';
import { activeTraceId, context, contextLogFields, spansRecorded, type Logger } from '@s2s/telemetry';
import {
  CONTROL_SOCKET_QUERY,
  TELEPHONY_PATHS,
  TELEPHONY_START_TIMEOUT_MS,
  TELNYX_SIGNATURE_HEADER,
  TELNYX_TIMESTAMP_HEADER,
  TWILIO_SIGNATURE_HEADER,
} from '@s2s/contract';
import { WebSocketServer, type WebSocket } from 'ws';
import { authorizeAttach, authorizeClientSecret, type AttachTarget } from './authorize.js';
import { awaitPhoneStart } from './phone.js';
import type { PhoneWire } from '../codecs/phone/wire.js';
import { checkTelnyxSignature, checkTwilioSignature, telnyxPublicKey } from '../codecs/phone/signatures.js';
import { telnyxWire } from '../codecs/telnyx/wire.js';
import { twilioWire } from '../codecs/twilio/wire.js';
import type { Config } from '../config.js';
import { checkOrigin, negotiate } from './handshake.js';
import { recordAttachment } from '@s2s/sessions';
import { Relay, type RelayDeps } from '../relay.js';
import type { UpgradeTelemetry } from '../telemetry.js';
import { holdWsFrameOptions } from '../hot/ws-frame-options.js';
import type { WebRtcEndpoint } from '@s2s/webrtc';
import { instrumentCalls, isCallsPath, serveCalls } from './calls.js';

export interface RelayAppDeps extends RelayDeps {
  /** Wall clock for expiry decisions; tests move it. */
  now?: () => Date;
  /** WebRTC media termination (POST /v1/realtime/calls); without it those paths answer 404. */
  webrtc?: WebRtcEndpoint;
}

export interface RelayApp {
  server: http.Server;
  relay: Relay;
  /**
   * Serves a connection the npm-start edge accepted and handed over (@s2s/handoff), `request` being what the
   * edge read of it: resolves once the request is answered (101 or an ErrorResponse) or the client left.
   */
  adopt(socket: Socket, request: Buffer): Promise<void>;
  /** Stops accepting, gives every socket its final checkpoint and 1012, closes the server. */
  close(): Promise<void>;
}

const REALTIME_PATH = '/v1/realtime';
const KEY_REGEX = /^[+/0-9A-Za-z]{22}==$/;
const MAX_ID_LENGTH = 255;

/**
 * The relay's HTTP server: `GET /v1/realtime` upgrades after every check has passed (refusals are plain
 * HTTP ErrorResponses), `/healthz` and `/readyz` for probes. The WebSocket server runs in noServer mode so
 * that nothing is upgraded before authentication, ownership and session checks.
 */
export function buildRelay(deps: RelayAppDeps): RelayApp {
  const { config, logger } = deps;
  const now = deps.now ?? (() => new Date());
  // Before any socket sends: keeps the shape of ws's frame options across idle-time GCs (see the module).
  holdWsFrameOptions();
  const relay = new Relay(deps);
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: config.REALTIME_MAX_EVENT_BYTES,
    perMessageDeflate: false,
    clientTracking: false,
    // The protocol negotiate() chose for this request; false sends none (a client that offered nothing).
    handleProtocols: (_offered, req) => negotiatedProtocols.get(req) ?? false,
  });
  const upgradeHeaders = new WeakMap<IncomingMessage, string[]>();
  const negotiatedProtocols = new WeakMap<IncomingMessage, string>();
  wss.on('headers', (headers, req) => headers.push(...(upgradeHeaders.get(req) ?? [])));
  const authCtx = {
    db: deps.db,
    bus: deps.bus,
    log: logger,
    sessionPolicy: sessionPolicyOf(config),
    now,
  };

  if (deps.webrtc) instrumentCalls(deps.metrics.meter, deps.webrtc);
  const server = http.createServer((req, res) => handleRequest(req, res));
  // The edge keeps idle connections for less time (PROXY_IDLE_MS), so it never reuses one this server is closing.
  server.keepAliveTimeout = SERVER_KEEP_ALIVE_MS;
  // Connections handed over by the edge, each with what to call once its request is answered.
  const adopted = new WeakMap<Duplex, () => void>();
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const answered = handleUpgrade(req, socket, head);
    const settle = adopted.get(socket);
    if (settle) void answered.finally(settle);
  });
  // Node's parser refused the request: the answer every server gives; a connection handed over is settled first.
  answerParserRefusals(server, logger, (socket) => adopted.get(socket)?.());

  function handleRequest(req: IncomingMessage, res: ServerResponse): void {
    const requestId = newRequestId();
    const path = pathOf(req.url);
    res.setHeader('X-Request-Id', requestId);
    res.setHeader('Cache-Control', 'no-store');
    if (path === '/metrics') return deps.metrics.handler(req, res);
    if (path === '/healthz' || path === '/readyz') {
      const draining = relay.draining;
      const status = path === '/readyz' && draining ? 503 : 200;
      res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ status: draining ? 'draining' : path === '/readyz' ? 'ready' : 'ok' }));
      return;
    }
    if (deps.webrtc && isCallsPath(path)) {
      void serveCalls(
        { relay, endpoint: deps.webrtc, config, authCtx: { ...authCtx, traceId: () => undefined }, logger },
        req,
        res,
        path,
        requestId,
      );
      return;
    }
    const err = path === REALTIME_PATH ? errors.invalidRequest('This endpoint accepts WebSocket upgrades only.') : errors.notFound();
    const answer = httpErrorAnswer(err, requestId);
    res.writeHead(answer.status, { ...answer.headers, 'Content-Type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(answer.body));
  }

  /**
   * The upgrade's checks run inside its context only when spans are recorded (pg's spans then nest under it;
   * pg's instrumentation is loaded only then). Otherwise its context is passed where it is needed: on Node 20
   * the first AsyncLocalStorage `run` turns on async hooks for the life of the process (a cost on every promise,
   * nextTick and socket write of every frame after it), so this relay never enters one.
   */
  function handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const upgrade = relay.telemetry.upgrade(req);
    return spansRecorded()
      ? context.with(upgrade.context, () => upgradeIn(req, socket, head, upgrade))
      : upgradeIn(req, socket, head, upgrade);
  }

  async function upgradeIn(req: IncomingMessage, socket: Duplex, head: Buffer, upgrade: UpgradeTelemetry): Promise<void> {
    const requestId = newRequestId();
    // The upgrade span's ids, which the logger's mixin adds where its context is active.
    const log = logger.child({ request_id: requestId, ...(spansRecorded() ? {} : contextLogFields(upgrade.context)) });
    socket.on('error', () => socket.destroy());
    let attached: { sessionId: string; attachmentId: string; legacy: boolean } | null = null;
    let legacySessionId: string | null = null;
    try {
      const target = checkHandshake(req);
      checkOrigin(req.headers.origin, config.REALTIME_ALLOWED_ORIGINS);
      if ('callId' in target) return await upgradeControl(req, socket, head, target.callId, requestId, log, upgrade);
      if ('phone' in target) return upgradePhone(req, socket, head, target.phone, requestId, log, upgrade);
      const negotiated = negotiate({
        offered: req.headers['sec-websocket-protocol'],
        authorization: req.headers.authorization,
        legacyPath: 'model' in target,
      });
      if (relay.draining) throw draining();
      const { session, legacy: created } = await authorizeAttach({
        // A legacy session is created in the upgrade's trace.
        ctx: { ...authCtx, traceId: () => activeTraceId(upgrade.context) },
        input: { credential: negotiated.credential, target },
      });
      if (created) legacySessionId = session.id;
      // The legacy alias's sessions and those minted by POST /v1/realtime/client_secrets end with their socket.
      const legacy = created || session.endsWithSocket;
      const attachmentId = newId('att');
      const recorded = await recordAttachment({
        ctx: deps,
        input: { sessionId: session.id, attachmentId, relayId: config.RELAY_ID, transport: 'websocket', dialect: negotiated.dialect },
      });
      if (!recorded) throw errors.sessionExpired();
      attached = { sessionId: session.id, attachmentId, legacy };
      upgrade.session(session.id, attachmentId);

      if (relay.draining) throw draining();
      upgradeHeaders.set(req, [`X-Request-Id: ${requestId}`, ...('model' in target ? ['Deprecation: true'] : [])]);
      if (negotiated.protocol !== null) negotiatedProtocols.set(req, negotiated.protocol);
      let ws: WebSocket | undefined;
      // Synchronous when it succeeds; a socket that closed meanwhile is destroyed without the callback.
      wss.handleUpgrade(req, socket, head, (w) => {
        ws = w;
      });
      if (!ws) {
        log.info({ session_id: session.id }, 'client left before the upgrade');
        upgrade.refused('client_closed');
        await relay.abandon(attached, upgrade.context);
        return;
      }
      upgrade.upgraded();
      relay.attach({
        ws,
        upgrade,
        session: { ...session, lastActivityAt: recorded.lastActivityAt },
        attachmentId,
        startedAt: recorded.startedAt,
        prior: recorded.prior,
        legacy,
        dialect: negotiated.dialect,
        requestId,
      });
      log.info(
        {
          session_id: session.id,
          attachment_id: attachmentId,
          legacy,
          dialect: negotiated.dialect,
          credential: negotiated.credential.kind,
        },
        'attached',
      );
    } catch (err) {
      const appError = toAppError(err, isStoreUnavailableError);
      if (isServerError(appError)) log.error({ err: appError.cause ?? appError }, 'attach failed');
      else log.info({ code: appError.code }, 'attach refused');
      upgrade.refused(appError.code, httpErrorAnswer(appError, requestId).status);
      // Whatever this request already created is released: the attachment row, a legacy session.
      if (attached) await relay.abandon(attached, upgrade.context).catch(() => {});
      else if (legacySessionId) await relay.endLegacy(legacySessionId, upgrade.context);
      writeRawError(socket, appError, requestId);
    }
  }

  /**
   * A control socket (`?call_id=`, decisions.md, "Control sockets"): the OpenAI dialect, the owning API key
   * only (an `ek_` secret cannot open one), refused before the upgrade like an attach (401, 404, 410). It
   * records no attachment: the media attachment stays, and the session does not end when it closes.
   */
  async function upgradeControl(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    callId: string,
    requestId: string,
    log: Logger,
    upgrade: UpgradeTelemetry,
  ): Promise<void> {
    const negotiated = negotiate({
      offered: req.headers['sec-websocket-protocol'],
      authorization: req.headers.authorization,
      legacyPath: true,
    });
    if (negotiated.credential.kind !== 'api_key') throw errors.invalidKey();
    if (relay.draining) throw draining();
    const { session } = await authorizeAttach({
      ctx: { ...authCtx, traceId: () => activeTraceId(upgrade.context) },
      input: { credential: negotiated.credential, target: { sessionId: callId } },
    });
    upgradeHeaders.set(req, [`X-Request-Id: ${requestId}`]);
    if (negotiated.dialect === 'openai' && negotiated.protocol !== null) negotiatedProtocols.set(req, negotiated.protocol);
    let ws: WebSocket | undefined;
    wss.handleUpgrade(req, socket, head, (w) => {
      ws = w;
    });
    if (!ws) return upgrade.refused('client_closed');
    upgrade.upgraded();
    relay.openControl({ ws, sessionId: session.id, log: log.child({ session_id: session.id }) });
    log.info({ session_id: session.id }, 'control socket opened');
  }

  /**
   * A phone stream (`GET /v1/telephony/twilio`, `/telnyx`; decisions.md, "Phone calls"): the provider's
   * signature is checked before the upgrade when its secret is configured (403); the session is known only
   * from the start message's client secret, after the upgrade (server/phone.ts).
   */
  function upgradePhone(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    phone: PhoneDialect,
    requestId: string,
    log: Logger,
    upgrade: UpgradeTelemetry,
  ): void {
    if (!phoneSignatureValid(req, phone.dialect, config, now())) throw errors.invalidSignature();
    if (relay.draining) throw draining();
    upgradeHeaders.set(req, [`X-Request-Id: ${requestId}`]);
    let ws: WebSocket | undefined;
    wss.handleUpgrade(req, socket, head, (w) => {
      ws = w;
    });
    if (!ws) return upgrade.refused('client_closed');
    upgrade.upgraded();
    const stream = ws;
    const streamLog = log.child({ dialect: phone.dialect });
    awaitPhoneStart({
      ws: stream,
      wire: phone.wire,
      log: streamLog,
      timeoutMs: TELEPHONY_START_TIMEOUT_MS,
      attach: async ({ secret, streamId }) => {
        const session = await authorizeClientSecret({ ctx: authCtx, input: { secret } });
        const attachmentId = newId('att');
        const recorded = await recordAttachment({
          ctx: deps,
          input: { sessionId: session.id, attachmentId, relayId: config.RELAY_ID, transport: phone.dialect, dialect: phone.dialect },
        });
        if (!recorded) throw errors.sessionExpired();
        upgrade.session(session.id, attachmentId);
        // A phone call ends with its stream: the session is ended (client_closed) when the socket closes.
        const attached = { sessionId: session.id, attachmentId, legacy: true };
        if (stream.readyState !== stream.OPEN) return relay.abandon(attached, upgrade.context);
        relay.attach({
          ws: stream,
          upgrade,
          session: { ...session, lastActivityAt: recorded.lastActivityAt },
          attachmentId,
          startedAt: recorded.startedAt,
          prior: recorded.prior,
          legacy: true,
          dialect: phone.dialect,
          streamId,
          requestId,
        });
        streamLog.info({ session_id: session.id, attachment_id: attachmentId }, 'phone stream attached');
      },
    });
  }

  relay.start();
  let closing: Promise<void> | null = null;
  return {
    server,
    relay,
    adopt: (socket, request) =>
      new Promise<void>((resolve) => {
        adopted.set(socket, resolve);
        socket.once('close', () => resolve());
        injectConnection(server, socket, request);
      }),
    close() {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        await relay.drain();
        server.closeAllConnections();
        await closed;
      })();
      return closing;
    },
  };
}

/** The checks ws would make, made first so that a bad handshake creates no attachment; plus ours. */
function checkHandshake(req: IncomingMessage): AttachTarget | { callId: string } | { phone: PhoneDialect } {
  const url = new URL(req.url ?? '/', 'http://relay.invalid');
  const phone = PHONE_DIALECTS.find((p) => TELEPHONY_PATHS[p.dialect] === url.pathname);
  if (url.pathname !== REALTIME_PATH && phone === undefined) throw errors.notFound();
  if (req.method !== 'GET') throw errors.invalidRequest('Use GET to attach.');
  if (req.headers.upgrade?.toLowerCase() !== 'websocket') throw errors.invalidRequest('A WebSocket upgrade is required.');
  const key = req.headers['sec-websocket-key'];
  const version = Number(req.headers['sec-websocket-version']);
  if (key === undefined || !KEY_REGEX.test(key) || (version !== 13 && version !== 8)) {
    throw errors.invalidRequest('The WebSocket handshake headers are invalid.');
  }
  if (phone !== undefined) return { phone };
  // Transcription-only sessions (OpenAI's `?intent=transcription`) are not offered yet (decisions.md).
  const intent = url.searchParams.get('intent');
  if (intent !== null) {
    throw errors.invalidRequest(
      `The query parameter intent=${intent.slice(0, 32)} is not supported: transcription sessions are not offered yet.`,
    );
  }
  const sessionId = url.searchParams.get('session_id');
  const model = url.searchParams.get('model');
  const callId = url.searchParams.get(CONTROL_SOCKET_QUERY);
  if (callId !== null) {
    if (sessionId !== null || model !== null) throw errors.invalidRequest('Give call_id alone.');
    if (callId.length === 0 || callId.length > MAX_ID_LENGTH || callId.includes('\u0000')) throw errors.sessionNotFound();
    return { callId };
  }
  if (sessionId !== null && model !== null) throw errors.invalidRequest('Give either session_id or model, not both.');
  let target: AttachTarget;
  // An id that can never exist is simply not found (decisions.md); the store would refuse a NUL byte.
  if (sessionId !== null && (sessionId.length > MAX_ID_LENGTH || sessionId.includes('\u0000'))) throw errors.sessionNotFound();
  if (sessionId !== null && sessionId.length > 0) target = { sessionId };
  else if (model !== null && model.length > 0 && sessionId === null) target = { model };
  else throw errors.invalidRequest('The query parameter session_id is required.');
  return target;
}

interface PhoneDialect {
  dialect: 'twilio' | 'telnyx';
  wire: PhoneWire;
}
const PHONE_DIALECTS: readonly PhoneDialect[] = [
  { dialect: 'twilio', wire: twilioWire },
  { dialect: 'telnyx', wire: telnyxWire },
];

/** The provider's signature of the upgrade, when its secret is configured (none configured: any stream passes). */
function phoneSignatureValid(req: IncomingMessage, dialect: PhoneDialect['dialect'], config: Config, now: Date): boolean {
  const { TWILIO_AUTH_TOKEN: twilioAuthToken, TELNYX_PUBLIC_KEY: telnyxPublicKey } = config;
  if (dialect === 'twilio') {
    if (twilioAuthToken === undefined) return true;
    // The URL as the application wrote it in its TwiML: the public origin's, or the Host this request names.
    const origin = new URL(config.REALTIME_PUBLIC_URL).origin.replace(/^http/, 'ws');
    const urls = [`${origin}${req.url ?? ''}`, `wss://${req.headers.host ?? ''}${req.url ?? ''}`];
    return checkTwilioSignature({ authToken: twilioAuthToken, signature: headerOf(req, TWILIO_SIGNATURE_HEADER), urls });
  }
  if (telnyxPublicKey === undefined) return true;
  const key = telnyxPublicKey === undefined ? null : telnyxKey(telnyxPublicKey);
  if (key === null) return false;
  return checkTelnyxSignature({
    publicKey: key,
    signature: headerOf(req, TELNYX_SIGNATURE_HEADER),
    timestamp: headerOf(req, TELNYX_TIMESTAMP_HEADER),
    nowMs: now.getTime(),
  });
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

const telnyxKeys = new Map<string, ReturnType<typeof telnyxPublicKey>>();
function telnyxKey(base64: string): ReturnType<typeof telnyxPublicKey> {
  if (!telnyxKeys.has(base64)) telnyxKeys.set(base64, telnyxPublicKey(base64));
  return telnyxKeys.get(base64) ?? null;
}

const draining = () => errors.serviceUnavailable(undefined, 'This relay is shutting down; attach again.');
