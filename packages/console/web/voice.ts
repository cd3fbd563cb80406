// The playground's realtime link: the microphone through an AudioWorklet (device rate → 24 kHz PCM16), the
// svc-realtime-v1 socket of @s2s/client (in a browser the `ek_` secret travels in a subprotocol), and the
// answer played back through a second worklet (24 kHz → device rate). Every server event goes to `onEvent`.
import { SAMPLE_RATE, connectRealtime, pcmSamples, type ServerEvent } from '@s2s/client';
import type { PlaygroundSecret } from '@s2s/contract';
import { LinearResampler, floatToPcm16, pcm16ToFloat } from './audio';

export interface VoiceCallbacks {
  onEvent(event: ServerEvent): void;
  /** Wire samples sent so far (24 kHz), received so far, and milliseconds actually played. */
  onAudio(progress: { sentSamples: number; receivedSamples: number; playedMs: number }): void;
  onClose(code: number, reason: string): void;
}

export interface VoiceLink {
  stop(): void;
}

/** What the page asks of the session first: instructions, a voice, and input transcription (live transcripts). */
export interface VoiceSettings {
  instructions?: string;
  voice?: string;
}

/** 24 kHz samples per input_audio_buffer.append (40 ms). */
const APPEND_SAMPLES = 960;

export async function startVoice(opts: {
  secret: PlaygroundSecret;
  settings: VoiceSettings;
  voiceProcessing: boolean;
  callbacks: VoiceCallbacks;
}): Promise<VoiceLink> {
  const { callbacks, secret } = opts;
  const processing = opts.voiceProcessing;
  const stream = await navigator.mediaDevices.getUserMedia({
    audio: { channelCount: 1, echoCancellation: processing, noiseSuppression: processing, autoGainControl: processing },
  });
  const audio = new AudioContext();
  const cleanup = () => {
    stream.getTracks().forEach((t) => t.stop());
    void audio.close();
  };
  const url = new URL(secret.realtime_url);
  url.searchParams.set('session_id', secret.session_id);
  let conn: Awaited<ReturnType<typeof connectRealtime>>;
  try {
    await audio.audioWorklet.addModule(new URL('./worklet.js', document.baseURI));
    conn = await connectRealtime(url.href, { credential: secret.value });
  } catch (err) {
    cleanup();
    throw err;
  }
  await audio.resume();
  callbacks.onEvent({ type: 'session.created', event_id: '', session: conn.session });
  conn.on('*', callbacks.onEvent);
  // Before any audio, so that the first turn is transcribed and answered with these settings.
  conn.send({
    type: 'session.update',
    session: {
      ...(opts.settings.instructions ? { instructions: opts.settings.instructions } : {}),
      ...(opts.settings.voice ? { voice: opts.settings.voice } : {}),
      audio: { input: { transcription: {} } },
    },
  });

  const progress = { sentSamples: 0, receivedSamples: 0, playedMs: 0 };
  const report = () => callbacks.onAudio({ ...progress });

  const playback = new AudioWorkletNode(audio, 's2s-playback', { numberOfInputs: 0, numberOfOutputs: 1, outputChannelCount: [1] });
  playback.connect(audio.destination);
  const upsample = new LinearResampler(SAMPLE_RATE, audio.sampleRate);
  playback.port.onmessage = (e: MessageEvent<{ played_frames: number }>) => {
    progress.playedMs += (e.data.played_frames * 1000) / audio.sampleRate;
    report();
  };
  conn.onAudio((pcm) => {
    const samples = pcmSamples(pcm);
    progress.receivedSamples += samples.length;
    const played = upsample.push(pcm16ToFloat(samples));
    playback.port.postMessage(played, [played.buffer]);
    report();
  });
  // Barge-in: the gateway cancels the answer; drop what is queued but not played yet.
  conn.on('input_audio_buffer.speech_started', () => playback.port.postMessage('clear'));

  // The capture node is pulled by the graph only when connected to the destination (through a muted gain).
  const capture = new AudioWorkletNode(audio, 's2s-capture', { numberOfInputs: 1, numberOfOutputs: 1 });
  const mute = audio.createGain();
  mute.gain.value = 0;
  audio.createMediaStreamSource(stream).connect(capture).connect(mute).connect(audio.destination);
  const downsample = new LinearResampler(audio.sampleRate, SAMPLE_RATE);
  let pending: Float32Array[] = [];
  let pendingSamples = 0;
  capture.port.onmessage = (e: MessageEvent<Float32Array>) => {
    if (!conn.isOpen) return;
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
    conn.appendAudio(floatToPcm16(joined), { frameMs: 40 });
    progress.sentSamples += joined.length;
    report();
  };

  void conn.closed.then(({ code, reason }) => {
    cleanup();
    callbacks.onClose(code, reason);
  });
  return {
    stop() {
      void conn.close(1000, 'playground ended');
    },
  };
}
