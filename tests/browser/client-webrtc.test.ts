// Issue 27 in a real browser with the gateway's own SDK: a page bundles @s2s/client (its browser entry, no Node
// import) and opens a WebRTC call through the edge of the stack with an `ek_` secret its backend minted. The
// microphone (a WAV) goes up the Opus track; the test asserts the spoken answer on the remote track (Chromium's
// RTP statistics, read through the client's getStats, with jitter and loss), the events on `oai-events` (checked
// against the contract's schema in the page), the hangup ending the session, and the bill to the cent.
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { build } from 'esbuild';
import type { VoiceSession } from '@s2s/contract';
import type { CallStats } from '@s2s/client';
import { eventually } from '@s2s/testing';
import { expectedCents } from '../e2e/bill.js';
import { api, expectCharged } from '../e2e/stack.js';
import { launchChromium, skipWithoutChromium, speechWav } from './chromium.js';
import { startWebRtcApp } from './webrtc-app.js';

const MODEL = 'local/echo-1';

interface PageResult {
  callId: string | null;
  session: { type: string; model: string; instructions: string | null } | null;
  updated: string | null;
  connectError: string | null;
  events: string[];
  transcripts: string[];
  errors: string[];
  ended: string | null;
  stats: CallStats | null;
  remoteTrack: string | null;
  connection: string;
}

t.test('@s2s/client opens a WebRTC call in Chromium, through the edge', { skip: skipWithoutChromium() }, async (t) => {
  const bundle = await build({
    entryPoints: [fileURLToPath(new URL('./pages/client-call.js', import.meta.url))],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    // The workspace's sources, as the console bundles them; platform "browser" picks the client's browser entry.
    conditions: ['@s2s/source'],
    logLevel: 'error',
  });
  const script = bundle.outputFiles[0]!.text;
  t.notMatch(script, /from\s*["']ws["']|require\(["']ws["']\)/, 'the browser bundle has no `ws` (no Node import)');

  const { origin, stack, edge, key, rate, sessionId } = await startWebRtcApp(t, {
    model: MODEL,
    files: {
      '/call.html': {
        type: 'text/html',
        body: '<!doctype html><meta charset="utf-8"><script type="module" src="/call.js"></script>',
      },
      '/call.js': { type: 'text/javascript', body: script },
    },
  });

  // The speech starts 3 s after the microphone opens, so a call slow to connect on a loaded machine still hears it.
  const browser = await launchChromium(t, { microphoneWav: speechWav({ rate: 48_000, leadMs: 3000, speechMs: 1000, tailMs: 6000 }) });
  const page = await browser.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(`${origin}/call.html?gateway=${encodeURIComponent(edge.origin)}`);
  const poll = () => page.evaluate<PageResult>('window.poll ? window.poll() : window.result');

  const opened = await eventually(poll, (r) => r.connectError !== null || r.callId !== null, 20_000);
  t.equal(opened.connectError, null, 'the call opened with the ek_ secret');
  t.equal(opened.callId, sessionId(), "the call's id (from Location) is its voice session's");
  t.same(opened.session, { type: 'realtime', model: MODEL, instructions: 'Answer briefly.' }, 'session.created: the OpenAI-shaped session');

  const updated = await eventually(poll, (r) => r.updated !== undefined, 10_000);
  t.equal(updated.updated, 'Answer in one breath.', 'updateSession over the channel resolves with session.updated');

  // The answer: the local provider echoes the turn; its audio comes down the remote track.
  const heard = await eventually(poll, (r) => (r.stats?.inbound?.packetsReceived ?? 0) >= 40, 30_000);
  t.equal(heard.remoteTrack, 'audio', 'the remote audio track is exposed');
  t.equal(heard.connection, 'connected');
  const inbound = heard.stats!.inbound!;
  t.ok(inbound.totalSamplesReceived > 0, `the answer played on the remote track (${inbound.packetsReceived} packets so far)`);
  t.ok(Number.isFinite(inbound.jitterMs) && inbound.jitterMs >= 0 && inbound.jitterMs < 200, `jitter ${inbound.jitterMs} ms`);
  t.ok(inbound.lossPercent >= 0 && inbound.lossPercent < 5, `loss ${inbound.lossPercent}% on loopback`);
  t.ok((heard.stats!.outbound?.packetsSent ?? 0) > 0, 'the microphone went up the track');

  // The events of the answer on `oai-events`, each checked against the contract's schema in the page.
  const answered = await eventually(poll, (r) => r.events.includes('output_audio_buffer.stopped') || r.ended !== null, 30_000);
  t.equal(answered.ended, null, 'the call is still up');
  for (const type of ['input_audio_buffer.speech_started', 'response.created', 'output_audio_buffer.started', 'response.done']) {
    t.ok(answered.events.includes(type), `${type} arrived`);
  }
  t.ok(answered.events.includes('output_audio_buffer.stopped'), 'output_audio_buffer.stopped once the answer played');
  t.match(answered.transcripts, [/^speech \d+ ms$/], 'the spoken answer transcribed');
  t.same(answered.errors, [], 'no error event');
  const spokenMs = Number(/^speech (\d+) ms$/.exec(answered.transcripts[0] ?? '')?.[1] ?? 0);

  // The page hangs up: the gateway ends the session (client_closed → completed) and billing settles it.
  t.equal(await page.evaluate<string>('window.hangup()'), 'hangup');
  const settled = await eventually(
    () => api<VoiceSession>(stack, 'GET', `/v1/voice/sessions/${sessionId()}`, { key: key.key }),
    (r) => r.body.status === 'completed' && r.body.billing.reserved_cents === 0,
    20_000,
  );
  t.equal(settled.body.status, 'completed', 'the hangup ended the session; billing settled it');
  const usage = settled.body.usage;
  t.ok(usage.audio_in_ms > 1000, `audio_in_ms ${usage.audio_in_ms}: what the relay decoded from the track`);
  t.equal(usage.audio_out_ms, spokenMs, 'audio_out_ms: the echoed answer');
  const cents = expectedCents(rate, usage);
  t.equal(usage.billed_cents, cents, `billed to the cent (${cents})`);
  await expectCharged(t, stack, key.wallet_id, 1000, cents);
  t.same(pageErrors, []);
});
