import WebSocket from 'ws';

export type Ev = { type: string; [k: string]: any };

/** A raw protocol client for the simulator: sends events, queues what comes back, waits for types. */
export class TestClient {
  readonly events: Ev[] = [];
  private cursor = 0;
  private waiter: (() => void) | null = null;
  closed = false;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.events.push(JSON.parse(data.toString()) as Ev);
      this.waiter?.();
    });
    ws.on('close', () => {
      this.closed = true;
      this.waiter?.();
    });
  }

  static connect(url: string, model: string | null, apiKey?: string): Promise<TestClient> {
    const target = model === null ? url : `${url}?model=${encodeURIComponent(model)}`;
    const ws = new WebSocket(target, { headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : {} });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new TestClient(ws)));
      ws.once('error', reject);
    });
  }

  /** Resolves with the HTTP status of a refused upgrade. */
  static refusal(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
    const ws = new WebSocket(url, { headers });
    return new Promise((resolve, reject) => {
      ws.once('open', () => reject(new Error('upgrade unexpectedly accepted')));
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      ws.once('error', () => {});
    });
  }

  send(event: Record<string, unknown>): void {
    this.ws.send(JSON.stringify(event));
  }

  append(pcm: Buffer): void {
    this.send({ type: 'input_audio_buffer.append', audio: pcm.toString('base64') });
  }

  /** Events received from the cursor up to and including the first one of `type`; moves the cursor past it. */
  async until(type: string): Promise<Ev[]> {
    for (;;) {
      const idx = this.events.findIndex((e, i) => i >= this.cursor && e.type === type);
      if (idx >= 0) {
        const out = this.events.slice(this.cursor, idx + 1);
        this.cursor = idx + 1;
        return out;
      }
      if (this.closed) throw new Error(`socket closed before ${type}`);
      await new Promise<void>((resolve) => (this.waiter = resolve));
      this.waiter = null;
    }
  }

  /** Waits for `type` and returns that event. */
  async next(type: string): Promise<Ev> {
    const evs = await this.until(type);
    return evs[evs.length - 1]!;
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.ws.once('close', () => resolve());
      this.ws.close();
    });
  }
}

export const types = (evs: Ev[]) => evs.map((e) => e.type);
export const deltaBytes = (evs: Ev[]) =>
  Buffer.concat(evs.filter((e) => e.type === 'response.output_audio.delta').map((e) => Buffer.from(e.delta as string, 'base64')));
