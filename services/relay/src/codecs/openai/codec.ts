import {
  OPENAI_REALTIME_SUBPROTOCOL,
  OpenAISessionUpdateEvent,
  type GaAudioFormat,
  REALTIME_ERROR_TYPE,
  type RealtimeSessionSettings,
  type ResponseUsage,
} from '@s2s/contract';
import type {
  InputAudioBufferSpeechStartedEvent,
  InputAudioBufferSpeechStoppedEvent,
  RealtimeAudioConfigInput,
  RealtimeAudioInputTurnDetection,
  RealtimeErrorEvent,
  RealtimeResponseUsage,
  RealtimeSessionCreateRequest,
  ResponseCreatedEvent,
  ResponseDoneEvent,
  SessionCreatedEvent,
  SessionUpdatedEvent,
} from 'openai/resources/realtime/realtime';
import { openAIPrompt, openAITruncation } from '../../providers/openai/protocol.js';
import type { WireDialect } from '../dialect.js';
import type { G711Law } from '@s2s/audio';
import type { AudioFormats, ClientAudioFormat, EffectiveSettings, TurnDetection, VoiceSettings } from '../../agent/types.js';
import { Audio, checkBase64, FormatConverter } from '../../audio.js';
import type { ClientCodec, InternalClientEvent, InternalServerEvent, Refusal } from '../events.js';
import { asciiBytes } from '../../hot/frame-bytes.js';
import {
  decodeFrame,
  eventIdOf,
  formatPath,
  msInt,
  refuse,
  settingsOf,
  SvcRealtimeV1Codec,
  toolChoiceView,
  toolsView,
  turnDetectionView,
  wireParamOf,
} from '../svc-realtime-v1/codec.js';
import { audioDeltaFrame, AudioDeltaHeads } from '../../hot/audio-delta.js';
import { EventIds } from '../../hot/event-ids.js';

/** `","delta":"`: OpenAI's audio member after the event id (svc-realtime-v1 calls it `audio`). */
const DELTA_MEMBER = asciiBytes('","delta":"');

/**
 * The OpenAI-compatible dialect (decisions.md, "The OpenAI-compatible dialect"): OpenAI's GA Realtime wire
 * format, so that unmodified OpenAI clients work. Only what differs from svc-realtime-v1 lives here —
 * session.update and the session object, output audio in `delta`, the error shape, usage in OpenAI's terms;
 * every other event has the same positions in both dialects and goes through the svc codec's functions.
 * Outgoing frames are typed against the official `openai` package (`satisfies`).
 */

const PCM_24K = { type: 'audio/pcm', rate: 24000 } as const;

/** Who the session is: its gateway id and catalog model, which OpenAI's session object names. */
export interface SessionIdentity {
  id: string;
  /** The catalog id (`openai/gpt-realtime`), never the provider's model name. */
  model: string;
}

type GaSession = OpenAISessionUpdateEvent['session'];

export type SessionUpdate = Extract<InternalClientEvent, { type: 'session.update' }>;

/**
 * A GA session (a session.update's, or a client secret's stored settings) as the internal session.update,
 * or the refusal of what the gateway does not offer. `model` and `tracing` change nothing; the current session
 * fields (`reasoning`, `prompt`, `parallel_tool_calls`, `truncation`, `include`) are checked against the
 * model's provider after decoding (decisions.md, "Current OpenAI session fields").
 */
export function gaSessionUpdate(s: RealtimeSessionSettings | GaSession, eventId: string | undefined): SessionUpdate | Refusal {
  const input = s.audio?.input;
  const output = s.audio?.output;
  // The SDKs send speed 1 unasked; another speed is something no provider behind the gateway honours.
  if (output?.speed !== undefined && output.speed !== 1) {
    return refuse('unsupported_parameter', 'Only the default output speed (1) is supported.', eventId, 'session.audio.output.speed');
  }
  const td = input?.turn_detection;
  if (td && td.type === 'server_vad' && td.idle_timeout_ms !== undefined && td.idle_timeout_ms !== null) {
    return refuse(
      'unsupported_parameter',
      'Idle timeouts of turn detection are not supported.',
      eventId,
      'session.audio.input.turn_detection.idle_timeout_ms',
    );
  }
  const update: VoiceSettings = { ...settingsOf(s, output?.voice, td), ...currentFieldsOf(s) };
  const formats: Partial<AudioFormats> = {};
  if (input?.format !== undefined) formats.input = formatOf(input.format);
  if (output?.format !== undefined) formats.output = formatOf(output.format);
  if (formats.input !== undefined || formats.output !== undefined) update.formats = formats;
  return { type: 'session.update', eventId, update };
}

/** A GA format as the client audio format it names. */
function formatOf(f: GaAudioFormat): ClientAudioFormat {
  return f.type === 'audio/pcmu' ? 'pcmu' : f.type === 'audio/pcma' ? 'pcma' : 'pcm16';
}

/** The GA spelling of a client audio format. */
function gaFormat(f: ClientAudioFormat): GaAudioFormat {
  return f === 'pcmu' ? { type: 'audio/pcmu' } : f === 'pcma' ? { type: 'audio/pcma' } : PCM_24K;
}

/** The current OpenAI session fields of a GA session, in the neutral settings' terms. */
function currentFieldsOf(s: RealtimeSessionSettings | GaSession): VoiceSettings {
  const out: VoiceSettings = {};
  if (s.reasoning !== undefined) out.reasoning = s.reasoning.effort !== undefined ? { effort: s.reasoning.effort } : {};
  if (s.prompt !== undefined) {
    out.prompt =
      s.prompt === null
        ? null
        : {
            id: s.prompt.id,
            ...(s.prompt.version !== undefined ? { version: s.prompt.version } : {}),
            ...(s.prompt.variables !== undefined ? { variables: s.prompt.variables } : {}),
          };
  }
  if (s.parallel_tool_calls !== undefined) out.parallelToolCalls = s.parallel_tool_calls;
  const t = s.truncation;
  if (t !== undefined) {
    out.truncation =
      typeof t === 'string'
        ? t
        : {
            type: 'retention_ratio',
            retentionRatio: t.retention_ratio,
            ...(t.token_limits?.post_instructions !== undefined
              ? { tokenLimits: { postInstructions: t.token_limits.post_instructions } }
              : {}),
          };
  }
  if (s.include !== undefined) out.include = [...s.include];
  return out;
}

type ZodIssue = NonNullable<ReturnType<typeof OpenAISessionUpdateEvent.safeParse>['error']>['issues'][number];

/** A refused GA session.update: formats answer invalid_audio_format, unknown fields unsupported_parameter. */
function sessionUpdateRefusal(issues: readonly ZodIssue[], eventId: string | undefined): Refusal {
  for (const issue of issues) {
    const at = formatPath(issue.path);
    const format = /^session\.audio\.(input|output)\.format/.exec(at);
    if (format) {
      return refuse(
        'invalid_audio_format',
        'The audio formats are {"type":"audio/pcm","rate":24000}, {"type":"audio/pcmu"} and {"type":"audio/pcma"}.',
        eventId,
        format[0],
      );
    }
  }
  const first = issues[0]!;
  if (first.code === 'unrecognized_keys' && first.keys.length > 0) {
    const param = formatPath([...first.path, first.keys[0]!]);
    return refuse('unsupported_parameter', `${param} is not supported by this gateway.`, eventId, param);
  }
  // A tool of another kind than `function` (MCP, …): the gateway relays function tools only.
  const tool = /^session\.tools\[\d+\]/.exec(formatPath(first.path));
  if (tool && formatPath(first.path) === `${tool[0]}.type`) {
    return refuse('unsupported_parameter', 'Only function tools are supported.', eventId, tool[0]);
  }
  const param = formatPath(first.path);
  return refuse('invalid_event', `Invalid session.update event: check ${param || 'the event'}.`, eventId, param || undefined);
}

/** Image input is an OpenAI feature the gateway does not offer: named rather than reported as a bad shape. */
function imageInput(msg: Record<string, unknown>): string | null {
  const item = msg.item as { content?: unknown } | undefined;
  if (msg.type !== 'conversation.item.create' || !item || !Array.isArray(item.content)) return null;
  const i = item.content.findIndex((p) => typeof p === 'object' && p !== null && (p as { type?: unknown }).type === 'input_image');
  return i === -1 ? null : `item.content[${i}]`;
}

/** A neutral param in GA positions: the voice and turn detection sit under `session.audio`. */
export function gaParamOf(param: string): string {
  return wireParamOf(param)
    .replace(/^session\.voice/, 'session.audio.output.voice')
    .replace(/^session\.turn_detection/, 'session.audio.input.turn_detection');
}

/**
 * The gateway's counters in OpenAI's usage shape. OpenAI counts cached tokens inside `input_tokens` and
 * inside their modality; the gateway's input counts exclude them and do not split them by modality, so they
 * are reported as text (the cached prefix is instructions and tools first), which the openai adapter's
 * reading (`openAITokens`) turns back into the same counters.
 */
export function gaUsage(u: ResponseUsage): RealtimeResponseUsage {
  const input = u.input_audio_tokens + u.input_text_tokens + u.cached_input_tokens;
  const output = u.output_audio_tokens + u.output_text_tokens;
  return {
    total_tokens: input + output,
    input_tokens: input,
    output_tokens: output,
    input_token_details: {
      audio_tokens: u.input_audio_tokens,
      text_tokens: u.input_text_tokens + u.cached_input_tokens,
      cached_tokens: u.cached_input_tokens,
      cached_tokens_details: { audio_tokens: 0, text_tokens: u.cached_input_tokens },
    },
    output_token_details: { audio_tokens: u.output_audio_tokens, text_tokens: u.output_text_tokens },
  };
}

/** Turn detection as OpenAI reports it: its defaults (a response per turn, speech interrupts) spelled out. */
function gaTurnDetection(td: TurnDetection): RealtimeAudioInputTurnDetection | null {
  const view = turnDetectionView(td);
  if (view === null) return null;
  return { ...view, create_response: view.create_response ?? true, interrupt_response: view.interrupt_response ?? true };
}

/** OpenAI's session object: the request's fields plus the server's id, object and expiry. */
export type GaSessionObject = RealtimeSessionCreateRequest & { id: string; object: 'realtime.session'; expires_at?: number };

/** The OpenAI-shaped session of session.created / session.updated: the effective settings. */
export function gaSessionView(who: SessionIdentity, s: EffectiveSettings): GaSessionObject {
  const input: RealtimeAudioConfigInput = { format: gaFormat(s.formats.input), turn_detection: gaTurnDetection(s.turnDetection) };
  if (s.inputTranscription) input.transcription = { ...s.inputTranscription };
  if (s.noiseReduction) input.noise_reduction = { type: s.noiseReduction.type };
  return {
    type: 'realtime',
    object: 'realtime.session',
    id: who.id,
    model: who.model,
    output_modalities: s.outputModalities,
    instructions: s.instructions,
    tools: toolsView(s.tools),
    tool_choice: toolChoiceView(s.toolChoice),
    max_output_tokens: s.maxOutputTokens,
    audio: { input, output: { format: gaFormat(s.formats.output), ...(s.voice !== null ? { voice: s.voice } : {}) } },
    tracing: null,
    // What takes effect: as set where the provider honours it, else what it does whatever is asked.
    truncation: openAITruncation(s.truncation),
    include: [...s.include],
    ...(s.parallelToolCalls !== null ? { parallel_tool_calls: s.parallelToolCalls } : {}),
    ...(s.reasoning !== null ? { reasoning: { ...s.reasoning } } : {}),
    ...(s.prompt !== null ? { prompt: openAIPrompt(s.prompt) } : {}),
  };
}

/** OpenAI's GA dialect, negotiated on the legacy path when `svc-realtime-v1` is not offered. One per attachment. */
export class OpenAIGaCodec implements ClientCodec {
  readonly protocol = OPENAI_REALTIME_SUBPROTOCOL;
  private readonly ids: EventIds;
  /** Events whose positions are the same in both dialects. */
  private readonly shared: SvcRealtimeV1Codec;
  private readonly heads = new AudioDeltaHeads();
  /**
   * The formats in effect (decisions.md, "Phone audio"), from the confirming session.updated on: appends are
   * read as G.711 and carried as they came, and the attachment hands output in `output` (converted there,
   * where the upstream speaks another format).
   */
  private input: ClientAudioFormat = 'pcm16';
  private output: ClientAudioFormat = 'pcm16';

  constructor(
    private readonly who: SessionIdentity,
    ids: EventIds = new EventIds(),
  ) {
    this.ids = ids;
    this.shared = new SvcRealtimeV1Codec(ids);
  }

  decode(data: Buffer, isBinary: boolean): InternalClientEvent | Refusal {
    if (this.input !== 'pcm16' && !isBinary) {
      const append = g711Append(data, this.input);
      if (append !== null) return append;
    }
    return decodeFrame(data, isBinary, this.own);
  }

  outputFormat(): ClientAudioFormat {
    return this.output;
  }

  /** The formats of the settings just confirmed (session.created, session.updated) take effect. */
  private formats(f: AudioFormats): void {
    this.input = f.input;
    this.output = f.output;
  }

  /** The events whose GA positions differ from svc-realtime-v1's; null for the shared ones. */
  private readonly own = (msg: object): InternalClientEvent | Refusal | null => {
    const type = (msg as { type?: unknown }).type;
    if (type === 'session.update') return this.sessionUpdate(msg);
    // G.711 input_audio parts become PCM16 here, so the shared parsing checks and decodes them as always.
    if (type === 'conversation.item.create' && this.input !== 'pcm16') {
      const bad = g711ItemAudio(msg as Record<string, unknown>, this.input);
      if (bad !== null) return bad;
    }
    const image = type === 'conversation.item.create' ? imageInput(msg as Record<string, unknown>) : null;
    return image === null ? null : refuse('unsupported_parameter', 'Image input is not supported.', eventIdOf(msg), image);
  };

  private sessionUpdate(msg: object): InternalClientEvent | Refusal {
    const eventId = eventIdOf(msg);
    const parsed = OpenAISessionUpdateEvent.safeParse(msg);
    if (!parsed.success) return sessionUpdateRefusal(parsed.error.issues, eventId);
    return gaSessionUpdate(parsed.data.session, eventId);
  }

  encode(e: InternalServerEvent): string | Buffer {
    switch (e.type) {
      case 'response.audio.delta': {
        // svc's head (the same members); OpenAI's audio member is `delta`. Written as bytes, no escaping needed.
        // In the session's output format already (a delta of under 3 samples made into G.711 is empty).
        return audioDeltaFrame(this.heads.of(e.place), this.ids, DELTA_MEMBER, e.audio);
      }
      case 'session.created': {
        this.formats(e.settings.formats);
        const session: GaSessionObject = { ...gaSessionView(this.who, e.settings), expires_at: e.session.expires_at };
        return JSON.stringify({ type: 'session.created', event_id: this.ids.next(), session } satisfies SessionCreatedEvent);
      }
      case 'session.updated':
        this.formats(e.settings.formats);
        return JSON.stringify({
          type: 'session.updated',
          event_id: this.ids.next(),
          session: gaSessionView(this.who, e.settings),
        } satisfies SessionUpdatedEvent);
      case 'speech.started':
        return JSON.stringify({
          type: 'input_audio_buffer.speech_started',
          event_id: this.ids.next(),
          audio_start_ms: msInt(e.audioStartMs),
          item_id: e.itemId ?? '',
        } satisfies InputAudioBufferSpeechStartedEvent);
      case 'speech.stopped':
        return JSON.stringify({
          type: 'input_audio_buffer.speech_stopped',
          event_id: this.ids.next(),
          audio_end_ms: msInt(e.audioEndMs),
          item_id: e.itemId ?? '',
        } satisfies InputAudioBufferSpeechStoppedEvent);
      case 'response.created':
        return JSON.stringify({
          type: 'response.created',
          event_id: this.ids.next(),
          response: { id: e.responseId, object: 'realtime.response', status: 'in_progress', output: [] },
        } satisfies ResponseCreatedEvent);
      case 'response.done':
        return JSON.stringify({
          type: 'response.done',
          event_id: this.ids.next(),
          response: { id: e.responseId, object: 'realtime.response', status: e.status, usage: gaUsage(e.usage) },
        } satisfies ResponseDoneEvent);
      case 'error': {
        const param = e.wireParam ?? (e.param === undefined ? null : gaParamOf(e.param));
        return JSON.stringify({
          type: 'error',
          event_id: this.ids.next(),
          error: { type: REALTIME_ERROR_TYPE[e.code], code: e.code, message: e.message, param, event_id: e.clientEventId ?? null },
        } satisfies RealtimeErrorEvent);
      }
      default:
        return this.shared.encode(e);
    }
  }
}

/** OpenAI's session object names the session and its model: one codec per attachment. */
export const openaiDialect = {
  name: 'openai',
  codecs: () => (session) => new OpenAIGaCodec({ id: session.id, model: session.modelId }),
} as const satisfies WireDialect;
/**
 * A G.711 `input_audio_buffer.append`: any non-empty whole number of bytes of strict base64, carried as it
 * came, in `law` (metered as its real length: 8 bytes of G.711 are one millisecond). null when the frame is
 * another event.
 */
function g711Append(data: Buffer, law: G711Law): InternalClientEvent | Refusal | null {
  let msg: unknown;
  try {
    msg = JSON.parse(data.toString());
  } catch {
    return null;
  }
  if (typeof msg !== 'object' || msg === null || (msg as { type?: unknown }).type !== 'input_audio_buffer.append') return null;
  const ev = msg as Record<string, unknown>;
  const eventId = eventIdOf(ev);
  if (typeof ev.audio !== 'string' || Object.keys(ev).some((k) => k !== 'type' && k !== 'audio' && k !== 'event_id')) {
    return refuse(
      'invalid_event',
      'Invalid input_audio_buffer.append event: expected type, audio (string) and an optional event_id.',
      eventId,
    );
  }
  const bytes = checkBase64(ev.audio);
  if (bytes < 0) return refuse('invalid_audio_format', 'The audio is not valid base64.', eventId, 'audio');
  if (bytes === 0) return refuse('invalid_audio_format', 'The audio frame is empty.', eventId, 'audio');
  return { type: 'audio.append', audio: Audio.ofCheckedBase64(ev.audio, bytes, law), eventId };
}

/** Rewrites the G.711 `input_audio` parts of an item as PCM16 24 kHz; the refusal of one that is not base64. */
function g711ItemAudio(msg: Record<string, unknown>, law: G711Law): Refusal | null {
  const item = msg.item as { content?: unknown } | undefined;
  if (!item || !Array.isArray(item.content)) return null;
  for (const [i, part] of item.content.entries()) {
    const p = part as { type?: unknown; audio?: unknown };
    if (typeof p !== 'object' || p === null || p.type !== 'input_audio' || typeof p.audio !== 'string') continue;
    const bytes = checkBase64(p.audio);
    if (bytes <= 0) {
      const message = bytes < 0 ? 'The audio is not valid base64.' : 'The audio frame is empty.';
      return refuse('invalid_audio_format', message, eventIdOf(msg), `item.content[${i}].audio`);
    }
    // Through the relay's one converter: an item's audio is history, PCM16 inside (the connection's format on the way up).
    p.audio = new FormatConverter().to(Audio.ofCheckedBase64(p.audio, bytes, law), 'pcm16').base64;
  }
  return null;
}
