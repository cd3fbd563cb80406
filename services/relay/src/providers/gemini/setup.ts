import { isDeepStrictEqual } from 'node:util';
import type {
  ActivityHandling,
  AutomaticActivityDetection,
  FunctionDeclaration,
  LiveClientMessage,
  LiveClientSetup,
  Modality,
  RealtimeInputConfig,
} from '@google/genai';
import type { FunctionTool, VoiceSettings } from '../../agent/types.js';

export const GEMINI_DEFAULT_VOICE = 'Puck';
const GEMINI_VOICE_NAMES = [
  'Puck',
  'Charon',
  'Kore',
  'Fenrir',
  'Aoede',
  'Leda',
  'Orus',
  'Zephyr',
  'Achernar',
  'Achird',
  'Algenib',
  'Algieba',
  'Alnilam',
  'Autonoe',
  'Callirrhoe',
  'Despina',
  'Enceladus',
  'Erinome',
  'Gacrux',
  'Iapetus',
  'Laomedeia',
  'Pulcherrima',
  'Rasalgethi',
  'Sadachbia',
  'Sadaltager',
  'Schedar',
  'Sulafat',
  'Umbriel',
  'Vindemiatrix',
  'Zubenelgenubi',
];
const GEMINI_VOICES = new Map(GEMINI_VOICE_NAMES.map((v) => [v.toLowerCase(), v]));

/** What the Live API's setup is given: the catalog model's provider_model and the session's settings. */
export type GeminiSessionConfig = { providerModel: string } & VoiceSettings;

/** A setting Gemini cannot honour: the field (in the neutral model's terms, as `error.param` wants it) and why. */
export interface GeminiRefusal {
  param: string;
  message: string;
}

/**
 * The SDK's enums are TypeScript enums, which a string literal does not satisfy; the adapter must not load the
 * SDK at run time (it is a devDependency, for types only). This checks the literal against the enum's values.
 */
function wire<E extends string>(value: `${E}`): E {
  return value as unknown as E;
}

/** Maps a requested voice to a Gemini prebuilt voice (case-insensitive); anything else gets the default. */
export function geminiVoice(voice: string | undefined): string {
  return (voice && GEMINI_VOICES.get(voice.toLowerCase())) ?? GEMINI_DEFAULT_VOICE;
}

export function geminiModelName(providerModel: string): string {
  return providerModel.startsWith('models/') ? providerModel : `models/${providerModel}`;
}

/**
 * The settings → `setup`. Everything is fixed here for the whole connection except the system instruction and
 * the tools (`contextUpdate`); `geminiRefusal` says what this cannot express, and nothing is dropped silently.
 * Output transcription is always on in audio mode: it is the text of what the model said (the gateway's
 * `output_audio` transcript), as OpenAI always provides it. `resumeHandle` resumes a session on a new connection.
 */
export function geminiSetup(config: GeminiSessionConfig, resumeHandle?: string): { setup: LiveClientSetup } {
  const text = config.outputModalities?.[0] === 'text';
  const setup: LiveClientSetup = {
    model: geminiModelName(config.providerModel),
    generationConfig: {
      responseModalities: [wire<Modality>(text ? 'TEXT' : 'AUDIO')],
      ...(typeof config.maxOutputTokens === 'number' ? { maxOutputTokens: config.maxOutputTokens } : {}),
      ...(text ? {} : { speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: geminiVoice(config.voice) } } } }),
    },
    ...(config.instructions ? { systemInstruction: geminiInstruction(config.instructions) } : {}),
    ...(config.tools && config.tools.length > 0 ? { tools: geminiTools(config.tools) } : {}),
    realtimeInputConfig: geminiInputConfig(config.turnDetection),
    ...(config.inputTranscription
      ? { inputAudioTranscription: config.inputTranscription.language ? { languageCodes: [config.inputTranscription.language] } : {} }
      : {}),
    ...(text ? {} : { outputAudioTranscription: {} }),
    // Gemini issues resumption handles (a connection lasts about 10 minutes; the session goes on on the next),
    // and compresses the context rather than end an audio session at its 15-minute limit.
    sessionResumption: resumeHandle !== undefined ? { handle: resumeHandle } : {},
    contextWindowCompression: { slidingWindow: {} },
  };
  return { setup } satisfies LiveClientMessage;
}

export function geminiInstruction(instructions: string): NonNullable<LiveClientSetup['systemInstruction']> {
  return { parts: [{ text: instructions }] };
}

/** Function tools → one Tool of function declarations; the JSON Schema goes as is (`parametersJsonSchema`). */
export function geminiTools(tools: FunctionTool[]): NonNullable<LiveClientSetup['tools']> {
  return [
    {
      functionDeclarations: tools.map((tool): FunctionDeclaration => ({
        name: tool.name,
        ...(tool.description !== undefined ? { description: tool.description } : {}),
        parametersJsonSchema: tool.parameters,
      })),
    },
  ];
}

/** Turn detection → automatic activity detection (server VAD) or none at all (manual turns, activityStart/End). */
function geminiInputConfig(td: VoiceSettings['turnDetection']): RealtimeInputConfig {
  if (td === null) return { automaticActivityDetection: { disabled: true } };
  const aad: AutomaticActivityDetection = { disabled: false };
  if (td?.type === 'server_vad') {
    if (td.silenceDurationMs !== undefined) aad.silenceDurationMs = td.silenceDurationMs;
    if (td.prefixPaddingMs !== undefined) aad.prefixPaddingMs = td.prefixPaddingMs;
  }
  const interrupt = td?.interruptResponse;
  return {
    automaticActivityDetection: aad,
    ...(interrupt === false ? { activityHandling: wire<ActivityHandling>('NO_INTERRUPTION') } : {}),
  };
}

/**
 * What the setup cannot express, in the order a client would read the settings; null when all of it maps.
 * The relay's capability check refuses whole features (GEMINI_CAPABILITIES); this names the single values.
 */
export function geminiRefusal(settings: VoiceSettings): GeminiRefusal | null {
  const td = settings.turnDetection;
  if (td?.type === 'semantic_vad') return { param: 'turnDetection', message: 'Gemini Live has no semantic turn detection.' };
  if (td?.type === 'server_vad' && td.threshold !== undefined)
    return { param: 'turnDetection', message: 'Gemini Live takes no numeric voice activity threshold.' };
  if (td && td.createResponse === false)
    return {
      param: 'turnDetection',
      message: 'Gemini Live always answers a turn its activity detection ends (create_response must stay true).',
    };
  if (settings.toolChoice !== undefined && settings.toolChoice !== 'auto')
    return { param: 'toolChoice', message: 'Gemini Live lets the model choose its tools: only "auto" is supported.' };
  if (settings.noiseReduction) return { param: 'noiseReduction', message: 'Gemini Live has no input noise reduction.' };
  const tr = settings.inputTranscription;
  if (tr?.model !== undefined)
    return { param: 'inputTranscription', message: 'Gemini Live transcribes with its own model: no transcription model can be chosen.' };
  if (tr?.prompt !== undefined) return { param: 'inputTranscription', message: 'Gemini Live takes no transcription prompt.' };
  return null;
}

/** Settings the Live API fixes at setup (only instructions and tools change later, by `contextUpdate`). */
const FIXED_AT_SETUP = [
  ['voice', 'the voice'],
  ['turnDetection', 'turn detection'],
  ['outputModalities', 'the output modality'],
  ['maxOutputTokens', 'the output token limit'],
  ['inputTranscription', 'input transcription'],
  ['noiseReduction', 'noise reduction'],
] as const satisfies readonly (readonly [keyof VoiceSettings, string])[];

/**
 * A mid-session update Gemini cannot apply: a change to a setting fixed at setup (the same value again is
 * accepted), or a value it cannot express at all. Null when it can be applied.
 */
export function geminiUpdateRefusal(current: VoiceSettings, update: VoiceSettings): GeminiRefusal | null {
  for (const [field, what] of FIXED_AT_SETUP) {
    if (update[field] === undefined) continue;
    const same = isDeepStrictEqual(normalized(field, update), normalized(field, current));
    if (!same) return { param: field, message: `Gemini Live fixes ${what} when the session opens: it cannot change mid-session.` };
  }
  return geminiRefusal(update);
}

/** A setting's value as Gemini sees it: the voice it maps to, no token limit for `inf`, off for `null`. */
function normalized(field: keyof VoiceSettings, settings: VoiceSettings): unknown {
  if (field === 'voice') return geminiVoice(settings.voice);
  if (field === 'maxOutputTokens') return settings.maxOutputTokens === 'inf' ? undefined : settings.maxOutputTokens;
  if (field === 'outputModalities') return settings.outputModalities?.[0] ?? 'audio';
  // Absent turn detection is server VAD with Gemini's defaults; null is manual turns.
  if (field === 'turnDetection') return settings.turnDetection === undefined ? { type: 'server_vad' } : settings.turnDetection;
  return settings[field] ?? undefined;
}
