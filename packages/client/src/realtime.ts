import {
  ServerEvent,
  type ClientEvent,
  type ResponseCreateEvent,
  type ResponseDoneEvent,
  type SessionUpdatedEvent,
  type SessionUpdateEvent,
  type VoiceSession,
} from '@s2s/contract';
import { BYTES_PER_MS, chunkPcm, DEFAULT_FRAME_MS, fromBase64, pcmBytes, toBase64, type PcmInput } from './audio.js';
import { S2SError, S2SRealtimeClosedError } from './errors.js';
import { openSocket, type BrowserWebSocketConstructor, type SocketLike } from './websocket.js';

export type ServerEventType = ServerEvent['type'];
/** How long `close()` waits for the peer's half of the closing handshake. */
const CLOSE_TIMEOUT_MS = 5000;

/** The server event of one `type`, e.g. `ServerEventOf<'response.done'>`. */
export type ServerEventOf<T extends ServerEventType> = Extract<ServerEvent, { type: T }>;
export type ClientEventType = ClientEvent['type'];
/** Every client event, with `event_id` optional as on the wire. */
export type ClientEventOf<T extends ClientEventType> = Extract<ClientEvent, { type: T }>;

/** A function call the model made, from `response.function_call_arguments.done`. */
export type ToolCall = Pick<
  ServerEventOf<'response.function_call_arguments.done'>,
  'call_id' | 'name' | 'arguments' | 'response_id' | 'item_id'
>;
/** Answers a tool call with its output (a string; objects are sent as JSON). */
export type ToolHandler = (call: ToolCall) => unknown;

export interface CloseInfo {
  code: number;
  reason: string;
}

export interface ConnectOptions {
  /** `vr_sk_…` API key (Node) or `ek_…` client secret (Node or browser). */
  credential: string;
  /** Check every server event against the contract's schema; a mismatch fails the connection. */
  validate?: boolean | undefined;
  /** A WebSocket constructor to use instead of the environment's. */
  WebSocket?: BrowserWebSocketConstructor | undefined;
  /** How long to wait for `session.created` (default 10 s). */
  timeoutMs?: number | undefined;
}

type Listener = (event: ServerEvent) => void;

/**
 * One attachment of a voice session over svc-realtime-v1 (api-v1 §6, decisions.md "The full realtime event
 * model"): typed server events, client events, PCM helpers and tool-call answering. Made by
 * `S2SClient.realtime.connect`, which resolves once `session.created` has arrived.
 */
export class RealtimeConnection {
  /** The voice session resource of `session.created`. */
  session!: VoiceSession;
  /** Resolves when the socket has closed, whoever closed it. */
  readonly closed: Promise<CloseInfo>;

  readonly #socket: SocketLike;
  readonly #url: string;
  readonly #validate: boolean;
  readonly #listeners = new Map<string, Set<Listener>>();
  readonly #closeListeners = new Set<() => void>();
  #closeInfo: CloseInfo | null = null;
  #failure: S2SError | null = null;
  #resolveClosed!: (info: CloseInfo) => void;
  #seq = 0;

  /** @internal Use `S2SClient.realtime.connect`. */
  constructor(socket: SocketLike, url: string, validate: boolean) {
    this.#socket = socket;
    this.#url = url;
    this.#validate = validate;
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
    socket.onmessage = (ev) => this.#receive(ev.data);
    socket.onclose = (ev) => this.#closedWith({ code: ev.code, reason: String(ev.reason ?? '') });
    socket.onerror = () => {
      // A close event follows; the failure is reported there with its code.
    };
  }

  /** The URL this connection is attached to. */
  get url(): string {
    return this.#url;
  }

  get isOpen(): boolean {
    return this.#closeInfo === null && this.#socket.readyState === 1;
  }

  /** Listens to server events of one type (`'*'`: every event). Returns a function that stops listening. */
  on<T extends ServerEventType>(type: T, fn: (event: ServerEventOf<T>) => void): () => void;
  on(type: '*', fn: (event: ServerEvent) => void): () => void;
  on(type: string, fn: (event: never) => void): () => void {
    let set = this.#listeners.get(type);
    if (!set) this.#listeners.set(type, (set = new Set()));
    set.add(fn as Listener);
    return () => set.delete(fn as Listener);
  }

  /**
   * The next server event of `type` that satisfies `match`. Rejects when the socket closes first, or
   * after `timeoutMs`.
   */
  waitFor<T extends ServerEventType>(
    type: T,
    opts: { match?: (event: ServerEventOf<T>) => boolean; timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<ServerEventOf<T>> {
    return new Promise((resolve, reject) => {
      if (this.#closeInfo) return reject(this.#closedError());
      const cleanup = () => {
        off();
        offErr();
        if (timer) clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
      };
      const off = this.on(type, (e) => {
        if (opts.match && !opts.match(e)) return;
        cleanup();
        resolve(e);
      });
      const offErr = this.#onClose(() => {
        cleanup();
        reject(this.#closedError());
      });
      const timer =
        opts.timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              cleanup();
              reject(new S2SError(`realtime ${this.#url}: no ${type} within ${opts.timeoutMs} ms`, { url: this.#url }));
            }, opts.timeoutMs);
      const onAbort = () => {
        cleanup();
        reject(opts.signal?.reason ?? new Error('aborted'));
      };
      opts.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Sends a client event; an `event_id` is added when absent (so an `error` event can name it). Returns it. */
  send(event: ClientEvent): string {
    if (!this.isOpen) throw this.#closedError();
    const event_id = event.event_id ?? `evt_c${++this.#seq}`;
    this.#socket.send(JSON.stringify({ ...event, event_id }));
    return event_id;
  }

  /**
   * `session.update`, resolved with the effective settings of `session.updated`; rejected with the
   * `error` event's message (naming `error.param`) when the gateway refuses the update.
   */
  async updateSession(session: SessionUpdateEvent['session'], opts: { timeoutMs?: number } = {}): Promise<SessionUpdatedEvent['session']> {
    const updated = this.waitFor('session.updated', opts);
    const eventId = this.send({ type: 'session.update', session });
    const refused = this.waitFor('error', { match: (e) => e.error.event_id === eventId }).then((e) => {
      throw new S2SError(`session.update refused: ${e.error.code}${e.error.param ? ` (${e.error.param})` : ''}: ${e.error.message}`, {
        url: this.#url,
      });
    });
    try {
      return (await Promise.race([updated, refused])).session;
    } finally {
      updated.catch(() => {});
      refused.catch(() => {});
    }
  }

  /** Appends PCM16LE 24 kHz mono at once, in `frameMs` appends. Returns the bytes sent. */
  appendAudio(pcm: PcmInput, opts: { frameMs?: number } = {}): number {
    let sent = 0;
    for (const frame of chunkPcm(pcm, opts.frameMs ?? DEFAULT_FRAME_MS)) {
      this.send({ type: 'input_audio_buffer.append', audio: toBase64(frame) });
      sent += frame.byteLength;
    }
    return sent;
  }

  /**
   * Streams PCM in real time: frame k leaves at start + k × frameMs, however the timers drift. `onFrame`
   * sees the bytes sent so far; `signal` stops early. Resolves with the bytes sent.
   */
  async streamAudio(
    pcm: PcmInput,
    opts: { frameMs?: number; signal?: AbortSignal; onFrame?: (sentBytes: number) => void } = {},
  ): Promise<number> {
    const frameMs = opts.frameMs ?? DEFAULT_FRAME_MS;
    const frames = chunkPcm(pcm, frameMs);
    const start = performance.now();
    let sent = 0;
    for (let k = 0; k < frames.length; k++) {
      if (opts.signal?.aborted) break;
      const wait = start + k * frameMs - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const frame = frames[k] as Uint8Array;
      this.send({ type: 'input_audio_buffer.append', audio: toBase64(frame) });
      sent += frame.byteLength;
      opts.onFrame?.(sent);
    }
    return sent;
  }

  /** Calls `fn` with each output audio delta as PCM16LE bytes. Returns a function that stops it. */
  onAudio(fn: (pcm: Uint8Array, event: ServerEventOf<'response.output_audio.delta'>) => void): () => void {
    return this.on('response.output_audio.delta', (e) => fn(fromBase64(e.audio), e));
  }

  /** A user text message followed, unless `respond: false`, by `response.create`. */
  sendText(text: string, opts: { respond?: boolean } = {}): void {
    this.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] } });
    if (opts.respond !== false) this.createResponse();
  }

  /**
   * `response.create`; resolves with its `response.done` (usage of that response included). Both
   * listeners are in place before the request goes out: a short response's `response.created` and
   * `response.done` can arrive in one read, with no await between them.
   */
  createResponse(response?: ResponseCreateEvent['response'], opts: { timeoutMs?: number } = {}): Promise<ResponseDoneEvent> {
    let id: string | null = null;
    const offCreated = this.on('response.created', (c) => {
      id = c.response.id;
      offCreated();
    });
    const done = this.waitFor('response.done', { ...opts, match: (d) => id !== null && d.response.id === id });
    void done.then(offCreated, offCreated);
    this.send({ type: 'response.create', ...(response ? { response } : {}) });
    return done;
  }

  /** The `response.done` of the next response to finish. */
  nextResponseDone(opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<ResponseDoneEvent> {
    return this.waitFor('response.done', opts);
  }

  /**
   * Answers one function call: its `function_call_output` item, then (unless `respond: false`)
   * `response.create` so the model speaks the result. Send it after the call's `response.done`.
   */
  answerToolCall(callId: string, output: unknown, opts: { respond?: boolean } = {}): void {
    const text = typeof output === 'string' ? output : JSON.stringify(output);
    this.send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: callId, output: text } });
    if (opts.respond !== false) this.send({ type: 'response.create' });
  }

  /**
   * Runs `handler` for every function call the model makes (from `response.function_call_arguments.done`)
   * and answers it: once the calling response is done and every handler of it has returned, each output
   * becomes a `function_call_output` item, then one `response.create`. A handler that throws is answered
   * with `{"error": message}`. Returns a function that stops handling.
   */
  handleToolCalls(handler: ToolHandler): () => void {
    const pending = new Map<string, Promise<{ callId: string; output: string }>[]>();
    const offCall = this.on('response.function_call_arguments.done', (e) => {
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
    const offDone = this.on('response.done', (e) => {
      const list = pending.get(e.response.id);
      if (!list) return;
      pending.delete(e.response.id);
      void Promise.all(list).then((answers) => {
        if (!this.isOpen) return;
        for (const a of answers) this.answerToolCall(a.callId, a.output, { respond: false });
        this.send({ type: 'response.create' });
      });
    });
    return () => {
      offCall();
      offDone();
    };
  }

  /**
   * Closes the socket (1000 unless told) and resolves once it is closed. A peer that does not finish the
   * closing handshake within `timeoutMs` does not hold the caller: the socket is dropped (where the
   * runtime can, `ws`'s terminate) and the close is reported as 1006.
   */
  close(code = 1000, reason = '', timeoutMs = CLOSE_TIMEOUT_MS): Promise<CloseInfo> {
    if (this.#closeInfo !== null) return this.closed;
    if (this.#socket.readyState < 2) this.#socket.close(code, reason);
    const timer = setTimeout(() => {
      (this.#socket as SocketLike & { terminate?: () => void }).terminate?.();
      this.#closedWith({ code: 1006, reason: 'the closing handshake timed out' });
    }, timeoutMs);
    void this.closed.then(() => clearTimeout(timer));
    return this.closed;
  }

  /** @internal Resolves with the first `session.created`, or rejects when the socket fails first. */
  async opened(timeoutMs: number): Promise<this> {
    const created = await this.waitFor('session.created', { timeoutMs }).catch((err: unknown) => {
      if (this.#closeInfo === null) this.#socket.close(1000);
      throw this.#failure ?? err;
    });
    this.session = created.session;
    return this;
  }

  /** @internal The upgrade was refused (the ErrorResponse, when it could be read). */
  fail(err: S2SError): void {
    this.#failure ??= err;
  }

  #onClose(fn: () => void): () => void {
    this.#closeListeners.add(fn);
    return () => this.#closeListeners.delete(fn);
  }

  #closedError(): S2SError {
    if (this.#failure) return this.#failure;
    const info = this.#closeInfo ?? { code: 0, reason: 'not open' };
    return new S2SRealtimeClosedError({ url: this.#url, ...info });
  }

  #closedWith(info: CloseInfo): void {
    if (this.#closeInfo) return;
    this.#closeInfo = info;
    for (const fn of [...this.#closeListeners]) fn();
    this.#resolveClosed(info);
  }

  #receive(data: unknown): void {
    const text = typeof data === 'string' ? data : new TextDecoder().decode(data as Uint8Array);
    let event: ServerEvent;
    try {
      event = JSON.parse(text) as ServerEvent;
    } catch {
      return this.#protocolError('a server frame that is not JSON');
    }
    if (this.#validate) {
      const parsed = ServerEvent.safeParse(event);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        return this.#protocolError(
          `${String((event as { type?: unknown }).type)} does not match the contract: ${issue?.path.join('.')} ${issue?.message}`,
        );
      }
    }
    for (const key of [event.type, '*']) {
      for (const fn of [...(this.#listeners.get(key) ?? [])]) fn(event);
    }
  }

  #protocolError(message: string): void {
    this.fail(new S2SError(`realtime ${this.#url}: ${message}`, { url: this.#url }));
    // 1000: browsers let a page close only with 1000 or 3000-4999.
    this.#socket.close(1000, 'protocol error');
  }
}

/** Opens a realtime connection and waits for `session.created`. */
export async function connectRealtime(url: string, opts: ConnectOptions): Promise<RealtimeConnection> {
  // A refusal may be read before the connection exists (ws in Node): kept, then handed over.
  let early: S2SError | undefined;
  let onRefused = (err: S2SError) => {
    early = err;
  };
  const socket = await openSocket({ url, credential: opts.credential, WebSocket: opts.WebSocket, onRefused: (err) => onRefused(err) });
  const conn = new RealtimeConnection(socket, url, opts.validate ?? false);
  if (early) conn.fail(early);
  onRefused = (err) => conn.fail(err);
  return conn.opened(opts.timeoutMs ?? 10_000);
}

/** Milliseconds of PCM16 24 kHz mono in `pcm`. */
export function audioMs(pcm: PcmInput): number {
  return pcmBytes(pcm).byteLength / BYTES_PER_MS;
}
