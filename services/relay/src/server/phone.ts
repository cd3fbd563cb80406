import { CloseCode, TELEPHONY_SECRET_PARAMETER } from '@s2s/contract';
import { isClientSecretShaped } from '@s2s/core';
import type { Logger } from '@s2s/telemetry';
import type { RawData, WebSocket } from 'ws';
import { closeSocket } from '../attachment/client-socket.js';
import type { PhoneWire } from '../codecs/phone/wire.js';

/** Messages a stream may send while its secret is being checked (a few hundred ms of 20 ms media at most). */
const MAX_BUFFERED = 500;

export interface PhoneStartDeps {
  ws: WebSocket;
  wire: PhoneWire;
  log: Logger;
  /** The start's secret must be valid within this long of the upgrade (TELEPHONY_START_TIMEOUT_MS). */
  timeoutMs: number;
  /**
   * Authorizes the secret and attaches its session to this socket (rejects with the refusal: 401 or 410 as
   * an AppError); the socket may have closed meanwhile, which the attach must look at.
   */
  attach(input: { secret: string; streamId: string }): Promise<void>;
}

/**
 * A phone stream between its upgrade and its attachment (decisions.md, "Phone calls"): the provider's
 * `connected`, then `start`, whose custom parameter `client_secret` names the session. Anything else first,
 * no start, a start without a valid secret, or no attachment within the limit closes the socket with 1008
 * (a `stop` first with 1000), and nothing is attached, reserved or billed. Messages that arrive while the
 * secret is checked are handed to the attachment in order.
 */
export function awaitPhoneStart(d: PhoneStartDeps): void {
  const { ws, wire, log } = d;
  let state: 'waiting' | 'authorizing' | 'done' = 'waiting';
  const buffered: [RawData, boolean][] = [];
  const refuse = (code: number, reason: string) => {
    if (state === 'done') return;
    state = 'done';
    clearTimeout(timer);
    ws.off('message', onMessage);
    log.info({ reason }, 'phone stream refused');
    closeSocket(ws, { code, reason });
  };
  const timer = setTimeout(() => refuse(CloseCode.policyViolation, 'no valid client secret in time'), d.timeoutMs);
  timer.unref();

  const onMessage = (data: RawData, isBinary: boolean): void => {
    if (state === 'authorizing') {
      if (buffered.length >= MAX_BUFFERED) return refuse(CloseCode.policyViolation, 'too many messages before the stream was attached');
      buffered.push([data, isBinary]);
      return;
    }
    if (state !== 'waiting') return;
    if (isBinary) return refuse(CloseCode.policyViolation, 'media-stream messages are JSON text');
    const m = wire.parse((data as Buffer).toString());
    if (m.kind === 'connected') return;
    if (m.kind === 'stop') return refuse(CloseCode.sessionEnded, 'stream stopped before it started');
    if (m.kind !== 'start')
      return refuse(CloseCode.policyViolation, `${m.kind === 'invalid' ? 'an invalid message' : m.kind} before start`);
    const secret = m.parameters[TELEPHONY_SECRET_PARAMETER];
    if (secret === undefined || !isClientSecretShaped(secret)) {
      return refuse(CloseCode.policyViolation, `the start carries no ${TELEPHONY_SECRET_PARAMETER} custom parameter`);
    }
    if (m.encoding !== wire.mulaw || m.sampleRate !== 8000) return refuse(CloseCode.policyViolation, 'the stream is not μ-law at 8 kHz');
    state = 'authorizing';
    d.attach({ secret, streamId: m.streamId }).then(
      () => {
        if (state !== 'authorizing') return;
        state = 'done';
        clearTimeout(timer);
        ws.off('message', onMessage);
        // The attachment listens now: what came meanwhile reaches it first, in order.
        for (const [b, binary] of buffered) ws.emit('message', b, binary);
      },
      (err: unknown) => {
        const code = (err as { code?: string }).code;
        refuse(CloseCode.policyViolation, code === 'session_expired' ? 'the session has ended' : 'the client secret is not valid');
      },
    );
  };
  ws.on('message', onMessage);
  ws.on('close', () => {
    clearTimeout(timer);
    if (state === 'waiting') state = 'done';
  });
}
