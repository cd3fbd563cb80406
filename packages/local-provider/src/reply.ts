import { pcmTone } from './audio.js';
import {
  BYTES_PER_MS,
  LOCAL_TOKEN_RATIO,
  TEXT_CHARS_PER_TOKEN,
  TONE_HZ,
  TONE_MS_PER_CHAR,
  type FunctionTool,
  type ToolChoice,
} from './protocol.js';

/** What the user side added to the conversation since the last response, in order. */
export type PendingEntry =
  { type: 'audio'; audio: Buffer; speechMs: number } | { type: 'text'; text: string } | { type: 'function_output'; output: string };

/** What a response answers, before it is shaped for the output modality. */
export type Reply =
  | { kind: 'speech'; audio: Buffer; transcript: string }
  | { kind: 'text'; text: string }
  | { kind: 'function_call'; name: string; arguments: string };

/** The input transcript of an audio turn, and the output transcript of its echo. */
export function speechTranscript(speechMs: number): string {
  return `speech ${speechMs} ms`;
}

const CALL = /^call (\S+) ([\s\S]+)$/;

/**
 * The simulator's rules (decisions.md, "The local provider"); the last pending entry decides:
 * audio → every pending audio turn played back; a function call output → its output as text;
 * `call <tool> <JSON>` naming a tool that may be called → that function call; other text → itself.
 */
export function decideReply(pending: PendingEntry[], tools: FunctionTool[], toolChoice: ToolChoice): Reply {
  const last = pending.at(-1);
  if (!last) return { kind: 'speech', audio: Buffer.alloc(0), transcript: '' };
  if (last.type === 'audio') {
    const turns = pending.filter((e): e is Extract<PendingEntry, { type: 'audio' }> => e.type === 'audio');
    return {
      kind: 'speech',
      audio: Buffer.concat(turns.map((e) => e.audio)),
      transcript: turns.map((e) => speechTranscript(e.speechMs)).join(' '),
    };
  }
  if (last.type === 'function_output') return { kind: 'text', text: last.output };
  const call = CALL.exec(last.text);
  if (call) {
    const [, name, args] = call as unknown as [string, string, string];
    if (mayCall(name, tools, toolChoice) && isJson(args)) return { kind: 'function_call', name, arguments: args.trim() };
  }
  return { kind: 'text', text: last.text };
}

/**
 * The simulator honours `reasoning` deterministically: with an effort set, a text reply starts with
 * `(<effort> effort) `, so a test sees that the setting reached it; other replies are unchanged.
 */
export function withReasoning(reply: Reply, effort: string | undefined): Reply {
  return effort !== undefined && reply.kind === 'text' ? { kind: 'text', text: `(${effort} effort) ${reply.text}` } : reply;
}

function mayCall(name: string, tools: FunctionTool[], toolChoice: ToolChoice): boolean {
  if (toolChoice === 'none') return false;
  if (typeof toolChoice === 'object' && toolChoice.name !== name) return false;
  return tools.some((t) => t.name === name);
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** A reply shaped for the response's output modality, cut to `max_output_tokens`. */
export type Output =
  | { kind: 'audio'; audio: Buffer; transcript: string; truncated: boolean }
  | { kind: 'text'; text: string; truncated: boolean }
  | { kind: 'function_call'; name: string; arguments: string; truncated: false };

export function shapeReply(reply: Reply, modality: 'audio' | 'text', maxOutputTokens: number | 'inf'): Output {
  if (reply.kind === 'function_call') return { ...reply, truncated: false };
  const max = maxOutputTokens === 'inf' ? Infinity : maxOutputTokens;
  if (modality === 'text') {
    const text = reply.kind === 'text' ? reply.text : reply.transcript;
    const cut = Math.min(text.length, max * TEXT_CHARS_PER_TOKEN);
    return { kind: 'text', text: text.slice(0, cut), truncated: cut < text.length };
  }
  // Audio mode: an echoed turn keeps its transcript; a text reply is spoken, one tone slice per character.
  const spoken = reply.kind === 'text';
  let audio = spoken ? pcmTone(reply.text.length * TONE_MS_PER_CHAR, { frequencyHz: TONE_HZ }) : reply.audio;
  let transcript = spoken ? reply.text : reply.transcript;
  const maxBytes = max * LOCAL_TOKEN_RATIO.outputMsPerToken * BYTES_PER_MS;
  if (audio.length <= maxBytes) return { kind: 'audio', audio, transcript, truncated: false };
  audio = audio.subarray(0, maxBytes);
  if (spoken) transcript = transcript.slice(0, Math.floor(audio.length / BYTES_PER_MS / TONE_MS_PER_CHAR));
  return { kind: 'audio', audio, transcript, truncated: true };
}
