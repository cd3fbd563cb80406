// The playground's WebRTC link (decisions.md, "WebRTC"): @s2s/client's realtime.call with the `ek_` secret.
// The microphone goes up an Opus track (the browser's echo cancellation and noise suppression, when on, act on
// it), the answer plays from the remote track, and the `oai-events` channel carries the OpenAI dialect's
// events. Once a second the page reads what it sees of the tracks (getStats: jitter, loss, packets).
import { S2SClient, type CallServerEvent, type CallStats } from '@s2s/client';
import type { OpenAiResponseUsage, PlaygroundSecret } from '@s2s/contract';
import type { Usage } from '@s2s/core/money';
import type { VoiceLink, VoiceSettings } from './voice';

export interface CallCallbacks {
  onEvent(event: CallServerEvent): void;
  onStats(stats: CallStats): void;
  onClose(reason: string): void;
}

const STATS_EVERY_MS = 1000;

export async function startCall(opts: {
  secret: PlaygroundSecret;
  settings: VoiceSettings;
  voiceProcessing: boolean;
  callbacks: CallCallbacks;
}): Promise<VoiceLink> {
  const { callbacks, secret, settings } = opts;
  const processing = opts.voiceProcessing;
  const microphone = await navigator.mediaDevices.getUserMedia({
    audio: { channelCount: 1, echoCancellation: processing, noiseSuppression: processing, autoGainControl: processing },
  });
  const stopMicrophone = () => microphone.getTracks().forEach((t) => t.stop());
  let call;
  try {
    call = await new S2SClient({ baseUrl: gatewayBaseUrl(secret.realtime_url) }).realtime.call({ credential: secret.value, microphone });
  } catch (err) {
    stopMicrophone();
    throw err;
  }
  callbacks.onEvent({ type: 'session.created', event_id: '', session: call.session });
  call.on('*', callbacks.onEvent);
  // Before the first turn ends, so that it is transcribed and answered with these settings.
  call.send({
    type: 'session.update',
    session: {
      type: 'realtime',
      ...(settings.instructions ? { instructions: settings.instructions } : {}),
      audio: { input: { transcription: {} }, ...(settings.voice ? { output: { voice: settings.voice } } : {}) },
    },
  });
  const readStats = () => void call.getStats().then(callbacks.onStats, () => undefined);
  const timer = setInterval(readStats, STATS_EVERY_MS);
  void call.ended.then(({ reason }) => {
    clearInterval(timer);
    stopMicrophone();
    callbacks.onClose(reason);
  });
  return {
    stop() {
      // The last figures before the peer connection goes.
      void call
        .getStats()
        .then(callbacks.onStats, () => undefined)
        .finally(() => void call.hangup());
    },
  };
}

/**
 * The gateway's HTTP base URL from the session's realtime URL (one origin: `wss://host/v1/realtime` →
 * `https://host`); `POST /v1/realtime/calls` is beside `/v1/realtime`.
 */
export function gatewayBaseUrl(realtimeUrl: string): string {
  const url = new URL(realtimeUrl);
  const scheme = url.protocol === 'wss:' ? 'https:' : url.protocol === 'ws:' ? 'http:' : url.protocol;
  return `${scheme}//${url.host}${url.pathname.replace(/\/v1\/realtime\/?$/, '')}`;
}

/**
 * The gateway's token counters of an OpenAI-shaped `response.done` usage (the relay's codec writes cached
 * tokens inside the text input tokens). The audio milliseconds are the tracks', and `transcribed_ms` is not
 * in OpenAI's shape: the settled bill has them all.
 */
export function tokenUsage(u: OpenAiResponseUsage): Partial<Usage> {
  const cached = u.input_token_details.cached_tokens;
  return {
    input_audio_tokens: u.input_token_details.audio_tokens,
    input_text_tokens: Math.max(0, u.input_token_details.text_tokens - cached),
    cached_input_tokens: cached,
    output_audio_tokens: u.output_token_details.audio_tokens,
    output_text_tokens: u.output_token_details.text_tokens,
  };
}
