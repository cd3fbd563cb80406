// The WebRTC end-to-end tests' common steps (decisions.md, "WebRTC"): a key, a session minted with an `ek_`
// secret as a page's backend does, and a call offered to the relay by a werift browser stand-in
// (@s2s/webrtc/testing) with that secret.
import type { Test } from 'tap';
import { CreateKeyResponse, RealtimeClientSecretResponse, type VoiceSession } from '@s2s/contract';
import { eventually } from '@s2s/testing';
import { BrowserPeer } from '@s2s/webrtc/testing';
import { api, type Stack } from './stack.js';

export const CALL_MODEL = 'local/echo-1';

export interface MintedCall {
  key: CreateKeyResponse;
  /** The catalog pricing of CALL_MODEL, for expectedCents. */
  rate: Record<string, number>;
  sessionId: string;
  /** The `ek_` secret. */
  secret: string;
}

/** A key with 1000 cents and a session of CALL_MODEL created through POST /v1/realtime/client_secrets. */
export async function mintCall(stack: Stack): Promise<MintedCall> {
  const key = CreateKeyResponse.parse((await api(stack, 'POST', '/admin/v1/keys', { admin: true, body: { balance_cents: 1000 } })).body);
  const models = await api<{ data: { id: string; pricing: Record<string, number> }[] }>(stack, 'GET', '/v1/models');
  const rate = models.body.data.find((m) => m.id === CALL_MODEL)!.pricing;
  const minted = RealtimeClientSecretResponse.parse(
    (await api(stack, 'POST', '/v1/realtime/client_secrets', { key: key.key, body: { session: { type: 'realtime', model: CALL_MODEL } } }))
      .body,
  );
  return { key, rate, sessionId: minted.session.id, secret: minted.value };
}

/**
 * A browser stand-in POSTs its offer to the relay's /v1/realtime/calls with the secret (and `headers`); on 201 it
 * takes the answer, connects, and waits for `session.created` on `oai-events`. Closed at teardown.
 */
export async function offerCall(
  t: Pick<Test, 'teardown'>,
  stack: Stack,
  secret: string,
  headers: Record<string, string> = {},
): Promise<{ peer: BrowserPeer; status: number; location: string | null }> {
  const peer = new BrowserPeer();
  t.teardown(() => peer.close());
  const res = await fetch(`${relayHttp(stack)}/v1/realtime/calls`, {
    method: 'POST',
    body: await peer.offer(),
    headers: { 'Content-Type': 'application/sdp', Authorization: `Bearer ${secret}`, ...headers },
  });
  const answer = await res.text();
  if (res.status === 201) {
    await peer.accept(answer);
    await peer.connected();
    await eventually(
      () => eventTypes(peer),
      (types) => types.includes('session.created'),
      5000,
    );
  }
  return { peer, status: res.status, location: res.headers.get('location') };
}

/** The relay's HTTP origin: /v1/realtime/calls and its hangup are the relay's (the edge routes them there). */
function relayHttp(stack: Stack): string {
  return stack.relayUrl.replace(/^ws/, 'http').replace(/\/v1\/realtime$/, '');
}

/** POST /v1/realtime/calls/{id}/hangup with the owning API key. */
export function hangUp(stack: Stack, sessionId: string, apiKey: string): Promise<{ status: number; body: VoiceSession }> {
  return api<VoiceSession>({ ...stack, baseUrl: relayHttp(stack) }, 'POST', `/v1/realtime/calls/${sessionId}/hangup`, { key: apiKey });
}

/** The `type` of each event the stand-in received on `oai-events`, in order. */
export function eventTypes(peer: BrowserPeer): string[] {
  return peer.messages.map((m) => (JSON.parse(m) as { type: string }).type);
}
