// The playground's realtime link: the microphone through an AudioWorklet (device rate → 24 kHz PCM16), the
// svc-realtime-v1 WebSocket authenticated by an `ek_` secret in a subprotocol, and the answer played back
// through a second worklet (24 kHz → device rate). Everything the gateway sends is handed to `onEvent`.
import type { PlaygroundSecret } from '@s2s/contract';
import { LinearResampler, WIRE_RATE, base64ToPcm16, floatToPcm16, pcm16ToBase64, pcm16ToFloat } from './audio';

/** A server event as the page reads it (the contract's ServerEvent, loosely: the log shows any type). */
export interface WireEvent {
  type: string;
  [field: string]: unknown;
}

export interface VoiceCallbacks {
  onEvent(event: WireEvent): void;
  /** Wire samples sent so far (24 kHz), received so far, and milliseconds actually played. */
  onAudio(progress: { sentSamples: number; receivedSamples: number; playedMs: number }): void;
  onClose(code: number, reason: string): void;
}

export interface VoiceLink {
  stop(): void;
}

/** Samples of 24 kHz audio per input_audio_buffer.append (40 ms). */
const APPEND_SAMPLES = 960;

function openSocket(secret: PlaygroundSecret): Promise<WebSocket> {
  const url = new URL(secret.realtime_url);
  url.searchParams.set('session_id', secret.session_id);
  // A browser WebSocket cannot set Authorization: the secret travels as a subprotocol, never echoed back.
  const ws = new WebSocket(url, ['svc-realtime-v1', `svc-realtime-v1.auth.${secret.value}`]);
  return new Promise((resolve, reject) => {
    ws.onopen = () => resolve(ws);
    ws.onerror = () => reject(new Error(`WebSocket to ${url.origin}${url.pathname} failed`));
  });
}

/** What the page asks of the session first: instructions, a voice, and input transcription (live transcripts). */
export interface VoiceSettings {
  instructions?: string;
  voice?: string;
}

export async function startVoice(opts: {
  secret: PlaygroundSecret;
  settings: VoiceSettings;
  voiceProcessing: boolean;
  callbacks: VoiceCallbacks;
}): Promise<VoiceLink> {
  const { callbacks } = opts;
  const processing = opts.voiceProcessing;
  const stream = await navigator.mediaDevices.getUserMedia({
    audio: { channelCount: 1, echoCancellation: processing, noiseSuppression: processing, autoGainControl: processing },
  });
  const audio = new AudioContext();
  const cleanup = () => {
    stream.getTracks().forEach((t) => t.stop());
    void audio.close();
  };
  let ws: WebSocket;
  try {
    await audio.audioWorklet.addModule(new URL('./worklet.js', document.baseURI));
    ws = await openSocket(opts.secret);
  } catch (err) {
    cleanup();
    throw err;
  }
  await audio.resume();
  // Before any audio, so that the first turn is transcribed and answered with these settings.
  ws.send(
    JSON.stringify({
      type: 'session.update',
      session: {
        ...(opts.settings.instructions ? { instructions: opts.settings.instructions } : {}),
        ...(opts.settings.voice ? { voice: opts.settings.voice } : {}),
        audio: { input: { transcription: {} } },
      },
    }),
  );

  const progress = { sentSamples: 0, receivedSamples: 0, playedMs: 0 };
  const report = () => callbacks.onAudio({ ...progress });

  const playback = new AudioWorkletNode(audio, 's2s-playback', { numberOfInputs: 0, numberOfOutputs: 1, outputChannelCount: [1] });
  playback.connect(audio.destination);
  const upsample = new LinearResampler(WIRE_RATE, audio.sampleRate);
  playback.port.onmessage = (e: MessageEvent<{ played_frames: number }>) => {
    progress.playedMs += (e.data.played_frames * 1000) / audio.sampleRate;
    report();
  };

  // The capture node is pulled by the graph only when connected to the destination (through a muted gain).
  const capture = new AudioWorkletNode(audio, 's2s-capture', { numberOfInputs: 1, numberOfOutputs: 1 });
  const mute = audio.createGain();
  mute.gain.value = 0;
  audio.createMediaStreamSource(stream).connect(capture).connect(mute).connect(audio.destination);
  const downsample = new LinearResampler(audio.sampleRate, WIRE_RATE);
  let pending: Float32Array[] = [];
  let pendingSamples = 0;
  capture.port.onmessage = (e: MessageEvent<Float32Array>) => {
    if (ws.readyState !== WebSocket.OPEN) return;
    const chunk = downsample.push(e.data);
    pending.push(chunk);
    pendingSamples += chunk.length;
    if (pendingSamples < APPEND_SAMPLES) return;
    const joined = new Float32Array(pendingSamples);
    let at = 0;
    for (const c of pending) {
      joined.set(c, at);
      at += c.length;
    }
    pending = [];
    pendingSamples = 0;
    ws.send(JSON.stringify({ type: 'input_audio_buffer.append', audio: pcm16ToBase64(floatToPcm16(joined)) }));
    progress.sentSamples += joined.length;
    report();
  };

  ws.onmessage = (e: MessageEvent<string>) => {
    const event = JSON.parse(e.data) as WireEvent;
    if (event.type === 'response.output_audio.delta' && typeof event.audio === 'string') {
      const samples = base64ToPcm16(event.audio);
      progress.receivedSamples += samples.length;
      const played = upsample.push(pcm16ToFloat(samples));
      playback.port.postMessage(played, [played.buffer]);
      report();
    } else if (event.type === 'input_audio_buffer.speech_started') {
      // Barge-in: the gateway cancels the answer; drop what is queued but not played yet.
      playback.port.postMessage('clear');
    }
    callbacks.onEvent(event);
  };
  ws.onclose = (e) => {
    cleanup();
    callbacks.onClose(e.code, e.reason);
  };

  return {
    stop() {
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close(1000, 'playground ended');
      else cleanup();
    },
  };
}
