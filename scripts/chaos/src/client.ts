// A client of the public contract that counts what it actually sent and received, so the bill can be
// checked against it: HTTP for create/end/get, the realtime WebSocket for audio.
import WebSocket from 'ws';
import { sleep } from './infra.js';
import { unreadByPeer } from './tcp.js';

const REALTIME_PROTOCOL = 'svc-realtime-v1';
const MODEL = 'local/echo-1';
/** PCM16 mono 24 kHz. */
const BYTES_PER_MS = 48;
/** Audio goes out in chunks of this many ms, each when its time has come (real time). */
export const CHUNK_MS = 100;

/** Loud enough for the simulator's VAD; the same chunk repeated (phase-continuous at 440 Hz per 100 ms). */
const TONE_B64 = (() => {
  const samples = (CHUNK_MS * 24000) / 1000;
  const b = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) b.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 24000)), i * 2);
  return b.toString('base64');
})();
const SILENCE_B64 = Buffer.alloc(CHUNK_MS * BYTES_PER_MS).toString('base64');

/** Every HTTP answer by status class, shared by all clients of a scenario. */
export class HttpTally {
  readonly byStatus = new Map<number, number>();
  networkErrors = 0;
  record(status: number): void {
    this.byStatus.set(status, (this.byStatus.get(status) ?? 0) + 1);
  }
  count(pred: (status: number) => boolean): number {
    let n = 0;
    for (const [s, c] of this.byStatus) if (pred(s)) n += c;
    return n;
  }
}

export interface Api {
  baseUrl: string;
  tally: HttpTally;
}

export async function call<T = Record<string, unknown>>(
  api: Api,
  method: string,
  path: string,
  opts: { body?: unknown; bearer?: string; timeoutMs?: number } = {},
): Promise<{ status: number; body: T | null }> {
  const headers: Record<string, string> = {};
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  if (opts.bearer) headers.Authorization = `Bearer ${opts.bearer}`;
  try {
    const res = await fetch(`${api.baseUrl}${path}`, {
      method,
      headers,
      signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    });
    api.tally.record(res.status);
    const text = await res.text();
    let body: T | null = null;
    try {
      body = text ? (JSON.parse(text) as T) : null;
    } catch {
      body = null;
    }
    return { status: res.status, body };
  } catch {
    api.tally.networkErrors++;
    return { status: 0, body: null };
  }
}

/** What the API answers about a session (the parts the campaign reads). */
export interface SessionView {
  id: string;
  status: string;
  billing: { preauthorized_cents: number; reserved_cents: number };
  usage: { audio_in_ms: number; audio_out_ms: number; billed_cents: number };
}

/** An API key on a freshly credited wallet, made through the operator API. */
export async function operatorKey(api: Api, adminToken: string, balanceCents: number): Promise<{ key: string; walletId: string }> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const res = await call<{ key: string; wallet_id: string }>(api, 'POST', '/admin/v1/keys', {
      bearer: adminToken,
      body: { balance_cents: balanceCents, label: 'chaos' },
    });
    if (res.status === 201 && res.body) return { key: res.body.key, walletId: res.body.wallet_id };
    await sleep(500);
  }
  throw new Error('the operator API did not create a key');
}

/**
 * One voice session as a client lives it. `sentInMs` counts input the client handed to an open socket;
 * `receivedOutMs` the output audio it received. Attachments are counted (a re-attach after a relay loss).
 */
export class ChaosSession {
  id = '';
  sentInMs = 0;
  receivedOutMs = 0;
  attachments = 0;
  responsesDone = 0;
  /** Close codes of every socket of this session, in order. */
  readonly closeCodes: number[] = [];
  /** Set by the scenario when the client stopped on purpose before the end (vanished). */
  vanished = false;
  /**
   * Input the relay read from this client's sockets, from its `frames_in` (every event this client sends is
   * a 100 ms append); null when the scenario did not collect it.
   */
  relayReadInMs: number | null = null;
  /**
   * relay-kill: input no relay ever read, measured at the kill (docs/chaos.md): what was still in TCP when the
   * relay was frozen, and what the client sent between the freeze and its socket's close.
   */
  unreadAtKillInMs = 0;
  /** The client's end of its current socket and the relay's port: where /proc/net/tcp lists them. */
  tcp: { local: number; remote: number } | null = null;
  final: SessionView | null = null;
  endStatuses: number[] = [];
  errors: string[] = [];

  private ws: WebSocket | null = null;
  /** Bytes of the last append on the wire (its WebSocket frame). */
  private chunkWireBytes = 0;
  private firstDelta: (() => void) | null = null;
  private doneWaiters: (() => void)[] = [];

  constructor(
    readonly label: string,
    private readonly key: string,
  ) {}

  async create(api: Api): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const res = await call<SessionView>(api, 'POST', '/v1/voice/sessions', {
        bearer: this.key,
        body: { model: MODEL, mode: 'speech_to_speech' },
      });
      if (res.status === 201 && res.body) {
        this.id = res.body.id;
        return;
      }
      await sleep(500);
    }
    throw new Error(`${this.label}: session create kept failing`);
  }

  get attached(): boolean {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  /** Attaches to a relay and waits for conversation.created; retried a few times (a relay restarting). */
  async attach(relayUrl: string, attempts = 10): Promise<void> {
    let lastErr: unknown;
    for (let i = 0; i < attempts; i++) {
      try {
        await this.attachOnce(relayUrl);
        return;
      } catch (err) {
        lastErr = err;
        await sleep(300);
      }
    }
    throw new Error(`${this.label}: attach failed: ${String(lastErr)}`);
  }

  private attachOnce(relayUrl: string): Promise<void> {
    const ws = new WebSocket(`${relayUrl}?session_id=${encodeURIComponent(this.id)}`, REALTIME_PROTOCOL, {
      headers: { Authorization: `Bearer ${this.key}` },
      perMessageDeflate: false,
    });
    ws.once('upgrade', (res) => {
      const { localPort, remotePort } = res.socket;
      this.tcp = localPort !== undefined && remotePort !== undefined ? { local: localPort, remote: remotePort } : null;
    });
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        ws.terminate();
        reject(new Error('no conversation.created within 10 s'));
      }, 10_000);
      ws.on('message', (data) => {
        const e = JSON.parse(data.toString()) as { type: string; audio?: string };
        if (e.type === 'conversation.created') {
          clearTimeout(timer);
          this.ws = ws;
          this.attachments++;
          resolve();
        } else if (e.type === 'response.output_audio.delta' && typeof e.audio === 'string') {
          this.receivedOutMs += Buffer.byteLength(e.audio, 'base64') / BYTES_PER_MS;
          const f = this.firstDelta;
          this.firstDelta = null;
          f?.();
        } else if (e.type === 'response.done') {
          this.responsesDone++;
          const w = this.doneWaiters;
          this.doneWaiters = [];
          for (const f of w) f();
        }
      });
      ws.on('unexpected-response', (_req, res) => {
        clearTimeout(timer);
        reject(new Error(`attach refused: ${res.statusCode}`));
        res.resume();
      });
      ws.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      ws.on('close', (code) => {
        clearTimeout(timer);
        this.closeCodes.push(code);
        if (this.ws === ws) this.ws = null;
        reject(new Error(`closed (${code}) before conversation.created`));
      });
    });
  }

  /** Sends one chunk if the socket is open; counts it as sent only then. */
  private sendChunk(b64: string): boolean {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return false;
    const text = `{"type":"input_audio_buffer.append","audio":"${b64}"}`;
    ws.send(text);
    this.sentInMs += CHUNK_MS;
    // On the wire: a masked client frame, its header 2 + 4 bytes plus an extended length past 125 bytes.
    const payload = Buffer.byteLength(text);
    this.chunkWireBytes = payload + (payload < 126 ? 6 : payload < 65_536 ? 8 : 14);
    return true;
  }

  /**
   * relay-kill: the relay serving this socket is frozen (SIGSTOP) and about to be killed; `table` is
   * /proc/net/tcp read now. Its unread bytes (whole chunks, a partly read one included: the relay never had
   * it whole) and every chunk sent from now until the socket closes are input no relay read.
   */
  relayFrozen(table: string): void {
    const ws = this.ws;
    if (!ws || !this.tcp || this.chunkWireBytes === 0) return;
    const sentAtFreeze = this.sentInMs;
    const unreadMs = Math.min(sentAtFreeze, Math.ceil(unreadByPeer(table, this.tcp) / this.chunkWireBytes) * CHUNK_MS);
    ws.once('close', () => (this.unreadAtKillInMs += unreadMs + (this.sentInMs - sentAtFreeze)));
  }

  /**
   * Speaks in real time: `toneMs` of tone, then `silenceMs` of silence (the simulator answers after 500 ms
   * of it). Stops early, returning false, when the socket is gone or `stop()` says so.
   */
  async speak(toneMs: number, silenceMs: number, stop: () => boolean = () => false): Promise<boolean> {
    const chunks = [
      ...Array<string>(Math.round(toneMs / CHUNK_MS)).fill(TONE_B64),
      ...Array<string>(Math.round(silenceMs / CHUNK_MS)).fill(SILENCE_B64),
    ];
    const t0 = Date.now();
    for (let i = 0; i < chunks.length; i++) {
      if (stop()) return false;
      const due = t0 + i * CHUNK_MS;
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
      if (!this.sendChunk(chunks[i] as string)) return false;
    }
    return true;
  }

  /**
   * One spoken turn, 1 s of tone and 700 ms of silence (the simulator answers after 500 ms of it), and the
   * whole answer to it; false when the socket went away or the answer did not come.
   */
  async turn(stop: () => boolean = () => false): Promise<boolean> {
    const answered = this.nextDone(8000);
    const spoken = await this.speak(1000, 700, stop);
    const ok = spoken && (await answered);
    // The last frames go out after the answer: let them reach the relay before whatever the caller does next
    // (an end request travels another path and could overtake them; the relay then never accepts them).
    await sleep(300);
    return ok;
  }

  /** Resolves at the next output delta (or after `timeoutMs`). */
  nextDelta(timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.firstDelta = null;
        resolve(false);
      }, timeoutMs);
      this.firstDelta = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }

  /** Resolves at the next response.done (or after `timeoutMs`). */
  nextDone(timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.doneWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Resolves when the current socket closes (immediately when there is none). */
  socketClosed(timeoutMs: number): Promise<void> {
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      ws.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /**
   * The client disappears: the TCP connection drops, no close frame. With answer audio unread in its kernel
   * the close is abortive (a RST), which can discard its last input before the relay reads it (docs/chaos.md).
   */
  vanish(): void {
    this.vanished = true;
    this.ws?.terminate();
  }

  /** Closes the socket cleanly (1000). */
  async closeSocket(): Promise<void> {
    const ws = this.ws;
    if (!ws) return;
    if (ws.readyState === WebSocket.OPEN) ws.close(1000);
    await this.socketClosed(3000);
    ws.terminate();
  }

  /** POST …/end once; records the status (200 settled, 409 not yet, 503 store down, 0 no answer). */
  async end(api: Api, timeoutMs = 30_000): Promise<number> {
    const res = await call<SessionView>(api, 'POST', `/v1/voice/sessions/${this.id}/end`, { bearer: this.key, timeoutMs });
    this.endStatuses.push(res.status);
    if (res.status === 200 && res.body && res.body.billing.reserved_cents === 0 && isTerminal(res.body.status)) this.final = res.body;
    return res.status;
  }

  async get(api: Api): Promise<{ status: number; body: SessionView | null }> {
    return call<SessionView>(api, 'GET', `/v1/voice/sessions/${this.id}`, { bearer: this.key, timeoutMs: 10_000 });
  }

  /**
   * Ends the session and waits until it is settled: the end is repeated (a 409 or 503 says "not yet")
   * and the resource read back, for at most `timeoutMs`.
   */
  async endAndSettle(api: Api, timeoutMs: number): Promise<SessionView | null> {
    const deadline = Date.now() + timeoutMs;
    while (!this.final && Date.now() < deadline) {
      const status = await this.end(api, Math.max(1000, Math.min(30_000, deadline - Date.now())));
      if (this.final) break;
      if (status !== 200) await sleep(1000);
      else await this.waitSettled(api, Math.min(5000, deadline - Date.now()));
    }
    return this.final;
  }

  /** Reads the resource until it is settled (terminal, nothing reserved), for at most `timeoutMs`. */
  async waitSettled(api: Api, timeoutMs: number): Promise<SessionView | null> {
    const deadline = Date.now() + timeoutMs;
    while (!this.final && Date.now() < deadline) {
      const res = await this.get(api);
      if (res.status === 200 && res.body && res.body.billing.reserved_cents === 0 && isTerminal(res.body.status)) {
        this.final = res.body;
        break;
      }
      await sleep(500);
    }
    return this.final;
  }
}

function isTerminal(status: string): boolean {
  return status === 'completed' || status === 'cancelled' || status === 'failed' || status === 'expired';
}
