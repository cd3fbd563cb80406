import type { CallServerEvent, CallStats, ServerEvent } from '@s2s/client';
import type { AdminSession, ApiKeyResource, Model, ModelList, PlaygroundSecret } from '@s2s/contract';
import { USAGE_COUNTERS, ZERO_USAGE, addUsage, billedCents, usageOf, type Usage } from '@s2s/core/money';
import { useEffect, useRef, useState } from 'preact/hooks';
import { admin, request, type Page } from './api';
import { startCall, tokenUsage } from './call';
import { ErrorNote, Field } from './ui';
import { startVoice, type VoiceLink } from './voice';

interface Line {
  who: 'you' | 'model';
  text: string;
}
type Phase = 'idle' | 'connecting' | 'live' | 'settling' | 'settled';
/** How the page talks to the gateway: the svc-realtime-v1 socket, or a WebRTC call (Opus tracks, oai-events). */
type Transport = 'websocket' | 'webrtc';
const VOICES = ['marin', 'cedar', 'alloy', 'ash', 'ballad', 'coral', 'echo', 'sage', 'shimmer', 'verse'];
const LOG_MAX = 300;
const TERMINAL = new Set(['completed', 'cancelled', 'failed', 'expired']);

/**
 * The running usage: every counter of the responses closed so far (response.done), with the session's audio
 * measured as the gateway measures it: whole milliseconds of the bytes sent (in) and received (out).
 */
export function runningUsage(responses: Usage, sentSamples: number, receivedSamples: number): Usage {
  return { ...responses, audio_in_ms: Math.floor(sentSamples / 24), audio_out_ms: Math.floor(receivedSamples / 24) };
}

/** Talk to a catalog model through the microphone; the console's backend mints the `ek_` secret. */
export function PlaygroundPage() {
  const [models, setModels] = useState<Model[]>([]);
  const [keys, setKeys] = useState<ApiKeyResource[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [phase, setPhase] = useState<Phase>('idle');
  const [lines, setLines] = useState<Line[]>([]);
  const [log, setLog] = useState<string[]>([]);
  const [responses, setResponses] = useState<Usage>(ZERO_USAGE);
  const [audio, setAudio] = useState({ sentSamples: 0, receivedSamples: 0, playedMs: 0 });
  const [session, setSession] = useState<{ id: string; keyId: string; model: Model } | null>(null);
  const [settled, setSettled] = useState<AdminSession | null>(null);
  const [transport, setTransport] = useState<Transport>('websocket');
  const [stats, setStats] = useState<CallStats | null>(null);
  const link = useRef<VoiceLink | null>(null);

  useEffect(() => {
    request<ModelList>('GET', '/v1/models')
      .then((l) => setModels(l.data))
      .catch(setError);
    admin
      .get<Page<ApiKeyResource>>('/keys?revoked=false&limit=100')
      .then((p) => setKeys(p.data))
      .catch(setError);
    return () => link.current?.stop();
  }, []);

  const usage = runningUsage(responses, audio.sentSamples, audio.receivedSamples);
  const cost = session ? billedCents(session.model.pricing, usage) : 0;

  function onEvent(e: ServerEvent | CallServerEvent) {
    const detail = e.type === 'error' ? ` ${e.error.code}: ${e.error.message}` : '';
    if (e.type !== 'response.output_audio.delta') setLog((l) => [...l.slice(-(LOG_MAX - 1)), `${e.type}${detail}`]);
    if (e.type === 'conversation.item.input_audio_transcription.completed') {
      setLines((l) => [...l, { who: 'you', text: e.transcript }]);
    } else if (e.type === 'response.output_audio_transcript.done') {
      setLines((l) => [...l, { who: 'model', text: e.transcript }]);
    } else if (e.type === 'response.output_text.done') {
      setLines((l) => [...l, { who: 'model', text: e.text }]);
    } else if (e.type === 'response.done') {
      // A call's events are the OpenAI dialect's: its usage carries the token counters in OpenAI's shape.
      const u = e.response.usage;
      setResponses((r) => addUsage(r, 'total_tokens' in u ? usageOf(tokenUsage(u)) : u));
    }
  }

  async function settle(id: string, keyId: string) {
    setPhase('settling');
    // The session ends with its socket (client_closed); billing settles it moments later.
    for (let i = 0; i < 60; i++) {
      try {
        const page = await admin.get<Page<AdminSession>>(`/sessions?key_id=${encodeURIComponent(keyId)}&limit=20`);
        const s = page.data.find((x) => x.id === id);
        if (s && TERMINAL.has(s.status)) {
          setSettled(s);
          setPhase('settled');
          return;
        }
      } catch (err) {
        setError(err);
        return;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    setError(new Error(`session ${id} is not settled yet; see the Sessions page`));
  }

  async function start(e: SubmitEvent) {
    e.preventDefault();
    const f = new FormData(e.currentTarget as HTMLFormElement);
    const model = models.find((m) => m.id === f.get('model'));
    const keyId = String(f.get('key_id') ?? '');
    if (!model) return;
    const instructions = String(f.get('instructions') ?? '').trim();
    const voice = String(f.get('voice') ?? '').trim();
    const via: Transport = f.get('transport') === 'webrtc' ? 'webrtc' : 'websocket';
    setError(null);
    setLines([]);
    setLog([]);
    setResponses(ZERO_USAGE);
    setAudio({ sentSamples: 0, receivedSamples: 0, playedMs: 0 });
    setSettled(null);
    setStats(null);
    setTransport(via);
    setPhase('connecting');
    try {
      const secret = await request<PlaygroundSecret>('POST', '/console/api/playground/client_secrets', {
        admin: true,
        body: { key_id: keyId, model: model.id, ...(instructions ? { instructions } : {}), ...(voice ? { voice } : {}) },
      });
      setSession({ id: secret.session_id, keyId, model });
      const common = { secret, settings: { instructions, voice }, voiceProcessing: f.get('voice_processing') === 'on' };
      const ended = (what: string) => {
        link.current = null;
        setLog((l) => [...l, what]);
        void settle(secret.session_id, keyId);
      };
      link.current =
        via === 'webrtc'
          ? await startCall({
              ...common,
              callbacks: {
                onEvent,
                onStats: (s) => {
                  setStats(s);
                  // What the tracks carried: 20 ms packets each way (the answer's, counted as they arrived).
                  const received = s.inbound?.packetsReceived ?? 0;
                  setAudio({ sentSamples: (s.outbound?.packetsSent ?? 0) * 480, receivedSamples: received * 480, playedMs: received * 20 });
                },
                onClose: (reason) => ended(`call ended (${reason})`),
              },
            })
          : await startVoice({
              ...common,
              callbacks: {
                onEvent,
                onAudio: setAudio,
                onClose: (code, reason) => ended(`socket closed ${code}${reason ? ` ${reason}` : ''}`),
              },
            });
      setPhase('live');
    } catch (err) {
      setError(err);
      setPhase('idle');
    }
  }

  const busy = phase === 'connecting' || phase === 'live' || phase === 'settling';
  return (
    <section aria-labelledby="playground-title">
      <h2 id="playground-title">Playground</h2>
      <form onSubmit={start} aria-label="Start a conversation">
        <fieldset class="grid">
          <Field label="Model">
            <select name="model" required disabled={busy}>
              {models.map((m) => (
                <option value={m.id} key={m.id}>
                  {m.display_name} ({m.id})
                </option>
              ))}
            </select>
          </Field>
          <Field label="Bill to key" hint="The console's backend mints a client secret with this key; the key never reaches this page.">
            <select name="key_id" required disabled={busy}>
              {keys.map((k) => (
                <option value={k.id} key={k.id}>
                  {k.label ? `${k.label} (${k.id})` : k.id}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Voice">
            <input name="voice" list="voices" defaultValue="marin" disabled={busy} />
          </Field>
        </fieldset>
        <datalist id="voices">
          {VOICES.map((v) => (
            <option value={v} key={v} />
          ))}
        </datalist>
        <Field
          label="Transport"
          hint="WebRTC: the microphone and the answer on Opus tracks, the events on a data channel; the media ends in the relay, metered like a socket."
        >
          <select name="transport" disabled={busy}>
            <option value="websocket">WebSocket (svc-realtime-v1)</option>
            <option value="webrtc">WebRTC (POST /v1/realtime/calls)</option>
          </select>
        </Field>
        <Field label="Instructions">
          <textarea name="instructions" rows={2} disabled={busy} placeholder="You are a helpful assistant." />
        </Field>
        <label>
          <input type="checkbox" role="switch" name="voice_processing" defaultChecked disabled={busy} /> Echo cancellation and noise
          suppression
        </label>
        <button type="submit" disabled={busy || models.length === 0 || keys.length === 0}>
          Start talking
        </button>{' '}
        <button type="button" class="secondary" disabled={phase !== 'live'} onClick={() => link.current?.stop()}>
          End
        </button>
      </form>
      <ErrorNote error={error} />
      <p role="status" data-testid="phase">
        {phase === 'idle' ? 'Not connected.' : null}
        {phase === 'connecting' ? 'Connecting…' : null}
        {phase === 'live'
          ? `Live${transport === 'webrtc' ? ' over WebRTC' : ''}: session ${session?.id}. Speak; the model answers after a pause.`
          : null}
        {phase === 'settling' ? `Ended: settling session ${session?.id}…` : null}
        {phase === 'settled' ? `Settled: session ${settled?.id} is ${settled?.status}.` : null}
      </p>
      <div class="grid">
        <article aria-labelledby="transcript-title">
          <h3 id="transcript-title">Transcript</h3>
          <ol aria-live="polite" data-testid="transcript" class="transcript">
            {lines.map((l, i) => (
              <li key={i} class={l.who}>
                <strong>{l.who === 'you' ? 'You' : 'Model'}:</strong> {l.text}
              </li>
            ))}
          </ol>
        </article>
        <article aria-labelledby="usage-title">
          <h3 id="usage-title">Usage and cost</h3>
          <table aria-label="Usage">
            <tbody>
              <tr>
                <th scope="row">audio sent</th>
                <td data-testid="sent-ms">{Math.floor(audio.sentSamples / 24)} ms</td>
              </tr>
              <tr>
                <th scope="row">answer played</th>
                <td data-testid="played-ms">{Math.floor(audio.playedMs)} ms</td>
              </tr>
              {USAGE_COUNTERS.map((c) => (
                <tr key={c}>
                  <th scope="row">{c}</th>
                  <td>{usage[c]}</td>
                </tr>
              ))}
              <tr>
                <th scope="row">{transport === 'webrtc' ? 'running cost (estimated from the tracks)' : 'running cost'}</th>
                <td data-testid="cost">{cost} cents</td>
              </tr>
              {transport === 'webrtc' && stats?.inbound ? (
                <>
                  <tr>
                    <th scope="row">jitter (answer track)</th>
                    <td data-testid="jitter">{stats.inbound.jitterMs.toFixed(1)} ms</td>
                  </tr>
                  <tr>
                    <th scope="row">loss (answer track)</th>
                    <td data-testid="loss">
                      {stats.inbound.lossPercent.toFixed(1)} % ({stats.inbound.packetsLost} of{' '}
                      {stats.inbound.packetsLost + stats.inbound.packetsReceived} packets)
                    </td>
                  </tr>
                </>
              ) : null}
              {settled ? (
                <tr>
                  <th scope="row">settled bill</th>
                  <td data-testid="settled-bill">{settled.usage.billed_cents} cents</td>
                </tr>
              ) : null}
            </tbody>
          </table>
        </article>
      </div>
      <details open>
        <summary>Event log ({log.length})</summary>
        <ol class="log" data-testid="event-log">
          {log.map((line, i) => (
            <li key={i}>
              <code>{line}</code>
            </li>
          ))}
        </ol>
      </details>
    </section>
  );
}
