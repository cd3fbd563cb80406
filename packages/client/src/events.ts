import { S2SError } from './errors.js';

/** The event of `type` in the union `E`, e.g. `EventOf<ServerEvent, 'response.done'>`. */
export type EventOf<E, T> = Extract<E, { type: T }>;

/** A function call the model made, from `response.function_call_arguments.done`. */
export interface ToolCall {
  call_id: string;
  name: string;
  arguments: string;
  response_id: string;
  item_id: string;
}
/** Answers a tool call with its output (a string; objects are sent as JSON). */
export type ToolHandler = (call: ToolCall) => unknown;

/** What every server event has. */
interface Typed {
  type: string;
}
/** What every client event has. */
interface Sendable {
  type: string;
  event_id?: string | undefined;
}
type Listener = (event: never) => void;
/** The events the helpers below read: the same shapes in both dialects. */
interface ResponseRef {
  response: { id: string };
}

/**
 * The event side of a realtime attachment, whatever carries it (the svc-realtime-v1 socket, a WebRTC call's
 * `oai-events` channel): typed listeners, `waitFor`, `send` with event ids, and the helpers that are the same
 * in every dialect (text turns, responses, tool calls). `S` is the union of server events, `C` of client events.
 */
export abstract class RealtimeEvents<S extends Typed, C extends Sendable> {
  readonly #listeners = new Map<string, Set<Listener>>();
  readonly #closeListeners = new Set<() => void>();
  #seq = 0;

  /** Where the events come from (a socket URL, a call's URL): named in errors. */
  abstract readonly url: string;
  /** True while events can be sent. */
  abstract readonly isOpen: boolean;
  /** Sends one serialized client event. */
  protected abstract transmit(text: string): void;
  /** The error that the transport's end (or failure) is reported as. */
  protected abstract closedError(): S2SError;
  /** True once the transport has ended. */
  protected abstract get isEnded(): boolean;

  /** Listens to server events of one type (`'*'`: every event). Returns a function that stops listening. */
  on<T extends S['type']>(type: T, fn: (event: EventOf<S, T>) => void): () => void;
  on(type: '*', fn: (event: S) => void): () => void;
  on(type: string, fn: (event: never) => void): () => void {
    let set = this.#listeners.get(type);
    if (!set) this.#listeners.set(type, (set = new Set()));
    set.add(fn);
    return () => set.delete(fn);
  }

  /**
   * The next server event of `type` that satisfies `match`. Rejects when the transport ends first, or
   * after `timeoutMs`.
   */
  waitFor<T extends S['type']>(
    type: T,
    opts: { match?: (event: EventOf<S, T>) => boolean; timeoutMs?: number | undefined; signal?: AbortSignal | undefined } = {},
  ): Promise<EventOf<S, T>> {
    return new Promise((resolve, reject) => {
      if (this.isEnded) return reject(this.closedError());
      const cleanup = () => {
        off();
        offEnd();
        if (timer) clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
      };
      const off = this.on(type, (e) => {
        if (opts.match && !opts.match(e)) return;
        cleanup();
        resolve(e);
      });
      const offEnd = this.onEnd(() => {
        cleanup();
        reject(this.closedError());
      });
      const timer =
        opts.timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              cleanup();
              reject(new S2SError(`realtime ${this.url}: no ${type} within ${opts.timeoutMs} ms`, { url: this.url }));
            }, opts.timeoutMs);
      const onAbort = () => {
        cleanup();
        reject(opts.signal?.reason ?? new Error('aborted'));
      };
      opts.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Sends a client event; an `event_id` is added when absent (so an `error` event can name it). Returns it. */
  send(event: C): string {
    if (!this.isOpen) throw this.closedError();
    const event_id = event.event_id ?? `evt_c${++this.#seq}`;
    this.transmit(JSON.stringify({ ...event, event_id }));
    return event_id;
  }

  /** A user text message followed, unless `respond: false`, by `response.create`. */
  sendText(text: string, opts: { respond?: boolean } = {}): void {
    this.#send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] } });
    if (opts.respond !== false) void this.createResponse().catch(() => undefined);
  }

  /**
   * `response.create` (with an optional `response` object); resolves with its `response.done` (the usage of
   * that response included). Both listeners are in place before the request goes out: a short response's
   * `response.created` and `response.done` can arrive in one read, with no await between them.
   */
  createResponse(response?: object, opts: { timeoutMs?: number } = {}): Promise<EventOf<S, 'response.done'>> {
    let id: string | null = null;
    const offCreated = this.#on('response.created', (c: ResponseRef) => {
      id = c.response.id;
      offCreated();
    });
    const done = this.#waitFor('response.done', { ...opts, match: (d) => id !== null && d.response.id === id });
    void done.then(offCreated, offCreated);
    this.#send({ type: 'response.create', ...(response ? { response } : {}) });
    return done as Promise<EventOf<S, 'response.done'>>;
  }

  /** The `response.done` of the next response to finish. */
  nextResponseDone(opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<EventOf<S, 'response.done'>> {
    return this.#waitFor('response.done', opts) as Promise<EventOf<S, 'response.done'>>;
  }

  /**
   * Answers one function call: its `function_call_output` item, then (unless `respond: false`)
   * `response.create` so the model speaks the result. Send it after the call's `response.done`.
   */
  answerToolCall(callId: string, output: unknown, opts: { respond?: boolean } = {}): void {
    const text = typeof output === 'string' ? output : JSON.stringify(output);
    this.#send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: callId, output: text } });
    if (opts.respond !== false) this.#send({ type: 'response.create' });
  }

  /**
   * Runs `handler` for every function call the model makes (from `response.function_call_arguments.done`)
   * and answers it: once the calling response is done and every handler of it has returned, each output
   * becomes a `function_call_output` item, then one `response.create`. A handler that throws is answered
   * with `{"error": message}`. Returns a function that stops handling.
   */
  handleToolCalls(handler: ToolHandler): () => void {
    const pending = new Map<string, Promise<{ callId: string; output: string }>[]>();
    const offCall = this.#on('response.function_call_arguments.done', (e: ToolCall) => {
      const call: ToolCall = { call_id: e.call_id, name: e.name, arguments: e.arguments, response_id: e.response_id, item_id: e.item_id };
      const answer = Promise.resolve()
        .then(() => handler(call))
        .then(
          (out) => ({ callId: e.call_id, output: typeof out === 'string' ? out : JSON.stringify(out ?? null) }),
          (err: unknown) => ({ callId: e.call_id, output: JSON.stringify({ error: err instanceof Error ? err.message : String(err) }) }),
        );
      const list = pending.get(e.response_id) ?? [];
      list.push(answer);
      pending.set(e.response_id, list);
    });
    const offDone = this.#on('response.done', (e: ResponseRef) => {
      const list = pending.get(e.response.id);
      if (!list) return;
      pending.delete(e.response.id);
      void Promise.all(list).then((answers) => {
        if (!this.isOpen) return;
        for (const a of answers) this.answerToolCall(a.callId, a.output, { respond: false });
        this.#send({ type: 'response.create' });
      });
    });
    return () => {
      offCall();
      offDone();
    };
  }

  /** Hands a received server event to its listeners. */
  protected dispatch(event: S): void {
    for (const key of [event.type, '*']) {
      for (const fn of [...(this.#listeners.get(key) ?? [])]) (fn as (e: S) => void)(event);
    }
  }

  /** Tells every pending `waitFor` that the transport ended (call once, when it does). */
  protected notifyEnded(): void {
    for (const fn of [...this.#closeListeners]) fn();
  }

  protected onEnd(fn: () => void): () => void {
    this.#closeListeners.add(fn);
    return () => this.#closeListeners.delete(fn);
  }

  // The helpers' events exist with these shapes in every dialect: sent and read without the dialect's types.
  #send(event: Sendable & Record<string, unknown>): string {
    return this.send(event as unknown as C);
  }

  #on<E>(type: string, fn: (event: E) => void): () => void {
    return this.on(type as S['type'], fn as never);
  }

  #waitFor(type: string, opts: { match?: (event: ResponseRef) => boolean; timeoutMs?: number; signal?: AbortSignal }): Promise<unknown> {
    return this.waitFor(type as S['type'], opts as never);
  }
}

/** What `parseServerEvent` uses of a zod schema of the contract. */
export interface EventSchema {
  safeParse(value: unknown): { success: true } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } };
}

/**
 * A received frame as a server event, checked against `schema` when one is given; a string saying what is
 * wrong otherwise (the caller fails the transport with it).
 */
export function parseServerEvent<S>(data: unknown, schema: EventSchema | null): S | string {
  const text = typeof data === 'string' ? data : new TextDecoder().decode(data as Uint8Array);
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch {
    return 'a server frame that is not JSON';
  }
  if (typeof event !== 'object' || event === null || typeof (event as Typed).type !== 'string') return 'a server frame without a type';
  if (schema) {
    const parsed = schema.safeParse(event);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return `${(event as Typed).type} does not match the contract: ${issue?.path.map(String).join('.')} ${issue?.message}`;
    }
  }
  return event as S;
}

/**
 * A `session.update` (sent, with `eventId`) resolved with the settings of its `session.updated`, or rejected
 * with the `error` event that names it (its code and `error.param`).
 */
export async function settleUpdate<S extends Typed, C extends Sendable, U extends { session: unknown }>(
  events: RealtimeEvents<S, C>,
  eventId: string,
  updated: Promise<U>,
): Promise<U['session']> {
  const refused = (events as unknown as RealtimeEvents<Typed, C>)
    .waitFor('error', { match: (e) => (e as ErrorShape).error.event_id === eventId })
    .then((e) => {
      const { error } = e as ErrorShape;
      throw new S2SError(`session.update refused: ${error.code}${error.param ? ` (${error.param})` : ''}: ${error.message}`, {
        url: events.url,
      });
    });
  try {
    return (await Promise.race([updated, refused])).session;
  } finally {
    updated.catch(() => {});
    refused.catch(() => {});
  }
}

/** An `error` event, as both dialects send it. */
interface ErrorShape {
  error: { code: string | null; message: string; param?: string | null | undefined; event_id?: string | null | undefined };
}
