import type {
  ConversationItemCreateEvent,
  RealtimeAudioConfigInput,
  RealtimeAudioFormats,
  RealtimeAudioInputTurnDetection,
  RealtimeFunctionTool,
  RealtimeResponseCreateParams,
  RealtimeSessionCreateRequest,
  ResponseCreateEvent,
  RealtimeTruncation,
  SessionUpdateEvent,
} from 'openai/resources/realtime/realtime';
import type { ResponsePrompt } from 'openai/resources/responses/responses';
import {
  ZERO_TOKENS,
  type ContentPart,
  type FunctionTool,
  type ItemBody,
  type ItemStatus,
  type NewItem,
  type PromptReference,
  type ResponseOptions,
  type Truncation,
  type VoiceSettings,
  type TokenReport,
  type ToolChoice,
  type TurnDetection,
  type AudioFormats,
} from '../../agent/types.js';
import type { AudioFormat } from '../../audio.js';

/**
 * The neutral voice-agent model (agent/types.ts) in OpenAI Realtime GA terms, both ways. Outgoing frames are
 * checked against the official `openai` package's types (`satisfies`), so they cannot drift from the vendor's.
 */

export const OPENAI_VOICES: ReadonlySet<string> = new Set([
  'alloy',
  'ash',
  'ballad',
  'coral',
  'echo',
  'sage',
  'shimmer',
  'verse',
  'marin',
  'cedar',
]);
export const OPENAI_DEFAULT_VOICE = 'alloy';
/** Transcribers the API knows; any other name (or none) gets the default (decisions.md, OpenAI dialect). */
export const OPENAI_TRANSCRIBERS: ReadonlySet<string> = new Set(['whisper-1', 'gpt-4o-transcribe', 'gpt-4o-mini-transcribe']);
export const OPENAI_DEFAULT_TRANSCRIBER = 'gpt-4o-mini-transcribe';
const PCM_24K = { type: 'audio/pcm', rate: 24000 } as const;

/** PCM16 both ways: a connection's formats unless it speaks G.711 (ProviderBase chooses them). */
export const PCM16_FORMATS: Readonly<AudioFormats> = Object.freeze({ input: 'pcm16', output: 'pcm16' });

/** A connection's audio format in GA terms. */
export function openAIFormat(f: AudioFormat): RealtimeAudioFormats {
  return f === 'pcmu' ? { type: 'audio/pcmu' } : f === 'pcma' ? { type: 'audio/pcma' } : PCM_24K;
}

/** Maps a requested voice to one the API knows; anything else gets the default (decisions.md, Realtime). */
export function openAIVoice(voice: string | undefined): string {
  return voice && OPENAI_VOICES.has(voice) ? voice : OPENAI_DEFAULT_VOICE;
}

function turnDetection(td: TurnDetection): RealtimeAudioInputTurnDetection | null {
  if (td === null) return null;
  if (td.type === 'semantic_vad') {
    return {
      type: 'semantic_vad',
      ...(td.eagerness !== undefined ? { eagerness: td.eagerness } : {}),
      ...(td.createResponse !== undefined ? { create_response: td.createResponse } : {}),
      ...(td.interruptResponse !== undefined ? { interrupt_response: td.interruptResponse } : {}),
    } satisfies RealtimeAudioInputTurnDetection.SemanticVad;
  }
  return {
    type: 'server_vad',
    ...(td.threshold !== undefined ? { threshold: td.threshold } : {}),
    ...(td.prefixPaddingMs !== undefined ? { prefix_padding_ms: td.prefixPaddingMs } : {}),
    ...(td.silenceDurationMs !== undefined ? { silence_duration_ms: td.silenceDurationMs } : {}),
    ...(td.createResponse !== undefined ? { create_response: td.createResponse } : {}),
    ...(td.interruptResponse !== undefined ? { interrupt_response: td.interruptResponse } : {}),
  } satisfies RealtimeAudioInputTurnDetection.ServerVad;
}

function tools(list: FunctionTool[]): RealtimeFunctionTool[] {
  return list.map((tool) => ({
    type: 'function',
    name: tool.name,
    ...(tool.description !== undefined ? { description: tool.description } : {}),
    parameters: tool.parameters,
  }));
}

function toolChoice(choice: ToolChoice): NonNullable<RealtimeSessionCreateRequest['tool_choice']> {
  return typeof choice === 'string' ? choice : { type: 'function', name: choice.name };
}

/** A stored prompt reference in OpenAI's terms. */
export function openAIPrompt(p: PromptReference): ResponsePrompt {
  return {
    id: p.id,
    ...(p.version !== undefined ? { version: p.version } : {}),
    ...(p.variables !== undefined ? { variables: p.variables as ResponsePrompt['variables'] } : {}),
  } satisfies ResponsePrompt;
}

/** Truncation in OpenAI's terms. */
export function openAITruncation(t: Truncation): RealtimeTruncation {
  if (typeof t === 'string') return t;
  return {
    type: 'retention_ratio',
    retention_ratio: t.retentionRatio,
    ...(t.tokenLimits?.postInstructions !== undefined ? { token_limits: { post_instructions: t.tokenLimits.postInstructions } } : {}),
  } satisfies RealtimeTruncation;
}

/**
 * The GA `session.update`. `initial`: the opening configuration (formats, server VAD and a voice always set,
 * so the upstream never starts on its own defaults); otherwise only the fields `settings` names change.
 * `formats`: the connection's, restated in every update (never the client's, which `settings` may carry).
 */
export function openAISessionUpdate(
  settings: VoiceSettings,
  initial: boolean,
  eventId?: string,
  formats: Readonly<AudioFormats> = PCM16_FORMATS,
): SessionUpdateEvent {
  const input: RealtimeAudioConfigInput = { format: openAIFormat(formats.input) };
  if (settings.turnDetection !== undefined) input.turn_detection = turnDetection(settings.turnDetection);
  else if (initial) input.turn_detection = { type: 'server_vad' };
  if (settings.inputTranscription !== undefined) {
    const tr = settings.inputTranscription;
    // The GA API has no "off" for transcription inside audio.input: null clears it.
    (input as { transcription?: unknown }).transcription =
      tr === null
        ? null
        : {
            model: tr.model !== undefined && OPENAI_TRANSCRIBERS.has(tr.model) ? tr.model : OPENAI_DEFAULT_TRANSCRIBER,
            ...(tr.language !== undefined ? { language: tr.language } : {}),
            ...(tr.prompt !== undefined ? { prompt: tr.prompt } : {}),
          };
  }
  if (settings.noiseReduction !== undefined) {
    (input as { noise_reduction?: unknown }).noise_reduction =
      settings.noiseReduction === null ? null : { type: settings.noiseReduction.type };
  }
  const output: NonNullable<NonNullable<RealtimeSessionCreateRequest['audio']>['output']> = { format: openAIFormat(formats.output) };
  if (initial || settings.voice !== undefined) output.voice = openAIVoice(settings.voice);
  const session: RealtimeSessionCreateRequest = { type: 'realtime', audio: { input, output } };
  if (initial || settings.outputModalities !== undefined) session.output_modalities = settings.outputModalities ?? ['audio'];
  if (settings.instructions !== undefined) session.instructions = settings.instructions;
  if (settings.tools !== undefined) session.tools = tools(settings.tools);
  if (settings.toolChoice !== undefined) session.tool_choice = toolChoice(settings.toolChoice);
  if (settings.maxOutputTokens !== undefined) session.max_output_tokens = settings.maxOutputTokens;
  // The current session fields, in OpenAI's own terms (the relay passes only what this provider honours).
  if (settings.reasoning !== undefined) session.reasoning = settings.reasoning ?? {};
  if (settings.prompt !== undefined) session.prompt = settings.prompt && openAIPrompt(settings.prompt);
  if (settings.parallelToolCalls !== undefined) session.parallel_tool_calls = settings.parallelToolCalls;
  if (settings.truncation !== undefined) session.truncation = openAITruncation(settings.truncation);
  if (settings.include !== undefined) session.include = [...settings.include];
  return { type: 'session.update', ...(eventId !== undefined ? { event_id: eventId } : {}), session };
}

export function openAIResponseCreate(options: ResponseOptions | undefined, eventId?: string): ResponseCreateEvent {
  const event: ResponseCreateEvent = { type: 'response.create', ...(eventId !== undefined ? { event_id: eventId } : {}) };
  if (!options) return event;
  const response: RealtimeResponseCreateParams = {};
  if (options.instructions !== undefined) response.instructions = options.instructions;
  if (options.tools !== undefined) response.tools = tools(options.tools);
  if (options.toolChoice !== undefined) response.tool_choice = toolChoice(options.toolChoice);
  if (options.outputModalities !== undefined) response.output_modalities = options.outputModalities;
  if (options.maxOutputTokens !== undefined) response.max_output_tokens = options.maxOutputTokens;
  if (options.conversation !== undefined) response.conversation = options.conversation;
  return { ...event, response };
}

/** A client item as a GA `conversation.item.create`; the gateway id is the provider id (≤ 32 characters). */
export function openAIItemCreate(key: string, item: NewItem, previousKey: string | null, eventId?: string): ConversationItemCreateEvent {
  const head = {
    type: 'conversation.item.create' as const,
    ...(eventId !== undefined ? { event_id: eventId } : {}),
    ...(previousKey !== null ? { previous_item_id: previousKey } : {}),
  };
  if (item.type === 'function_call_output') {
    return { ...head, item: { id: key, type: 'function_call_output', call_id: item.callId, output: item.output } };
  }
  if (item.role === 'system') {
    return {
      ...head,
      item: { id: key, type: 'message', role: 'system', content: item.content.map((p) => ({ type: 'input_text', text: textOf(p) })) },
    };
  }
  if (item.role === 'assistant') {
    return {
      ...head,
      item: { id: key, type: 'message', role: 'assistant', content: item.content.map((p) => ({ type: 'output_text', text: textOf(p) })) },
    };
  }
  return {
    ...head,
    item: {
      id: key,
      type: 'message',
      role: 'user',
      content: item.content.map((p) =>
        p.type === 'input_audio' ? { type: 'input_audio', audio: p.pcm.toString('base64') } : { type: 'input_text', text: textOf(p) },
      ),
    },
  };
}

/**
 * An item of the conversation so far as a GA `conversation.item.create` for a new session (continuity):
 * text only, audio turns by their transcripts; null when nothing of it can be said in text.
 */
export function openAIHistoryItem(key: string, item: ItemBody, eventId?: string): ConversationItemCreateEvent | null {
  const head = { type: 'conversation.item.create' as const, ...(eventId !== undefined ? { event_id: eventId } : {}) };
  if (item.type === 'function_call') {
    if (!item.callId) return null;
    return { ...head, item: { id: key, type: 'function_call', call_id: item.callId, name: item.name, arguments: item.arguments } };
  }
  if (item.type === 'function_call_output') {
    return { ...head, item: { id: key, type: 'function_call_output', call_id: item.callId, output: item.output } };
  }
  const texts = item.content.flatMap((p) => {
    const text = p.type === 'input_text' || p.type === 'output_text' ? p.text : p.transcript;
    return text ? [text] : [];
  });
  if (texts.length === 0) return null;
  if (item.role === 'assistant') {
    return {
      ...head,
      item: { id: key, type: 'message', role: 'assistant', content: texts.map((text) => ({ type: 'output_text', text })) },
    };
  }
  return { ...head, item: { id: key, type: 'message', role: item.role, content: texts.map((text) => ({ type: 'input_text', text })) } };
}

function textOf(part: NewItem extends infer I ? (I extends { content: (infer P)[] } ? P : never) : never): string {
  return 'text' in part ? part.text : '';
}

// ---- incoming ----

export function str(v: unknown): string | null {
  return typeof v === 'string' && v.length > 0 ? v : null;
}

export function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

function count(v: unknown): number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : 0;
}

function itemStatus(v: unknown): ItemStatus {
  return v === 'in_progress' || v === 'incomplete' ? v : 'completed';
}

/** A GA content part (item content or response part; GA and beta names) in the neutral model, audio bytes dropped. */
export function contentPart(raw: unknown, role?: string): ContentPart | null {
  const p = raw as { type?: unknown; text?: unknown; transcript?: unknown } | null;
  if (!p || typeof p !== 'object') return null;
  const text = typeof p.text === 'string' ? p.text : '';
  const transcript = typeof p.transcript === 'string' ? p.transcript : null;
  switch (p.type) {
    case 'input_text':
      return { type: 'input_text', text };
    case 'input_audio':
      return { type: 'input_audio', transcript };
    case 'output_text':
    case 'text':
      return role === 'user' || role === 'system' ? { type: 'input_text', text } : { type: 'output_text', text };
    case 'output_audio':
    case 'audio':
      return role === 'user' ? { type: 'input_audio', transcript } : { type: 'output_audio', transcript };
    default:
      return null;
  }
}

/** A GA conversation item in the neutral model; null for kinds the gateway does not carry (MCP). */
export function itemBody(raw: unknown): ItemBody | null {
  const it = raw as Record<string, unknown> | null;
  if (!it || typeof it !== 'object') return null;
  const status = itemStatus(it.status);
  if (it.type === 'message') {
    const role = it.role === 'user' || it.role === 'system' ? it.role : 'assistant';
    const content = Array.isArray(it.content) ? it.content.flatMap((c) => contentPart(c, role) ?? []) : [];
    return { type: 'message', role, status, content };
  }
  if (it.type === 'function_call') {
    return {
      type: 'function_call',
      status,
      callId: str(it.call_id) ?? '',
      name: typeof it.name === 'string' ? it.name : '',
      arguments: typeof it.arguments === 'string' ? it.arguments : '',
    };
  }
  if (it.type === 'function_call_output') {
    return { type: 'function_call_output', status, callId: str(it.call_id) ?? '', output: typeof it.output === 'string' ? it.output : '' };
  }
  return null;
}

/**
 * GA `response.usage` → the token report by modality; null when the response reported none. OpenAI's
 * `text_tokens` and `audio_tokens` include their cached part: the input counts here exclude it (decisions.md).
 * Without `cached_tokens_details`, the cached tokens are taken from text first (instructions and tools are
 * the cached prefix), then from audio.
 */
export function openAITokens(usage: unknown, transcribedMs: number): TokenReport | null {
  if (!usage || typeof usage !== 'object') return null;
  const u = usage as {
    input_tokens?: unknown;
    output_tokens?: unknown;
    input_token_details?: {
      audio_tokens?: unknown;
      text_tokens?: unknown;
      cached_tokens?: unknown;
      cached_tokens_details?: { audio_tokens?: unknown; text_tokens?: unknown };
    };
    output_token_details?: { audio_tokens?: unknown; text_tokens?: unknown };
  };
  const inD = u.input_token_details;
  const outD = u.output_token_details;
  if (!inD && !outD && u.input_tokens === undefined && u.output_tokens === undefined) return null;
  const audioIn = count(inD?.audio_tokens);
  const textIn = count(inD?.text_tokens);
  const cached = count(inD?.cached_tokens);
  let cachedText: number;
  let cachedAudio: number;
  if (inD?.cached_tokens_details) {
    cachedText = Math.min(textIn, count(inD.cached_tokens_details.text_tokens));
    cachedAudio = Math.min(audioIn, count(inD.cached_tokens_details.audio_tokens));
  } else {
    cachedText = Math.min(textIn, cached);
    cachedAudio = Math.min(audioIn, cached - cachedText);
  }
  return {
    ...ZERO_TOKENS,
    inputAudioTokens: audioIn - cachedAudio,
    inputTextTokens: textIn - cachedText,
    cachedInputTokens: cached,
    outputAudioTokens: count(outD?.audio_tokens),
    outputTextTokens: count(outD?.text_tokens),
    transcribedMs,
  };
}

/** GA error params (`session.audio.output.voice` …) in the neutral model's terms (`voice` …). */
const PARAMS: readonly [RegExp, string][] = [
  [/^session\.audio\.output\.voice/, 'voice'],
  [/^session\.audio\.input\.turn_detection/, 'turnDetection'],
  [/^session\.audio\.input\.transcription/, 'inputTranscription'],
  [/^session\.audio\.input\.noise_reduction/, 'noiseReduction'],
  [/^session\.instructions/, 'instructions'],
  [/^session\.tools/, 'tools'],
  [/^session\.tool_choice/, 'toolChoice'],
  [/^session\.output_modalities/, 'outputModalities'],
  [/^session\.max_output_tokens/, 'maxOutputTokens'],
];

export function neutralParam(param: unknown): string | undefined {
  if (typeof param !== 'string') return undefined;
  for (const [re, name] of PARAMS) if (re.test(param)) return name;
  return undefined;
}
