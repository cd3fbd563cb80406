// Calls placed all at once (calls-concurrent.test.ts): every offer in flight together, then a spoken turn on each.
import type { BrowserPeer } from '@s2s/webrtc/testing';

/** What one call saw, in ms from the first offer; `error` when it did not get that far. */
export interface CallResult {
  status: number;
  answeredMs?: number;
  createdMs?: number;
  echoPackets?: number;
  stoppedMs?: number;
  error?: string;
  peerState?: string;
}

const SETUP_MS = 15_000;
const TURN_MS = 15_000;

function seen(b: BrowserPeer, type: string): boolean {
  return b.messages.some((m) => (JSON.parse(m) as { type: string }).type === type);
}

async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = performance.now() + ms;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`no ${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Places one call per peer against `callsUrl` (/v1/realtime/calls), all offers at once, and speaks a turn on each. */
export async function placeCalls(callsUrl: string, peers: BrowserPeer[], secrets: string[]): Promise<CallResult[]> {
  const started = performance.now();
  const since = () => Math.round(performance.now() - started);
  return Promise.all(
    peers.map(async (b, i) => {
      const result: CallResult = { status: 0 };
      try {
        const res = await fetch(callsUrl, {
          method: 'POST',
          body: await b.offer(),
          headers: { 'Content-Type': 'application/sdp', Authorization: `Bearer ${secrets[i]}` },
        });
        result.status = res.status;
        result.answeredMs = since();
        const body = await res.text();
        if (res.status !== 201) throw new Error(`answered ${res.status}: ${body}`);
        await b.accept(body);
        await until(() => seen(b, 'session.created'), SETUP_MS, 'session.created');
        result.createdMs = since();
        await b.speak(1000);
        const silence = b.speak(3000, 0);
        await until(() => seen(b, 'output_audio_buffer.stopped'), TURN_MS, 'output_audio_buffer.stopped');
        await silence;
        result.stoppedMs = since();
        result.echoPackets = b.received.length;
      } catch (err) {
        result.error = (err as Error).message;
        result.peerState = `${b.pc.connectionState}/${b.pc.iceConnectionState}`;
      }
      return result;
    }),
  );
}
