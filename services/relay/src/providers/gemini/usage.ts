import type { ModalityTokenCount, UsageMetadata } from '@google/genai';
import type { TokenReport } from '../../agent/types.js';

/**
 * Gemini Live `usageMetadata` → a TokenReport by modality. Semantics (docs/providers.md, "gemini"):
 * - a report covers one model turn, not the session: each turn's prompt is the whole context so far, so
 *   prompt counts grow from turn to turn and are billed as reported (never summed across reports);
 * - `promptTokenCount` includes the cached tokens (`cachedContentTokenCount`); the report's input counts
 *   exclude them. Cached tokens are split by modality with `cacheTokensDetails`; without it they are taken
 *   from the text part first (instructions and tools lead the context), then from audio;
 * - `toolUsePromptTokenCount` (tool results fed back as input) is input, by its details' modality;
 * - `thoughtsTokenCount` is output text (Gemini bills thinking as output);
 * - modalities other than AUDIO (TEXT, and IMAGE, VIDEO, DOCUMENT, which the gateway never sends) count as text;
 * - a total larger than its details (details missing or partial) puts the rest in text: nothing is dropped.
 * Null when the message carries no count at all. Gemini reports no transcription figure: `transcribedMs` is 0.
 */
export function geminiTokenReport(metadata: unknown): TokenReport | null {
  if (!metadata || typeof metadata !== 'object') return null;
  const m = metadata as UsageMetadata;
  const prompt = split(m.promptTokenCount, m.promptTokensDetails);
  const cache = split(m.cachedContentTokenCount, m.cacheTokensDetails);
  const toolUse = split(m.toolUsePromptTokenCount, m.toolUsePromptTokensDetails);
  const response = split(m.responseTokenCount, m.responseTokensDetails);
  const thoughts = count(m.thoughtsTokenCount);
  if (!prompt && !cache && !toolUse && !response && thoughts === null) return null;

  const promptAudio = prompt?.audio ?? 0;
  const promptText = prompt?.text ?? 0;
  const cached = cache ? cache.audio + cache.text : 0;
  // Without details, the cached prefix is text first; never more of a modality than the prompt holds.
  const cachedAudio = Math.min(promptAudio, cache?.detailed ? cache.audio : Math.max(0, cached - promptText));
  const cachedText = Math.min(promptText, cached - cachedAudio);
  return {
    inputAudioTokens: promptAudio - cachedAudio + (toolUse?.audio ?? 0),
    inputTextTokens: promptText - cachedText + (toolUse?.text ?? 0),
    cachedInputTokens: cachedAudio + cachedText,
    outputAudioTokens: response?.audio ?? 0,
    outputTextTokens: (response?.text ?? 0) + (thoughts ?? 0),
    transcribedMs: 0,
  };
}

interface Split {
  audio: number;
  text: number;
  /** The details named the modalities (else everything beyond them is text). */
  detailed: boolean;
}

/** A total and its per-modality details → audio and the rest; null when neither is present. */
function split(total: unknown, details: ModalityTokenCount[] | undefined): Split | null {
  const sum = count(total);
  let audio = 0;
  let other = 0;
  let detailed = false;
  if (Array.isArray(details)) {
    for (const d of details as unknown[]) {
      const entry = d as ModalityTokenCount | null;
      const n = count(entry?.tokenCount);
      if (n === null) continue;
      detailed = true;
      if (entry?.modality === 'AUDIO') audio += n;
      else other += n;
    }
  }
  if (sum === null && !detailed) return null;
  // A total above its details leaves tokens of no named modality: they are text.
  const text = Math.max(other, (sum ?? 0) - audio);
  return { audio, text, detailed };
}

function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}
