// A realtime test client over `ws`: queues every server event; next() awaits the next one (of a type).
import type WebSocket from 'ws';

export interface ServerEventLike {
  type: string;
  event_id: string;
  [k: string]: unknown;
}

/** A test client: every server event is queued; next() awaits the next one (optionally of one type). */
export class Client {
  readonly events: ServerEventLike[] = [];
  private cursor = 0;
  private waiters: (() => void)[] = [];
  closeCode: number | null = null;
  closeReason = '';
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly headers: Record<string, string | string[] | undefined> = {};

  constructor(readonly ws: WebSocket) {
    ws.on('upgrade', (res) => Object.assign(this.headers, res.headers));
    ws.on('message', (data) => {
      this.events.push(JSON.parse(data.toString()) as ServerEventLike);
      this.wake();
    });
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        this.closeCode = code;
        this.closeReason = reason.toString();
        this.wake();
        resolve({ code, reason: this.closeReason });
      });
    });
    ws.on('error', () => {});
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** The next event (of `type` when given, skipping others); rejects if the socket closes first. */
  async next(type?: string, timeoutMs = 10_000): Promise<ServerEventLike> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      while (this.cursor < this.events.length) {
        const e = this.events[this.cursor++] as ServerEventLike;
        if (type === undefined || e.type === type) return e;
      }
      if (this.closeCode !== null) throw new Error(`socket closed (${this.closeCode}) while waiting for ${type ?? 'an event'}`);
      if (Date.now() > deadline) throw new Error(`no ${type ?? 'event'} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  send(event: unknown): void {
    this.ws.send(typeof event === 'string' ? event : JSON.stringify(event));
  }

  append(pcm: Buffer, eventId?: string): void {
    this.send({ type: 'input_audio_buffer.append', ...(eventId ? { event_id: eventId } : {}), audio: pcm.toString('base64') });
  }

  async close(): Promise<void> {
    if (this.closeCode === null) this.ws.close(1000);
    await this.closed;
  }
}
