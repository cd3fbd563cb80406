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
import { parseServerEvent, RealtimeEvents, settleUpdate, type EventOf } from './events.js';
import { openSocket, type BrowserWebSocketConstructor, type SocketLike } from './websocket.js';

export type ServerEventType = ServerEvent['type'];
/** How long `close()` waits for the peer's half of the closing handshake. */
const CLOSE_TIMEOUT_MS = 5000;

/** The server event of one `type`, e.g. `ServerEventOf<'response.done'>`. */
export type ServerEventOf<T extends ServerEventType> = EventOf<ServerEvent, T>;
export type ClientEventType = ClientEvent['type'];
/** Every client event, with `event_id` optional as on the wire. */
export type ClientEventOf<T extends ClientEventType> = EventOf<ClientEvent, T>;

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

/**
 * One attachment of a voice session over svc-realtime-v1 (api-v1 §6, decisions.md "The full realtime event
 * model"): typed server events, client events, PCM helpers and tool-call answering. Made by
 * `S2SClient.realtime.connect`, which resolves once `session.created` has arrived.
 */
export class RealtimeConnection extends RealtimeEvents<ServerEvent, ClientEvent> {
  /** The voice session resource of `session.created`. */
  session!: VoiceSession;
  /** Resolves when the socket has closed, whoever closed it. */
  readonly closed: Promise<CloseInfo>;

  readonly #socket: SocketLike;
  readonly #url: string;
  readonly #validate: boolean;
  #closeInfo: CloseInfo | null = null;
  #failure: S2SError | null = null;
  #resolveClosed!: (info: CloseInfo) => void;

  /** @internal Use `S2SClient.realtime.connect`. */
  constructor(socket: SocketLike, url: string, validate: boolean) {
    super();
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

  protected get isEnded(): boolean {
    return this.#closeInfo !== null;
  }

  protected transmit(text: string): void {
    this.#socket.send(text);
  }

  /**
   * `session.update`, resolved with the effective settings of `session.updated`; rejected with the
   * `error` event's message (naming `error.param`) when the gateway refuses the update.
   */
  updateSession(session: SessionUpdateEvent['session'], opts: { timeoutMs?: number } = {}): Promise<SessionUpdatedEvent['session']> {
    return settleUpdate(this, this.send({ type: 'session.update', session }), this.waitFor('session.updated', opts));
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

  /**
   * `response.create`; resolves with its `response.done` (usage of that response included).
   */
  override createResponse(response?: ResponseCreateEvent['response'], opts: { timeoutMs?: number } = {}): Promise<ResponseDoneEvent> {
    return super.createResponse(response, opts);
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

  protected closedError(): S2SError {
    if (this.#failure) return this.#failure;
    const info = this.#closeInfo ?? { code: 0, reason: 'not open' };
    return new S2SRealtimeClosedError({ url: this.#url, ...info });
  }

  #closedWith(info: CloseInfo): void {
    if (this.#closeInfo) return;
    this.#closeInfo = info;
    this.notifyEnded();
    this.#resolveClosed(info);
  }

  #receive(data: unknown): void {
    const event = parseServerEvent<ServerEvent>(data, this.#validate ? ServerEvent : null);
    if (typeof event === 'string') return this.#protocolError(event);
    this.dispatch(event);
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
  const socket = openSocket({ url, credential: opts.credential, WebSocket: opts.WebSocket, onRefused: (err) => onRefused(err) });
  const conn = new RealtimeConnection(socket, url, opts.validate ?? false);
  if (early) conn.fail(early);
  onRefused = (err) => conn.fail(err);
  return conn.opened(opts.timeoutMs ?? 10_000);
}

/** Milliseconds of PCM16 24 kHz mono in `pcm`. */
export function audioMs(pcm: PcmInput): number {
  return pcmBytes(pcm).byteLength / BYTES_PER_MS;
}
