import { newId } from '@s2s/core';
import type { RealtimeErrorCode } from '@s2s/contract';
import type { ContentPart, ConversationItem, ItemBody, NewItem } from './types.js';

/** A request the conversation refuses: the code, the neutral param it names and a message for the client. */
export interface ConversationRefusal {
  ok: false;
  code: Extract<RealtimeErrorCode, 'item_not_found' | 'call_id_not_found' | 'limit_exceeded' | 'invalid_value'>;
  param: string;
  message: string;
}

interface Entry {
  item: ConversationItem;
  /** The upstream's name for it: the gateway id for a client item, the adapter's key otherwise. */
  key: string;
}

/**
 * The relay's copy of one session's conversation, without I/O: gateway item ids for every item (provider
 * ids never reach a client), the mapping between upstream keys and those ids, and each item with its text
 * and transcripts (never audio bytes), so that `conversation.item.retrieve` is answered here and a later
 * upstream can be given the conversation again. It also knows the function calls seen, so an output for
 * a call that never happened is refused.
 */
/** The reservation key of the next committed input when the provider names no item. */
const NEXT_INPUT = '\u0000next-input';

export class Conversation {
  private order: string[] = [];
  private readonly byId = new Map<string, Entry>();
  private readonly byKey = new Map<string, string>();
  private readonly calls = new Set<string>();
  /** Ids promised before their item exists (speech started names the coming user item), by upstream key. */
  private readonly reserved = new Map<string, string>();

  constructor(
    private readonly maxItems: number,
    private readonly newItemId: () => string = () => newId('item'),
  ) {}

  get size(): number {
    return this.order.length;
  }

  /** Items in conversation order. */
  items(): ConversationItem[] {
    return this.order.map((id) => this.byId.get(id)!.item);
  }

  /** Items in conversation order with their upstream keys (what a new upstream connection is seeded with). */
  entries(): { key: string; item: ConversationItem }[] {
    return this.order.map((id) => {
      const entry = this.byId.get(id)!;
      return { key: entry.key, item: entry.item };
    });
  }

  retrieve(id: string): ConversationItem | undefined {
    return this.byId.get(id)?.item;
  }

  idOf(key: string): string | undefined {
    return this.byKey.get(key);
  }

  hasCall(callId: string): boolean {
    return this.calls.has(callId);
  }

  /**
   * A client item: checked (the item after which it goes, the call it answers, the size of the
   * conversation) and kept, in progress until the upstream confirms it. Its key is its gateway id.
   */
  create(
    item: NewItem,
    previousItemId: string | undefined,
  ): { ok: true; id: string; key: string; previousKey: string | null } | ConversationRefusal {
    if (this.order.length >= this.maxItems) {
      return {
        ok: false,
        code: 'limit_exceeded',
        param: 'item',
        message: `A conversation holds at most ${this.maxItems} items (max_items).`,
      };
    }
    let previousKey: string | null = null;
    if (previousItemId !== undefined && previousItemId !== 'root') {
      const prev = this.byId.get(previousItemId);
      if (!prev)
        return { ok: false, code: 'item_not_found', param: 'previousItemId', message: `No item ${previousItemId} in this conversation.` };
      previousKey = prev.key;
    }
    if (item.type === 'function_call_output' && !this.calls.has(item.callId)) {
      return {
        ok: false,
        code: 'call_id_not_found',
        param: 'item.callId',
        message: `No function call ${item.callId} in this conversation.`,
      };
    }
    const id = this.newItemId();
    const body: ItemBody =
      item.type === 'function_call_output'
        ? { type: 'function_call_output', status: 'completed', callId: item.callId, output: item.output }
        : {
            type: 'message',
            role: item.role,
            status: 'completed',
            content: item.content.map((p): ContentPart => (p.type === 'input_audio' ? { type: 'input_audio', transcript: null } : p)),
          };
    const anchor = previousItemId === 'root' ? null : (previousItemId ?? this.order.at(-1) ?? null);
    this.insert(id, id, body, anchor, previousItemId === 'root');
    return { ok: true, id, key: id, previousKey: previousItemId === undefined ? null : previousKey };
  }

  /** An item the client asked to remove, refuse or confirm: its key, or a refusal naming `itemId`. */
  keyFor(id: string, param = 'itemId'): { ok: true; key: string } | ConversationRefusal {
    const entry = this.byId.get(id);
    return entry
      ? { ok: true, key: entry.key }
      : { ok: false, code: 'item_not_found', param, message: `No item ${id} in this conversation.` };
  }

  /** A truncation request: the item must exist and `contentIndex` must be one of its audio parts. */
  checkTruncate(id: string, contentIndex: number): { ok: true; key: string } | ConversationRefusal {
    const entry = this.byId.get(id);
    if (!entry) return { ok: false, code: 'item_not_found', param: 'itemId', message: `No item ${id} in this conversation.` };
    const part = entry.item.type === 'message' ? entry.item.content[contentIndex] : undefined;
    if (!part || (part.type !== 'output_audio' && part.type !== 'input_audio')) {
      return { ok: false, code: 'invalid_value', param: 'contentIndex', message: `Item ${id} has no audio content part ${contentIndex}.` };
    }
    return { ok: true, key: entry.key };
  }

  /**
   * The upstream reports an item (one the client created, or one the provider made: user audio, an
   * assistant message, a function call). Returns it with its gateway id and the id of the item before it.
   */
  upsert(key: string, previousKey: string | null, body: ItemBody): { item: ConversationItem; previousItemId: string | null } {
    const known = this.byKey.get(key);
    if (known !== undefined) {
      const entry = this.byId.get(known)!;
      entry.item = merge(entry.item, body);
      this.noteCall(entry.item);
      return { item: entry.item, previousItemId: this.previousOf(known) };
    }
    const id = this.reserved.get(key) ?? this.newItemId();
    this.reserved.delete(key);
    const anchor = previousKey !== null ? (this.byKey.get(previousKey) ?? this.order.at(-1) ?? null) : (this.order.at(-1) ?? null);
    const item = this.insert(id, key, body, anchor, false);
    this.noteCall(item);
    // Past the limit the oldest item is forgotten here (the provider keeps its own context).
    if (this.order.length > this.maxItems) this.forget(this.order[0]!);
    return { item, previousItemId: this.previousOf(id) };
  }

  /**
   * The gateway id the item of `key` has or will have once the upstream adds it: OpenAI's speech events name
   * the user item that speech will become. Without a key (a provider that names none) the next committed input.
   */
  reserve(key: string | undefined): string {
    const k = key ?? NEXT_INPUT;
    const known = this.byKey.get(k);
    if (known !== undefined) return known;
    let id = this.reserved.get(k);
    if (id === undefined) {
      // Speech that never became an item (cleared input) leaves its reservation: keep only the newest few.
      if (this.reserved.size >= 16) this.reserved.delete(this.reserved.keys().next().value!);
      this.reserved.set(k, (id = this.newItemId()));
    }
    return id;
  }

  /** The input buffer became a user audio item. */
  committed(key: string, previousKey: string | null): { itemId: string; previousItemId: string | null } {
    const next = this.reserved.get(NEXT_INPUT);
    if (next !== undefined && !this.byKey.has(key) && !this.reserved.has(key)) {
      this.reserved.delete(NEXT_INPUT);
      this.reserved.set(key, next);
    }
    const r = this.upsert(key, previousKey, {
      type: 'message',
      role: 'user',
      status: 'completed',
      content: [{ type: 'input_audio', transcript: null }],
    });
    return { itemId: r.item.id, previousItemId: r.previousItemId };
  }

  /** The upstream removed an item; its gateway id, or undefined when it was never shown. */
  deleted(key: string): string | undefined {
    const id = this.byKey.get(key);
    if (id !== undefined) this.forget(id);
    return id;
  }

  /** A client item the upstream refused: forgotten. */
  refused(id: string): void {
    if (this.byId.has(id)) this.forget(id);
  }

  /** A truncated audio part loses its transcript (what was not heard was not said). */
  truncated(key: string, contentIndex: number): string | undefined {
    const id = this.byKey.get(key);
    const item = id !== undefined ? this.byId.get(id)?.item : undefined;
    const part = item?.type === 'message' ? item.content[contentIndex] : undefined;
    if (part && (part.type === 'output_audio' || part.type === 'input_audio')) part.transcript = null;
    return id;
  }

  /** Sets a content part's transcript or text (`append`: a delta) on a known item; its gateway id. */
  setText(key: string, contentIndex: number, text: string, append: boolean): string | undefined {
    const id = this.byKey.get(key);
    const item = id !== undefined ? this.byId.get(id)?.item : undefined;
    if (item?.type !== 'message') return id;
    const part = item.content[contentIndex];
    if (!part) return id;
    if (part.type === 'input_text' || part.type === 'output_text') part.text = append ? part.text + text : text;
    else part.transcript = append ? (part.transcript ?? '') + text : text;
    return id;
  }

  /** A content part the provider started on an output item. */
  addPart(key: string, contentIndex: number, part: ContentPart): string | undefined {
    const id = this.byKey.get(key);
    const item = id !== undefined ? this.byId.get(id)?.item : undefined;
    if (item?.type === 'message' && item.content[contentIndex] === undefined) item.content[contentIndex] = { ...part };
    return id;
  }

  /** Function call arguments as they stream; the call becomes known (answerable) once complete. */
  callArguments(key: string, callId: string, args: string, append: boolean, name?: string): string | undefined {
    const id = this.byKey.get(key);
    const item = id !== undefined ? this.byId.get(id)?.item : undefined;
    if (item?.type !== 'function_call') return id;
    item.arguments = append ? item.arguments + args : args;
    if (callId) item.callId = callId;
    if (name) item.name = name;
    if (!append && item.callId) this.calls.add(item.callId);
    return id;
  }

  private insert(id: string, key: string, body: ItemBody, afterId: string | null, atStart: boolean): ConversationItem {
    const item = { ...body, id } as ConversationItem;
    this.byId.set(id, { item, key });
    this.byKey.set(key, id);
    const at = atStart ? 0 : afterId === null ? this.order.length : this.order.indexOf(afterId) + 1;
    if (at === 0 && !atStart && afterId !== null) this.order.push(id);
    else this.order.splice(at, 0, id);
    return item;
  }

  private previousOf(id: string): string | null {
    const i = this.order.indexOf(id);
    return i > 0 ? this.order[i - 1]! : null;
  }

  private forget(id: string): void {
    const entry = this.byId.get(id);
    if (!entry) return;
    this.byId.delete(id);
    this.byKey.delete(entry.key);
    this.order = this.order.filter((x) => x !== id);
  }

  private noteCall(item: ConversationItem): void {
    if (item.type === 'function_call' && item.callId && item.status === 'completed') this.calls.add(item.callId);
  }
}

/** The provider's fresh view of an item, keeping the transcripts and text the relay already gathered. */
function merge(old: ConversationItem, body: ItemBody): ConversationItem {
  if (old.type !== 'message' || body.type !== 'message') return { ...body, id: old.id } as ConversationItem;
  const content = body.content.map((p, i) => {
    const prev = old.content[i];
    if (!prev || prev.type !== p.type) return p;
    if ((p.type === 'input_audio' || p.type === 'output_audio') && p.transcript === null) return prev;
    if ((p.type === 'input_text' || p.type === 'output_text') && p.text === '') return prev;
    return p;
  });
  return { ...body, content, id: old.id };
}
