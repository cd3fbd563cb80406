import { LOCAL_TOKEN_RATIO, textTokens, type ConversationItem } from './protocol.js';

/** Tokens of one piece of the context, by modality. */
export interface Tokens {
  text: number;
  audio: number;
}

/** One item of the simulated conversation: its GA shape (audio bytes are never kept) and what it weighs. */
export interface StoredItem {
  id: string;
  item: ConversationItem;
  /** Audio of the item in ms: committed input for a user audio item, audio sent for an assistant item. */
  audioMs: number;
}

/** A piece of the context a response is billed for: the instructions, then each item in order. */
export interface Segment {
  key: string;
  tokens: Tokens;
}

/** What a response's input costs: the whole context, the part that repeats the previous response's counted as cached. */
export interface ContextUsage {
  text: number;
  audio: number;
  cachedText: number;
  cachedAudio: number;
}

/** Tokens of an item in the context: 1 per 100 ms of its audio, 1 per 4 characters of each of its texts. */
export function itemTokens(stored: StoredItem): Tokens {
  const audio = Math.ceil(stored.audioMs / LOCAL_TOKEN_RATIO.inputMsPerToken);
  const item = stored.item;
  let text = 0;
  if (item.type === 'message') {
    for (const part of item.content) if (part.type === 'input_text' || part.type === 'output_text') text += textTokens(part.text ?? '');
  } else if (item.type === 'function_call') {
    text = textTokens(item.arguments);
  } else if (item.type === 'function_call_output') {
    text = textTokens(item.output);
  }
  return { text, audio };
}

/**
 * The items of one simulated session in conversation order. It keeps no audio, only its length, so a long
 * session costs memory per item, not per second of audio.
 */
export class Conversation {
  private readonly items: StoredItem[] = [];

  get size(): number {
    return this.items.length;
  }

  get lastId(): string | null {
    return this.items.at(-1)?.id ?? null;
  }

  get(id: string): StoredItem | undefined {
    return this.items.find((s) => s.id === id);
  }

  has(id: string): boolean {
    return this.items.some((s) => s.id === id);
  }

  /**
   * Inserts after `previousId` (`'root'`: first; undefined: last). Returns the id of the item before it,
   * or undefined when `previousId` names no item.
   */
  insert(stored: StoredItem, previousId?: string): { previousItemId: string | null } | undefined {
    if (previousId === undefined) {
      const previousItemId = this.lastId;
      this.items.push(stored);
      return { previousItemId };
    }
    if (previousId === 'root') {
      this.items.unshift(stored);
      return { previousItemId: null };
    }
    const at = this.items.findIndex((s) => s.id === previousId);
    if (at < 0) return undefined;
    this.items.splice(at + 1, 0, stored);
    return { previousItemId: previousId };
  }

  delete(id: string): boolean {
    const at = this.items.findIndex((s) => s.id === id);
    if (at < 0) return false;
    this.items.splice(at, 1);
    return true;
  }

  /** The context of a response: the instructions and every item, in order. */
  segments(instructions: string): Segment[] {
    const out: Segment[] = [];
    if (instructions.length > 0)
      out.push({ key: `instructions\u0000${instructions}`, tokens: { text: textTokens(instructions), audio: 0 } });
    for (const stored of this.items) out.push({ key: `item\u0000${stored.id}`, tokens: itemTokens(stored) });
    return out;
  }
}

/**
 * Bills a context against the previous response's: the longest common prefix (same piece, same weight)
 * counts as cached, as a provider's prompt cache would. Totals include the cached part, as OpenAI reports.
 */
export function contextUsage(context: Segment[], previous: Segment[]): ContextUsage {
  const usage: ContextUsage = { text: 0, audio: 0, cachedText: 0, cachedAudio: 0 };
  let cached = true;
  context.forEach((seg, i) => {
    const prev = previous[i];
    cached =
      cached &&
      prev !== undefined &&
      prev.key === seg.key &&
      prev.tokens.text === seg.tokens.text &&
      prev.tokens.audio === seg.tokens.audio;
    usage.text += seg.tokens.text;
    usage.audio += seg.tokens.audio;
    if (cached) {
      usage.cachedText += seg.tokens.text;
      usage.cachedAudio += seg.tokens.audio;
    }
  });
  return usage;
}
