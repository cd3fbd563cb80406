/* global window, location */
// A page that calls the gateway over WebRTC with @s2s/client (its browser entry): its backend (the test) mints
// an `ek_` secret; the microphone (the test's WAV) goes up the track; events, stats and the hangup are read by
// the test through window.result, window.poll and window.hangup.
import { S2SClient } from '@s2s/client';

const params = new URLSearchParams(location.search);
const result = { callId: null, session: null, connectError: null, events: [], transcripts: [], errors: [], ended: null, stats: null };
window.result = result;

async function main() {
  const credential = await (await fetch('/credential', { method: 'POST' })).json();
  const microphone = await navigator.mediaDevices.getUserMedia({
    audio: { channelCount: 1, echoCancellation: false, noiseSuppression: false, autoGainControl: false },
  });
  const client = new S2SClient({ baseUrl: params.get('gateway') });
  let call;
  try {
    call = await client.realtime.call({ credential: credential.value, microphone, validate: true });
  } catch (err) {
    result.connectError = `${err?.name}: ${err?.message ?? err}`;
    return;
  }
  result.callId = call.callId;
  result.session = { type: call.session.type, model: call.session.model, instructions: call.session.instructions ?? null };
  call.on('*', (e) => result.events.push(e.type));
  // A client event up the channel, answered on it: the effective settings.
  result.updated = (await call.updateSession({ instructions: 'Answer in one breath.' })).instructions ?? null;
  call.on('error', (e) => result.errors.push(`${e.error.code}: ${e.error.message}`));
  call.on('response.output_audio_transcript.done', (e) => result.transcripts.push(e.transcript));
  void call.ended.then((end) => (result.ended = end.reason));
  window.poll = async () => {
    result.stats = await call.getStats();
    result.remoteTrack = call.remoteTrack ? call.remoteTrack.kind : null;
    result.connection = call.peerConnection.connectionState;
    return result;
  };
  window.hangup = async () => (await call.hangup()).reason;
}

main().catch((err) => (result.connectError = String(err?.message ?? err)));
