import type { IncomingMessage, ServerResponse } from 'node:http';
import { CreateRealtimeClientSecretRequest, SESSION_MODE } from '@s2s/contract';
import {
  bearerToken,
  errors,
  isApiKeyShaped,
  isClientSecretShaped,
  newId,
  newTraceId,
  toVoiceSession,
  type SessionRecord,
} from '@s2s/core';
import { isStoreUnavailableError } from '@s2s/db';
import { httpErrorAnswer, isServerError, toAppError } from '@s2s/http-errors';
import { authenticateClientSecret, authenticateKey, createSession, loadOwnedSession, recordAttachment, requestEnd } from '@s2s/sessions';
import { METRIC_ATTRS, RELAY_METRICS, createInstrument, type Logger, type Meter } from '@s2s/telemetry';
import { checkOffer, type WebRtcEndpoint } from '@s2s/webrtc';
import type { WebSocket } from 'ws';
import { CallSocket } from '../codecs/webrtc/call-socket.js';
import type { Config } from '../config.js';
import type { Relay } from '../relay.js';
import { attachable, type AuthorizeContext } from './authorize.js';

export const CALLS_PATH = '/v1/realtime/calls';
const HANGUP_PATH = /^\/v1\/realtime\/calls\/([^/]{1,255})\/hangup$/;
/** An offer is at most 64 KiB; a multipart body adds the session's JSON. */
const MAX_BODY_BYTES = 256 * 1024;

export interface CallsDeps {
  relay: Relay;
  endpoint: WebRtcEndpoint;
  config: Config;
  authCtx: AuthorizeContext;
  logger: Logger;
}

/** True for the paths this module answers. */
export function isCallsPath(path: string): boolean {
  return path === CALLS_PATH || HANGUP_PATH.test(path);
}

/**
 * `POST /v1/realtime/calls` and `POST /v1/realtime/calls/{id}/hangup` (decisions.md, "WebRTC"). Every refusal
 * is an ErrorResponse; nothing is created or reserved before the credential and the offer have been checked.
 */
export async function serveCalls(
  deps: CallsDeps,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  requestId: string,
): Promise<void> {
  const log = deps.logger.child({ request_id: requestId });
  cors(deps.config, req, res);
  if (req.method === 'OPTIONS') {
    res.writeHead(204).end();
    return;
  }
  try {
    if (req.method !== 'POST') throw errors.invalidRequest('Use POST.');
    const hangup = HANGUP_PATH.exec(path);
    if (hangup) return await hangUp(deps, req, res, decodeURIComponent(hangup[1]!));
    await createCall(deps, req, res, requestId, log);
  } catch (err) {
    const appError = toAppError(err, isStoreUnavailableError);
    if (isServerError(appError)) log.error({ err: appError.cause ?? appError }, 'call failed');
    else log.info({ code: appError.code }, 'call refused');
    const answer = httpErrorAnswer(appError, requestId);
    if (res.headersSent) return void res.destroy();
    res.writeHead(answer.status, { ...answer.headers, 'Content-Type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(answer.body));
  }
}

async function createCall(deps: CallsDeps, req: IncomingMessage, res: ServerResponse, requestId: string, log: Logger): Promise<void> {
  const { relay, endpoint, config, authCtx } = deps;
  const token = bearerToken(req.headers.authorization);
  const mediaType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  const body = await readBody(req);

  let offer: string;
  let session: SessionRecord;
  let created = false;
  if (mediaType === 'application/sdp') {
    // A browser's call: the offer alone, with the client secret of a session its backend created.
    if (token === null || !isClientSecretShaped(token)) {
      if (token !== null && isApiKeyShaped(token)) {
        throw errors.invalidRequest('With an API key, send the multipart form with the parts sdp and session.');
      }
      throw errors.invalidClientSecret();
    }
    offer = body.toString('utf8');
    checkOffer(offer);
    const minted = await authenticateClientSecret({ ctx: authCtx, input: { secret: token, now: authCtx.now() } });
    session = await attachable(authCtx, minted.sessionId, minted.keyId);
  } else if (mediaType === 'multipart/form-data') {
    // A backend's call (the openai package's calls.create): the offer and the session to create.
    if (token === null || !isApiKeyShaped(token)) throw errors.invalidKey();
    const key = await authenticateKey({ ctx: authCtx, input: { authorization: req.headers.authorization } });
    const form = await readForm(req.headers['content-type']!, body);
    offer = form.sdp;
    checkOffer(offer);
    const { type: _type, model, ...settings } = form.session;
    ({ session } = await createSession({
      ctx: authCtx,
      input: {
        key,
        request: { model, mode: SESSION_MODE },
        clientSecretSettings: settings,
        traceId: newTraceId(),
        policy: authCtx.sessionPolicy,
      },
    }));
    created = true;
  } else {
    if (token === null) throw errors.invalidKey();
    throw errors.invalidRequest('Send the SDP offer as application/sdp (client secret) or multipart/form-data (API key).');
  }

  const attachmentId = newId('att');
  // The call's span, in the session's trace: the attachment's span is its child.
  const upgrade = relay.telemetry.call(req, session, attachmentId);
  let attached = false;
  try {
    const recorded = await recordAttachment({
      ctx: authCtx,
      input: { sessionId: session.id, attachmentId, relayId: config.RELAY_ID, transport: 'webrtc', dialect: 'openai' },
    });
    if (!recorded) throw errors.sessionExpired();
    attached = true;
    const { sdp, call } = await endpoint.answer(offer);
    upgrade.upgraded(201);
    // A call ends its session when it closes or fails, whatever created the session (decisions.md).
    relay.attach({
      ws: new CallSocket(call, config.REALTIME_MAX_EVENT_BYTES) as unknown as WebSocket,
      upgrade,
      session: { ...session, lastActivityAt: recorded.lastActivityAt },
      attachmentId,
      startedAt: recorded.startedAt,
      prior: recorded.prior,
      legacy: true,
      dialect: 'openai',
      requestId,
    });
    log.info({ session_id: session.id, attachment_id: attachmentId, created }, 'call answered');
    res.writeHead(201, {
      'Content-Type': 'application/sdp',
      Location: `${CALLS_PATH}/${session.id}`,
    });
    res.end(sdp);
  } catch (err) {
    const code = toAppError(err, isStoreUnavailableError).code;
    upgrade.refused(code);
    if (attached) await relay.abandon({ sessionId: session.id, attachmentId, legacy: true }, upgrade.context).catch(() => undefined);
    else if (created) await relay.endLegacy(session.id, upgrade.context);
    throw err;
  }
}

/**
 * The owning API key ends the call's session (client_closed): the end is recorded and announced, so the relay
 * holding the call closes it and billing settles it; answered at once with the session as it now stands
 * (`GET /v1/voice/sessions/{id}` shows the settled bill). A repeat changes nothing.
 */
async function hangUp(deps: CallsDeps, req: IncomingMessage, res: ServerResponse, sessionId: string): Promise<void> {
  const { authCtx, config } = deps;
  const key = await authenticateKey({ ctx: authCtx, input: { authorization: req.headers.authorization } });
  await loadOwnedSession({ ctx: authCtx, input: { sessionId, keyId: key.keyId } });
  await requestEnd({ ctx: authCtx, input: { sessionId, cause: 'client_closed' } });
  const session = await loadOwnedSession({ ctx: authCtx, input: { sessionId, keyId: key.keyId } });
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(toVoiceSession(session, config.REALTIME_PUBLIC_URL)));
}

/** CORS for browsers calling with a client secret (REALTIME_ALLOWED_ORIGINS; unset: any origin). */
function cors(config: Config, req: IncomingMessage, res: ServerResponse): void {
  const origin = req.headers.origin;
  if (origin === undefined) return;
  const allowed = config.REALTIME_ALLOWED_ORIGINS;
  if (allowed !== undefined && allowed !== '*' && !allowed.includes(origin.toLowerCase())) return;
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Vary', 'Origin');
  res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
  res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type, X-OpenAI-Agents-SDK');
  res.setHeader('Access-Control-Expose-Headers', 'Location, X-Request-Id');
  res.setHeader('Access-Control-Max-Age', '600');
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(errors.invalidRequest(`The body is larger than ${MAX_BODY_BYTES} bytes.`));
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** The multipart parts `sdp` and `session` (OpenAI's calls.create), parsed by the platform's form reader. */
async function readForm(
  contentType: string,
  body: Buffer,
): Promise<{ sdp: string; session: CreateRealtimeClientSecretRequest['session'] }> {
  let form: FormData;
  try {
    form = await new Request('http://relay.invalid/', { method: 'POST', headers: { 'content-type': contentType }, body }).formData();
  } catch {
    throw errors.invalidRequest('The multipart body could not be read.');
  }
  const sdp = await partText(form.get('sdp'));
  const sessionText = await partText(form.get('session'));
  if (sdp === undefined) throw errors.invalidRequest('The multipart part sdp (the SDP offer) is required.');
  if (sessionText === undefined) throw errors.invalidRequest('The multipart part session (JSON) is required.');
  let json: unknown;
  try {
    json = JSON.parse(sessionText);
  } catch {
    throw errors.invalidRequest('The part session is not JSON.');
  }
  const parsed = CreateRealtimeClientSecretRequest.shape.session.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw errors.invalidRequest(`Invalid session: check session.${issue.path.join('.')}.`);
  }
  return { sdp, session: parsed.data };
}

async function partText(part: unknown): Promise<string | undefined> {
  if (part === null || part === undefined) return undefined;
  return typeof part === 'string' ? part : await (part as Blob).text();
}

/** The WebRTC series of this relay (docs/observability.md): calls, failures, drops, packets, jitter. */
export function instrumentCalls(meter: Meter, endpoint: WebRtcEndpoint): void {
  const c = endpoint.counters;
  createInstrument(meter, RELAY_METRICS.webrtcCalls).addCallback((r) => {
    r.observe(c.callsAnswered);
    r.observe(c.iceFailures, { [METRIC_ATTRS.webrtcFailure]: 'ice' });
    r.observe(c.dtlsFailures, { [METRIC_ATTRS.webrtcFailure]: 'dtls' });
  });
  createInstrument(meter, RELAY_METRICS.webrtcDatagramsDropped).addCallback((r) => {
    for (const [reason, n] of Object.entries(c.datagramsDropped)) r.observe(n, { [METRIC_ATTRS.webrtcDrop]: reason });
  });
  createInstrument(meter, RELAY_METRICS.webrtcPackets).addCallback((r) => {
    r.observe(c.packetsReceived, { [METRIC_ATTRS.webrtcPackets]: 'received' });
    r.observe(c.packetsLost, { [METRIC_ATTRS.webrtcPackets]: 'lost' });
  });
  const jitter = createInstrument(meter, RELAY_METRICS.webrtcJitter);
  endpoint.onCallEnded = (stats) => {
    if (stats.packetsReceived > 1) jitter.record(stats.jitterMs / 1000);
  };
}
