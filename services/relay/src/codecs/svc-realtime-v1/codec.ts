import {
  AUDIO_FORMAT,
  ClientEvent,
  isSupportedAudioFormat,
  REALTIME_ERROR_TYPE,
  REALTIME_PROTOCOL,
  type ConversationItem as WireItem,
  type RealtimeErrorCode,
  type ResponseUsage,
  type SessionSettingsView,
  type VoiceSession,
} from '@s2s/contract';
import type {
  ContentPart,
  ConversationItem,
  EffectiveSettings,
  FunctionTool,
  NewItem,
  ResponseOptions,
  VoiceSettings,
  ToolChoice,
  TurnDetection,
} from '../../agent/types.js';
import type { Audio } from '../../audio.js';
import { audioDeltaFrame, AudioDeltaHeads } from '../../hot/audio-delta.js';
import { EventIds } from '../../hot/event-ids.js';
import { asciiBytes } from '../../hot/frame-bytes.js';
import type { ResponseStatus } from '../../providers/shared/types.js';
import type { WireDialect } from '../dialect.js';
import type { ClientCodec, InternalClientEvent, InternalServerEvent, OutputPlace, Refusal } from '../events.js';
import { AUDIO_FRAME_MESSAGES, decodePcmFrame, readCompactAppend } from '../pcm-frame.js';

/** Client events other than append, which takes the fast path (see isAppendShape). */
export type ControlEvent = Exclude<ClientEvent, { type: 'input_audio_buffer.append' }>;

const EVENT_ID_MAX = 128;

export function validEventId(id: unknown): string | undefined {
  return typeof id === 'string' && id.length >= 1 && id.length <= EVENT_ID_MAX ? id : undefined;
}

/** The client's event_id of any parsed JSON value, when it carries a valid one. */
export function eventIdOf(msg: unknown): string | undefined {
  return typeof msg === 'object' && msg !== null ? validEventId((msg as { event_id?: unknown }).event_id) : undefined;
}

export function refuse(code: Refusal['code'], message: string, eventId: string | undefined, wireParam?: string): Refusal {
  return wireParam === undefined ? { type: 'refusal', code, message, eventId } : { type: 'refusal', code, message, eventId, wireParam };
}

/** A zod path as a param: `session.tools[2].name`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const k of path) out += typeof k === 'number' ? `[${k}]` : out === '' ? String(k) : `.${String(k)}`;
  return out;
}

type ZodIssue = NonNullable<ReturnType<typeof ClientEvent.safeParse>['error']>['issues'][number];

function issueParam(issue: ZodIssue): string {
  const path = [...issue.path];
  // A discriminated union that matched no option names the discriminator itself.
  if (issue.code === 'invalid_union' && 'discriminator' in issue && typeof issue.discriminator === 'string') path.push(issue.discriminator);
  // An unknown key names that key.
  if (issue.code === 'unrecognized_keys' && issue.keys.length > 0) path.push(issue.keys[0]!);
  return formatPath(path);
}

/**
 * A neutral param (agent/types.ts paths: `session.inputTranscription`, `item.callId`, `itemId`) in this
 * dialect's positions: snake_case, with transcription and noise reduction under `session.audio.input`.
 */
export function wireParamOf(param: string): string {
  const snake = param.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  return snake
    .replace(/^session\.input_transcription/, 'session.audio.input.transcription')
    .replace(/^session\.noise_reduction/, 'session.audio.input.noise_reduction');
}

/**
 * Equivalent of `InputAudioBufferAppendEvent.safeParse(msg).success` for a value whose `type` is already
 * known to be `input_audio_buffer.append`, without zod's allocations on the 50-frames-a-second path.
 * test/codec.test.ts checks the equivalence on generated inputs.
 */
export function isAppendShape(msg: Record<string, unknown>): msg is { type: string; event_id?: string; audio: string } {
  for (const k in msg) if (k !== 'type' && k !== 'event_id' && k !== 'audio') return false;
  const id = msg.event_id;
  if (id !== undefined && validEventId(id) === undefined) return false;
  return typeof msg.audio === 'string';
}

const KNOWN_TYPES = new Set<string>(ClientEvent.options.map((o) => o.shape.type.value));

/** Validates any client event except the append fast path: invalid_event, or invalid_audio_format for formats. */
export function parseControlEvent(msg: unknown): ControlEvent | Refusal {
  const eventId = eventIdOf(msg);
  const type = typeof msg === 'object' && msg !== null ? (msg as { type?: unknown }).type : undefined;
  if (typeof type !== 'string' || !KNOWN_TYPES.has(type)) return refuse('invalid_event', 'Unknown or missing event type.', eventId, 'type');
  const parsed = ClientEvent.safeParse(msg);
  if (!parsed.success) {
    const params = [...new Set(parsed.error.issues.map((i) => issueParam(i) || '(event)'))];
    const first = params[0]!;
    return refuse(
      'invalid_event',
      `Invalid ${type} event: check ${params.slice(0, 5).join(', ')}.`,
      eventId,
      first === '(event)' ? undefined : first,
    );
  }
  const event = parsed.data;
  // Only reached when the caller skipped the fast path; keep one contract for both.
  if (event.type === 'input_audio_buffer.append') return refuse('invalid_event', 'Unexpected append event.', eventId);
  if (event.type === 'session.update') {
    const input = event.session.audio?.input?.format;
    const output = event.session.audio?.output?.format;
    const bad =
      input && !isSupportedAudioFormat(input)
        ? 'session.audio.input.format'
        : output && !isSupportedAudioFormat(output)
          ? 'session.audio.output.format'
          : null;
    if (bad) return refuse('invalid_audio_format', 'Audio formats must be audio/pcm, pcm16le, 24000 Hz, 1 channel.', eventId, bad);
  }
  return event;
}

export function isRefusal(x: { type: string }): x is Refusal {
  return x.type === 'refusal';
}

type WireTool = NonNullable<Extract<ControlEvent, { type: 'session.update' }>['session']['tools']>[number];
type WireToolChoice = NonNullable<Extract<ControlEvent, { type: 'session.update' }>['session']['tool_choice']>;
type WireTurnDetection = Extract<ControlEvent, { type: 'session.update' }>['session']['turn_detection'];

export function toolsOf(tools: WireTool[]): FunctionTool[] {
  return tools.map((t) => ({
    name: t.name,
    ...(t.description !== undefined ? { description: t.description } : {}),
    parameters: t.parameters ?? { type: 'object', properties: {} },
  }));
}

export function toolChoiceOf(c: WireToolChoice): ToolChoice {
  return typeof c === 'string' ? c : { type: 'function', name: c.name };
}

export function turnDetectionOf(td: NonNullable<WireTurnDetection> | null): TurnDetection {
  if (td === null) return null;
  const common = {
    ...(td.create_response !== undefined ? { createResponse: td.create_response } : {}),
    ...(td.interrupt_response !== undefined ? { interruptResponse: td.interrupt_response } : {}),
  };
  if (td.type === 'semantic_vad')
    return { type: 'semantic_vad', ...(td.eagerness !== undefined ? { eagerness: td.eagerness } : {}), ...common };
  return {
    type: 'server_vad',
    ...(td.threshold !== undefined ? { threshold: td.threshold } : {}),
    ...(td.prefix_padding_ms !== undefined ? { prefixPaddingMs: td.prefix_padding_ms } : {}),
    ...(td.silence_duration_ms !== undefined ? { silenceDurationMs: td.silence_duration_ms } : {}),
    ...common,
  };
}

type WireSession = Extract<ControlEvent, { type: 'session.update' }>['session'];

/**
 * A session.update's settings. Both dialects spell them alike except where the voice and turn detection
 * sit, which each passes from its own position.
 */
export function settingsOf(
  s: Omit<WireSession, 'voice' | 'turn_detection'>,
  voice: string | undefined,
  td: WireTurnDetection | undefined,
): VoiceSettings {
  const out: VoiceSettings = {};
  if (voice !== undefined) out.voice = voice;
  if (s.instructions !== undefined) out.instructions = s.instructions;
  if (s.tools !== undefined) out.tools = toolsOf(s.tools);
  if (s.tool_choice !== undefined) out.toolChoice = toolChoiceOf(s.tool_choice);
  if (s.output_modalities !== undefined) out.outputModalities = [...s.output_modalities];
  if (s.max_output_tokens !== undefined) out.maxOutputTokens = s.max_output_tokens;
  if (td !== undefined) out.turnDetection = turnDetectionOf(td);
  const tr = s.audio?.input?.transcription;
  if (tr !== undefined) {
    out.inputTranscription =
      tr === null
        ? null
        : {
            ...(tr.model !== undefined ? { model: tr.model } : {}),
            ...(tr.language !== undefined ? { language: tr.language } : {}),
            ...(tr.prompt !== undefined ? { prompt: tr.prompt } : {}),
          };
  }
  const nr = s.audio?.input?.noise_reduction;
  if (nr !== undefined) out.noiseReduction = nr === null ? null : { type: nr.type };
  return out;
}

function responseOptionsOf(r: Extract<ControlEvent, { type: 'response.create' }>['response']): ResponseOptions | undefined {
  if (r === undefined) return undefined;
  const out: ResponseOptions = {};
  if (r.instructions !== undefined) out.instructions = r.instructions;
  if (r.tools !== undefined) out.tools = toolsOf(r.tools);
  if (r.tool_choice !== undefined) out.toolChoice = toolChoiceOf(r.tool_choice);
  if (r.output_modalities !== undefined) out.outputModalities = [...r.output_modalities];
  if (r.max_output_tokens !== undefined) out.maxOutputTokens = r.max_output_tokens;
  if (r.conversation !== undefined) out.conversation = r.conversation;
  return out;
}

/** A created item; input audio parts are decoded and checked like appended audio. */
function newItemOf(e: Extract<ControlEvent, { type: 'conversation.item.create' }>): NewItem | Refusal {
  const item = e.item;
  if (item.type === 'function_call_output') return { type: 'function_call_output', callId: item.call_id, output: item.output };
  const content: Extract<NewItem, { type: 'message' }>['content'] = [];
  for (const [i, part] of item.content.entries()) {
    if (part.type !== 'input_audio') {
      content.push(part);
      continue;
    }
    const audio = decodePcmFrame(part.audio);
    if (typeof audio === 'string')
      return refuse('invalid_audio_format', AUDIO_FRAME_MESSAGES[audio], e.event_id, `item.content[${i}].audio`);
    content.push({ type: 'input_audio', pcm: audio.pcm });
  }
  return { type: 'message', role: item.role, content };
}

/** The internal event of a validated control event. */
function toInternal(event: ControlEvent): InternalClientEvent | Refusal {
  const eventId = event.event_id;
  switch (event.type) {
    case 'session.update':
      return { type: 'session.update', eventId, update: settingsOf(event.session, event.session.voice, event.session.turn_detection) };
    case 'input_audio_buffer.commit':
      return { type: 'input.commit', eventId };
    case 'input_audio_buffer.clear':
      return { type: 'input.clear', eventId };
    case 'output_audio_buffer.clear':
      return { type: 'output.clear', eventId };
    case 'response.create':
      return { type: 'response.create', eventId, options: responseOptionsOf(event.response) };
    case 'response.cancel':
      return { type: 'response.cancel', eventId };
    case 'conversation.item.create': {
      const item = newItemOf(event);
      if (isRefusal(item)) return item;
      return { type: 'item.create', eventId, item, previousItemId: event.previous_item_id };
    }
    case 'conversation.item.delete':
      return { type: 'item.delete', eventId, itemId: event.item_id };
    case 'conversation.item.retrieve':
      return { type: 'item.retrieve', eventId, itemId: event.item_id };
    case 'conversation.item.truncate':
      return { type: 'item.truncate', eventId, itemId: event.item_id, contentIndex: event.content_index, audioEndMs: event.audio_end_ms };
  }
}

/**
 * One client frame into the internal model, for every dialect: the append fast paths, then `own` (the
 * dialect's events whose positions differ: OpenAI's session.update), then every other event of the model,
 * whose positions both dialects share.
 */
export function decodeFrame(
  data: Buffer,
  isBinary: boolean,
  own?: (msg: object) => InternalClientEvent | Refusal | null,
): InternalClientEvent | Refusal {
  if (isBinary) return refuse('invalid_event', 'Events are JSON text frames.', undefined);
  const fast = readCompactAppend(data);
  if (fast !== null && (fast.eventId === undefined || validEventId(fast.eventId) !== undefined)) {
    return { type: 'audio.append', audio: fast.audio, eventId: fast.eventId };
  }
  let msg: unknown;
  try {
    msg = JSON.parse(data.toString());
  } catch {
    return refuse('invalid_event', 'The event is not valid JSON.', undefined);
  }
  if (typeof msg === 'object' && msg !== null && (msg as { type?: unknown }).type === 'input_audio_buffer.append') {
    const ev = msg as Record<string, unknown>;
    if (!isAppendShape(ev)) {
      return refuse(
        'invalid_event',
        'Invalid input_audio_buffer.append event: expected type, audio (string) and an optional event_id.',
        eventIdOf(ev),
        typeof ev.audio === 'string' ? undefined : 'audio',
      );
    }
    const audio = decodePcmFrame(ev.audio);
    if (typeof audio === 'string') return refuse('invalid_audio_format', AUDIO_FRAME_MESSAGES[audio], ev.event_id, 'audio');
    return { type: 'audio.append', audio, eventId: ev.event_id };
  }
  if (own !== undefined && typeof msg === 'object' && msg !== null) {
    const mine = own(msg);
    if (mine !== null) return mine;
  }
  const event = parseControlEvent(msg);
  return isRefusal(event) ? event : toInternal(event);
}

/** Function tools as both dialects write them. */
export function toolsView(tools: readonly FunctionTool[]) {
  return tools.map((t) => ({
    type: 'function' as const,
    name: t.name,
    ...(t.description !== undefined ? { description: t.description } : {}),
    parameters: t.parameters,
  }));
}

export function toolChoiceView(c: ToolChoice): 'auto' | 'none' | 'required' | { type: 'function'; name: string } {
  return typeof c === 'string' ? c : { type: 'function', name: c.name };
}

/** The effective settings in session.update's positions. */
export function settingsView(s: EffectiveSettings): SessionSettingsView {
  return {
    voice: s.voice,
    turn_detection: turnDetectionView(s.turnDetection),
    audio: {
      input: {
        format: AUDIO_FORMAT,
        transcription: s.inputTranscription && { ...s.inputTranscription },
        noise_reduction: s.noiseReduction && { type: s.noiseReduction.type },
      },
      output: { format: AUDIO_FORMAT },
    },
    instructions: s.instructions,
    tools: toolsView(s.tools),
    tool_choice: toolChoiceView(s.toolChoice),
    output_modalities: s.outputModalities,
    max_output_tokens: s.maxOutputTokens,
  };
}

export function turnDetectionView(td: TurnDetection): SessionSettingsView['turn_detection'] {
  if (td === null) return null;
  const common = {
    ...(td.createResponse !== undefined ? { create_response: td.createResponse } : {}),
    ...(td.interruptResponse !== undefined ? { interrupt_response: td.interruptResponse } : {}),
  };
  if (td.type === 'semantic_vad')
    return { type: 'semantic_vad', ...(td.eagerness !== undefined ? { eagerness: td.eagerness } : {}), ...common };
  return {
    type: 'server_vad',
    ...(td.threshold !== undefined ? { threshold: td.threshold } : {}),
    ...(td.prefixPaddingMs !== undefined ? { prefix_padding_ms: td.prefixPaddingMs } : {}),
    ...(td.silenceDurationMs !== undefined ? { silence_duration_ms: td.silenceDurationMs } : {}),
    ...common,
  };
}

/** An item as the client sees it. */
export function itemView(item: ConversationItem): WireItem {
  switch (item.type) {
    case 'message':
      return {
        id: item.id,
        object: 'realtime.item',
        type: 'message',
        role: item.role,
        status: item.status,
        content: item.content.map((p) => ({ ...p })),
      };
    case 'function_call':
      return {
        id: item.id,
        object: 'realtime.item',
        type: 'function_call',
        status: item.status,
        call_id: item.callId,
        name: item.name,
        arguments: item.arguments,
      };
    case 'function_call_output':
      return {
        id: item.id,
        object: 'realtime.item',
        type: 'function_call_output',
        status: item.status,
        call_id: item.callId,
        output: item.output,
      };
  }
}

/** A response content part in OpenAI GA's names (`text`, `audio`). */
export function partView(part: ContentPart): { type: 'text'; text: string } | { type: 'audio'; transcript: string } {
  return part.type === 'output_text' || part.type === 'input_text'
    ? { type: 'text', text: part.text }
    : { type: 'audio', transcript: part.transcript ?? '' };
}

export function place(p: OutputPlace): { response_id: string; item_id: string; output_index: number; content_index: number } {
  return { response_id: p.responseId, item_id: p.itemId, output_index: p.outputIndex, content_index: p.contentIndex };
}

// Server events. JSON.stringify for the rare ones; the output delta is written as bytes (its id and base64
// need no escaping; the head is made once per place) and handed to ws as one Buffer: a string would be
// written by a writev that encodes it on every frame.

export const serverEvents = {
  sessionCreated: (eventId: string, session: VoiceSession) => JSON.stringify({ type: 'session.created', event_id: eventId, session }),
  conversationCreated: (eventId: string, conversationId: string) =>
    JSON.stringify({
      type: 'conversation.created',
      event_id: eventId,
      conversation: { id: conversationId, object: 'realtime.conversation' },
    }),
  speechStarted: (eventId: string, audioStartMs: number) =>
    JSON.stringify({ type: 'input_audio_buffer.speech_started', event_id: eventId, audio_start_ms: audioStartMs }),
  speechStopped: (eventId: string, audioEndMs: number) =>
    JSON.stringify({ type: 'input_audio_buffer.speech_stopped', event_id: eventId, audio_end_ms: audioEndMs }),
  responseCreated: (eventId: string, responseId: string) =>
    JSON.stringify({ type: 'response.created', event_id: eventId, response: { id: responseId, status: 'in_progress' } }),
  /** `head`: `{"type":"response.output_audio.delta",` + the place members + `,"event_id":"` (see AudioDeltaHeads). */
  audioDelta: (eventId: string, head: Buffer, audio: Audio): Buffer => audioDeltaFrame(head, eventId, AUDIO_MEMBER, audio),
  audioDone: (eventId: string, p: OutputPlace) => JSON.stringify({ type: 'response.output_audio.done', event_id: eventId, ...place(p) }),
  responseDone: (eventId: string, responseId: string, status: ResponseStatus, usage: ResponseUsage) =>
    JSON.stringify({
      type: 'response.done',
      event_id: eventId,
      response: {
        id: responseId,
        status,
        usage: {
          audio_in_ms: usage.audio_in_ms,
          audio_out_ms: usage.audio_out_ms,
          input_audio_tokens: usage.input_audio_tokens,
          input_text_tokens: usage.input_text_tokens,
          cached_input_tokens: usage.cached_input_tokens,
          output_audio_tokens: usage.output_audio_tokens,
          output_text_tokens: usage.output_text_tokens,
          transcribed_ms: usage.transcribed_ms,
        },
      },
    }),
  error: (eventId: string, code: RealtimeErrorCode, message: string, clientEventId?: string, param?: string) =>
    JSON.stringify({
      type: 'error',
      event_id: eventId,
      error: {
        type: REALTIME_ERROR_TYPE[code],
        code,
        message,
        ...(param === undefined ? {} : { param }),
        ...(clientEventId === undefined ? {} : { event_id: clientEventId }),
      },
    }),
};

/** `","audio":"`: the member that follows the event id in svc-realtime-v1's delta. */
const AUDIO_MEMBER = asciiBytes('","audio":"');

export function msInt(ms: number): number {
  return Number.isFinite(ms) && ms > 0 ? Math.round(ms) : 0;
}

/** The gateway's own dialect (api-v1 §4, decisions.md "Realtime"), negotiated as `svc-realtime-v1`. */
export class SvcRealtimeV1Codec implements ClientCodec {
  readonly protocol = REALTIME_PROTOCOL;
  private readonly heads = new AudioDeltaHeads();

  constructor(private readonly ids: EventIds = new EventIds()) {}

  decode(data: Buffer, isBinary: boolean): InternalClientEvent | Refusal {
    return decodeFrame(data, isBinary);
  }

  encode(e: InternalServerEvent): string | Buffer {
    if (e.type === 'response.audio.delta') return audioDeltaFrame(this.heads.of(e.place), this.ids, AUDIO_MEMBER, e.audio);
    const id = this.ids.next();
    switch (e.type) {
      case 'session.created':
        return serverEvents.sessionCreated(id, e.session);
      case 'session.updated':
        return JSON.stringify({ type: 'session.updated', event_id: id, session: settingsView(e.settings) });
      case 'conversation.created':
        return serverEvents.conversationCreated(id, e.conversationId);
      case 'speech.started':
        return serverEvents.speechStarted(id, msInt(e.audioStartMs));
      case 'speech.stopped':
        return serverEvents.speechStopped(id, msInt(e.audioEndMs));
      case 'input.committed':
        return JSON.stringify({
          type: 'input_audio_buffer.committed',
          event_id: id,
          item_id: e.itemId,
          previous_item_id: e.previousItemId,
        });
      case 'input.cleared':
        return JSON.stringify({ type: 'input_audio_buffer.cleared', event_id: id });
      case 'item.added':
      case 'item.done':
        return JSON.stringify({
          type: e.type === 'item.added' ? 'conversation.item.added' : 'conversation.item.done',
          event_id: id,
          previous_item_id: e.previousItemId,
          item: itemView(e.item),
        });
      case 'item.retrieved':
        return JSON.stringify({ type: 'conversation.item.retrieved', event_id: id, item: itemView(e.item) });
      case 'item.deleted':
        return JSON.stringify({ type: 'conversation.item.deleted', event_id: id, item_id: e.itemId });
      case 'item.truncated':
        return JSON.stringify({
          type: 'conversation.item.truncated',
          event_id: id,
          item_id: e.itemId,
          content_index: e.contentIndex,
          audio_end_ms: msInt(e.audioEndMs),
        });
      case 'transcript.delta':
        return JSON.stringify({
          type: 'conversation.item.input_audio_transcription.delta',
          event_id: id,
          item_id: e.itemId,
          content_index: e.contentIndex,
          delta: e.delta,
        });
      case 'transcript.completed':
        return JSON.stringify({
          type: 'conversation.item.input_audio_transcription.completed',
          event_id: id,
          item_id: e.itemId,
          content_index: e.contentIndex,
          transcript: e.transcript,
        });
      case 'transcript.failed':
        return JSON.stringify({
          type: 'conversation.item.input_audio_transcription.failed',
          event_id: id,
          item_id: e.itemId,
          content_index: e.contentIndex,
          error: { type: 'transcription_error', code: 'transcription_failed', message: e.message },
        });
      case 'response.created':
        return serverEvents.responseCreated(id, e.responseId);
      case 'output_item.added':
      case 'output_item.done':
        return JSON.stringify({
          type: e.type === 'output_item.added' ? 'response.output_item.added' : 'response.output_item.done',
          event_id: id,
          response_id: e.responseId,
          output_index: e.outputIndex,
          item: itemView(e.item),
        });
      case 'content_part.added':
      case 'content_part.done':
        return JSON.stringify({
          type: e.type === 'content_part.added' ? 'response.content_part.added' : 'response.content_part.done',
          event_id: id,
          ...place(e),
          part: partView(e.part),
        });
      case 'text.delta':
        return JSON.stringify({ type: 'response.output_text.delta', event_id: id, ...place(e), delta: e.delta });
      case 'text.done':
        return JSON.stringify({ type: 'response.output_text.done', event_id: id, ...place(e), text: e.text });
      case 'audio_transcript.delta':
        return JSON.stringify({ type: 'response.output_audio_transcript.delta', event_id: id, ...place(e), delta: e.delta });
      case 'audio_transcript.done':
        return JSON.stringify({ type: 'response.output_audio_transcript.done', event_id: id, ...place(e), transcript: e.transcript });
      case 'call_arguments.delta':
        return JSON.stringify({
          type: 'response.function_call_arguments.delta',
          event_id: id,
          response_id: e.responseId,
          item_id: e.itemId,
          output_index: e.outputIndex,
          call_id: e.callId,
          delta: e.delta,
        });
      case 'call_arguments.done':
        return JSON.stringify({
          type: 'response.function_call_arguments.done',
          event_id: id,
          response_id: e.responseId,
          item_id: e.itemId,
          output_index: e.outputIndex,
          call_id: e.callId,
          name: e.name,
          arguments: e.arguments,
        });
      case 'response.audio.done':
        return serverEvents.audioDone(id, e);
      case 'response.done':
        return serverEvents.responseDone(id, e.responseId, e.status, e.usage);
      case 'error':
        return serverEvents.error(
          id,
          e.code,
          e.message,
          e.clientEventId,
          e.wireParam ?? (e.param === undefined ? undefined : wireParamOf(e.param)),
        );
    }
  }
}

/** No per-session state: one codec serves every attachment of the process. */
export const svcRealtimeV1Dialect = {
  name: 'svc-realtime-v1',
  codecs: () => {
    const codec = new SvcRealtimeV1Codec();
    return () => codec;
  },
} as const satisfies WireDialect;
