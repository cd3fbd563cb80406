/**
 * The voice-agent types shared by the relay's two sides (decisions.md, "The full realtime event model"):
 * session settings, conversation items and the token report by modality. Dialect-neutral and
 * provider-neutral: a client codec decodes its wire format into these types, an upstream adapter encodes
 * them into its provider's protocol. No wire name, provider name or URL appears here.
 *
 * Item ids: every item the client sees has a gateway id (`item_…`, minted by the relay's conversation).
 * Across the upstream interface an item is named by an opaque `key`: for items the client created it is
 * the gateway id itself (an adapter may reuse it as the provider's id when the provider accepts one, as
 * OpenAI does up to 32 characters); for items the provider created it is whatever the adapter chooses
 * (the provider's id, or a counter). The relay maps keys to gateway ids; provider ids never reach a client.
 */

/** A function tool the client executes; the gateway relays the call and its output, never runs one. */
export interface FunctionTool {
  name: string;
  description?: string;
  /** A JSON Schema object, already checked (size, shape) by the codec. */
  parameters: Record<string, unknown>;
}

export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; name: string };

export type TurnDetection =
  | {
      type: 'server_vad';
      threshold?: number;
      prefixPaddingMs?: number;
      silenceDurationMs?: number;
      createResponse?: boolean;
      interruptResponse?: boolean;
    }
  | { type: 'semantic_vad'; eagerness?: 'low' | 'medium' | 'high' | 'auto'; createResponse?: boolean; interruptResponse?: boolean }
  /** Manual turns: the client commits and asks for responses itself. */
  | null;

export interface InputTranscription {
  /** Provider-specific; absent = the provider's default transcriber. */
  model?: string;
  language?: string;
  prompt?: string;
}

export type OutputModality = 'audio' | 'text';

/** Reasoning of reasoning-capable models (changes the answer): the effort asked for. */
export interface Reasoning {
  effort?: 'minimal' | 'low' | 'medium' | 'high' | 'xhigh';
}

/** A stored prompt template of the provider, by reference (changes the answer). */
export interface PromptReference {
  id: string;
  version?: string | null;
  variables?: Record<string, unknown> | null;
}

/** How the conversation is cut when it outgrows the model's context (a hint). */
export type Truncation =
  'auto' | 'disabled' | { type: 'retention_ratio'; retentionRatio: number; tokenLimits?: { postInstructions?: number } };

/** Extra fields in server outputs (a hint). */
export type IncludeField = 'item.input_audio_transcription.logprobs';

/**
 * The voice settings of a session: voice, instructions, turns, tools (not the deployment's session policy,
 * `SessionPolicy` of `@s2s/sessions`). In an update, an absent field is unchanged; `null` (where
 * allowed) turns a feature off. The relay holds the effective settings (defaults filled in) and hands them
 * whole to a new upstream.
 */
export interface VoiceSettings {
  voice?: string;
  instructions?: string;
  tools?: FunctionTool[];
  toolChoice?: ToolChoice;
  outputModalities?: [OutputModality];
  maxOutputTokens?: number | 'inf';
  turnDetection?: TurnDetection;
  inputTranscription?: InputTranscription | null;
  noiseReduction?: { type: 'near_field' | 'far_field' } | null;
  /**
   * The client's audio formats (the OpenAI dialect's G.711). An upstream connection opens in them where its
   * provider takes them (ProviderBase); a later change is the codec's and the relay's converter's, never
   * sent to a provider.
   */
  formats?: Partial<AudioFormats>;
  /** Refused where the provider cannot honour it (it changes the answer). */
  reasoning?: Reasoning | null;
  /** Refused where the provider cannot honour it (it changes the answer). */
  prompt?: PromptReference | null;
  /** Hints: where the provider cannot honour them, what takes effect is reported instead. */
  parallelToolCalls?: boolean;
  truncation?: Truncation;
  include?: IncludeField[];
}

/**
 * The audio a client sends and hears: PCM16 24 kHz, or G.711 μ-law / A-law 8 kHz (decisions.md, "Phone
 * audio"). A provider gets the client's format where it takes it (carried as is), else PCM16 24 kHz, converted
 * in the relay's one place (audio.ts FormatConverter).
 */
export type ClientAudioFormat = 'pcm16' | 'pcmu' | 'pcma';
export interface AudioFormats {
  input: ClientAudioFormat;
  output: ClientAudioFormat;
}

/** Per-response overrides (`response.create`'s `response` object). */
export interface ResponseOptions {
  instructions?: string;
  tools?: FunctionTool[];
  toolChoice?: ToolChoice;
  outputModalities?: [OutputModality];
  maxOutputTokens?: number | 'inf';
  /** `none`: an out-of-band response whose items do not join the conversation. */
  conversation?: 'auto' | 'none';
}

/** Content of a message item. Audio bytes stay out of the conversation the relay keeps (transcripts stay). */
export type ContentPart =
  | { type: 'input_text'; text: string }
  | { type: 'input_audio'; transcript: string | null }
  | { type: 'output_text'; text: string }
  | { type: 'output_audio'; transcript: string | null };

export type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

export type ConversationItem =
  | { id: string; type: 'message'; role: 'user' | 'system' | 'assistant'; status: ItemStatus; content: ContentPart[] }
  | { id: string; type: 'function_call'; status: ItemStatus; callId: string; name: string; arguments: string }
  | { id: string; type: 'function_call_output'; status: ItemStatus; callId: string; output: string };

/** An item without its gateway id: what crosses the upstream interface (keys name items there). */
export type ItemBody = ConversationItem extends infer I ? (I extends ConversationItem ? Omit<I, 'id'> : never) : never;

/**
 * An item the client creates (`conversation.item.create`), checked by the codec. `input_audio` parts carry
 * raw PCM16LE 24 kHz mono (metered as input audio like appended audio).
 */
export type NewItem =
  | {
      type: 'message';
      role: 'user' | 'system' | 'assistant';
      content: ({ type: 'input_text'; text: string } | { type: 'input_audio'; pcm: Buffer } | { type: 'output_text'; text: string })[];
    }
  | { type: 'function_call_output'; callId: string; output: string };

/**
 * Token counts of one response by modality, as the provider reported them (or as the adapter's documented
 * ratio derived them when it reported none). Input counts exclude cached tokens; `cachedInputTokens`
 * counts cached tokens of any modality. `transcribedMs`: input audio the provider transcribed on request.
 */
export interface TokenReport {
  inputAudioTokens: number;
  inputTextTokens: number;
  cachedInputTokens: number;
  outputAudioTokens: number;
  outputTextTokens: number;
  transcribedMs: number;
}

export const ZERO_TOKENS: Readonly<TokenReport> = Object.freeze({
  inputAudioTokens: 0,
  inputTextTokens: 0,
  cachedInputTokens: 0,
  outputAudioTokens: 0,
  outputTextTokens: 0,
  transcribedMs: 0,
});

/** Limits of decisions.md (configurable; errors name the limit). */
export interface AgentLimits {
  maxInstructionsBytes: number;
  maxTools: number;
  maxToolSchemaBytes: number;
  maxTextPartBytes: number;
  maxItems: number;
}

export const DEFAULT_AGENT_LIMITS: Readonly<AgentLimits> = Object.freeze({
  maxInstructionsBytes: 64 * 1024,
  maxTools: 128,
  maxToolSchemaBytes: 16 * 1024,
  maxTextPartBytes: 64 * 1024,
  maxItems: 4096,
});

/** The settings in force: every field set (`voice: null` = the provider's default voice). */
export interface EffectiveSettings {
  voice: string | null;
  instructions: string;
  tools: FunctionTool[];
  toolChoice: ToolChoice;
  outputModalities: [OutputModality];
  maxOutputTokens: number | 'inf';
  turnDetection: TurnDetection;
  inputTranscription: InputTranscription | null;
  noiseReduction: { type: 'near_field' | 'far_field' } | null;
  formats: AudioFormats;
  reasoning: Reasoning | null;
  prompt: PromptReference | null;
  /** null: the provider's default, never set. */
  parallelToolCalls: boolean | null;
  truncation: Truncation;
  include: IncludeField[];
}

/** A session's settings before any update: server VAD, audio out, no instructions, no tools. */
export const DEFAULT_SETTINGS: Readonly<EffectiveSettings> = Object.freeze<EffectiveSettings>({
  voice: null,
  instructions: '',
  tools: [],
  toolChoice: 'auto',
  outputModalities: ['audio'],
  maxOutputTokens: 'inf',
  turnDetection: { type: 'server_vad' },
  inputTranscription: null,
  noiseReduction: null,
  formats: Object.freeze({ input: 'pcm16', output: 'pcm16' }),
  reasoning: null,
  prompt: null,
  parallelToolCalls: null,
  truncation: 'auto',
  include: [],
});

/** The settings after an (atomic, already accepted) update: present fields replace, absent ones stay. */
export function applySettings(current: Readonly<EffectiveSettings>, update: VoiceSettings): EffectiveSettings {
  const next: EffectiveSettings = { ...current };
  if (update.voice !== undefined) next.voice = update.voice;
  if (update.instructions !== undefined) next.instructions = update.instructions;
  if (update.tools !== undefined) next.tools = update.tools;
  if (update.toolChoice !== undefined) next.toolChoice = update.toolChoice;
  if (update.outputModalities !== undefined) next.outputModalities = update.outputModalities;
  if (update.maxOutputTokens !== undefined) next.maxOutputTokens = update.maxOutputTokens;
  if (update.turnDetection !== undefined) next.turnDetection = update.turnDetection;
  if (update.inputTranscription !== undefined) next.inputTranscription = update.inputTranscription;
  if (update.noiseReduction !== undefined) next.noiseReduction = update.noiseReduction;
  if (update.formats !== undefined) next.formats = { ...current.formats, ...update.formats };
  if (update.reasoning !== undefined) next.reasoning = update.reasoning;
  if (update.prompt !== undefined) next.prompt = update.prompt;
  if (update.parallelToolCalls !== undefined) next.parallelToolCalls = update.parallelToolCalls;
  if (update.truncation !== undefined) next.truncation = update.truncation;
  if (update.include !== undefined) next.include = update.include;
  return next;
}
