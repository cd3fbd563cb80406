/* global window, document, location, AudioContext */
// A page built on the official @openai/agents-realtime (RealtimeSession, WebSocket transport), pointed at the
// gateway by its URL alone. Its backend (the test) hands it a credential: an `ek_` secret, or (mode=api-key)
// an API key offered in a subprotocol, which the gateway must refuse. Results go to window.result.
import { OpenAIRealtimeWebSocket, RealtimeAgent, RealtimeSession } from '@openai/agents-realtime';

const params = new URLSearchParams(location.search);
const result = { connected: false, audioBytes: 0, history: [], errors: [], connectError: null, closed: false };
window.result = result;

/** The microphone (the test's WAV) as 24 kHz PCM16 into session.sendAudio, as a web app would wire it. */
async function streamMicrophone(session) {
  const stream = await navigator.mediaDevices.getUserMedia({
    audio: { channelCount: 1, echoCancellation: false, noiseSuppression: false, autoGainControl: false },
  });
  const audio = new AudioContext({ sampleRate: 24000 });
  const source = audio.createMediaStreamSource(stream);
  const processor = audio.createScriptProcessor(2048, 1, 1);
  processor.onaudioprocess = (e) => {
    const input = e.inputBuffer.getChannelData(0);
    const pcm = new Int16Array(input.length);
    for (let i = 0; i < input.length; i++) pcm[i] = Math.max(-1, Math.min(1, input[i])) * 0x7fff;
    if (result.connected && !result.closed) session.sendAudio(pcm.buffer);
  };
  source.connect(processor);
  processor.connect(audio.destination);
}

async function main() {
  const credential = await (await fetch(`/credential?mode=${params.get('mode')}`, { method: 'POST' })).json();
  const agent = new RealtimeAgent({ name: 'Assistant', instructions: 'Answer briefly.' });
  // useInsecureApiKey lets the SDK put a non-ek_ credential in the subprotocol at all (the refusal page).
  const transport = new OpenAIRealtimeWebSocket({ useInsecureApiKey: params.get('mode') === 'api-key' });
  const session = new RealtimeSession(agent, {
    transport,
    model: credential.model,
    config: { audio: { input: { transcription: { model: 'gpt-4o-mini-transcribe' } } } },
  });
  session.on('audio', (e) => (result.audioBytes += e.data.byteLength));
  session.on('history_updated', (history) => (result.history = history));
  session.on('error', (e) => result.errors.push(String(e.error?.message ?? e.error?.type ?? e.error)));
  transport.on('connection_change', (status) => {
    if (status === 'disconnected') result.closed = true;
  });
  window.endSession = () => session.close();
  try {
    await session.connect({ apiKey: credential.value, url: `${params.get('relay')}?model=${encodeURIComponent(credential.model)}` });
    result.connected = true;
  } catch (err) {
    result.connectError = String(err?.message ?? err);
    return;
  }
  await streamMicrophone(session);
}

main().catch((err) => (result.connectError = String(err?.message ?? err)));
document.title = 'agents-realtime page';
