import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { BYTES_PER_MS } from '@s2s/core';
import { pcmTone } from '@s2s/local-provider';
import { WebSocketServer, type WebSocket } from 'ws';

export const FAKE_GEMINI_PATH = '/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent';
/** The fake's answer to every turn: 1 s of a 660 Hz tone at 24 kHz, in five 200 ms parts. */
export const FAKE_GEMINI_REPLY = pcmTone(1000, { frequencyHz: 660 });
const PART_BYTES = 200 * BYTES_PER_MS;

export interface FakeGeminiOptions {
  apiKey: string;
  /** Hold the first turn after its first part until the client sends more input (a barge-in window). */
  paced?: boolean;
  /** How a wrong key is refused: after the upgrade with a close (default, 1008 + reason), or HTTP 403. */
  refuse?: 'close' | 'http';
  /** Send usageMetadata in the turnComplete message (default), in a message after it, or never. */
  usage?: 'with-turn-complete' | 'after' | 'none';
}

export interface FakeGemini {
  url: string;
  port: number;
  /** Every upgrade request: the key header it carried and its query string. */
  handshakes: { apiKeyHeader: string | undefined; search: string }[];
  /** Every JSON message received, in order. */
  messages: Record<string, any>[];
  /** All realtimeInput audio received (16 kHz PCM16LE), and each chunk's mimeType. */
  audio(): Buffer;
  mimeTypes: string[];
  /** Sends a message to every client (binary frame, as Gemini does). */
  broadcast(message: Record<string, unknown>): void;
  drop(): void;
  close(): Promise<void>;
}

/** Audio tokens the fake reports: 32 per second, as Gemini counts. */
export const geminiTokens = (ms: number) => Math.ceil((ms * 32) / 1000);

/** A fake Gemini Live endpoint speaking the BidiGenerateContent messages the adapter uses. */
export async function startFakeGemini(opts: FakeGeminiOptions): Promise<FakeGemini> {
  const handshakes: FakeGemini['handshakes'] = [];
  const messages: Record<string, any>[] = [];
  const mimeTypes: string[] = [];
  const chunks: Buffer[] = [];
  const wss = new WebSocketServer({ noServer: true });
  const server = createServer((_req, res) => res.writeHead(404).end());
  let turns = 0;

  server.on('upgrade', (req, socket: Socket, head) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const key = req.headers['x-goog-api-key'];
    handshakes.push({ apiKeyHeader: typeof key === 'string' ? key : undefined, search: url.search });
    if (url.pathname !== FAKE_GEMINI_PATH) return void socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
    const authorized = key === opts.apiKey;
    if (!authorized && opts.refuse === 'http') {
      const body = JSON.stringify({ error: { code: 403, message: `API key not valid: ${String(key)}`, status: 'PERMISSION_DENIED' } });
      return void socket.end(
        `HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    }
    wss.handleUpgrade(req, socket, head, (ws) => session(ws, authorized));
  });

  function session(ws: WebSocket, authorized: boolean): void {
    const send = (m: Record<string, unknown>) => ws.readyState === ws.OPEN && ws.send(Buffer.from(JSON.stringify(m)));
    let inputBytes = 0;
    let held: (() => void) | null = null;
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString()) as Record<string, any>;
      messages.push(msg);
      if (msg.setup) {
        if (!authorized) return ws.close(1008, 'API key not valid. Please pass a valid API key.');
        return send({ setupComplete: {} });
      }
      const input = msg.realtimeInput;
      if (!input) return;
      if (held) {
        const release = held;
        held = null;
        release();
      }
      if (input.audio) {
        mimeTypes.push(input.audio.mimeType);
        const pcm = Buffer.from(input.audio.data, 'base64');
        chunks.push(pcm);
        inputBytes += pcm.length;
      }
      if (input.audioStreamEnd) {
        const inMs = Math.floor(inputBytes / 32);
        inputBytes = 0;
        reply(inMs);
      }
    });

    function reply(inMs: number): void {
      const paced = opts.paced && turns === 0;
      turns++;
      const parts: Buffer[] = [];
      for (let off = 0; off < FAKE_GEMINI_REPLY.length; off += PART_BYTES) parts.push(FAKE_GEMINI_REPLY.subarray(off, off + PART_BYTES));
      const sendPart = (p: Buffer) =>
        send({
          serverContent: { modelTurn: { parts: [{ inlineData: { mimeType: 'audio/pcm;rate=24000', data: p.toString('base64') } }] } },
        });
      const usageMetadata = {
        promptTokenCount: geminiTokens(inMs) + 7,
        responseTokenCount: geminiTokens(1000),
        totalTokenCount: geminiTokens(inMs) + 7 + geminiTokens(1000),
        promptTokensDetails: [
          { modality: 'TEXT', tokenCount: 7 },
          { modality: 'AUDIO', tokenCount: geminiTokens(inMs) },
        ],
        responseTokensDetails: [{ modality: 'AUDIO', tokenCount: geminiTokens(1000) }],
      };
      const finish = () => {
        for (const p of parts.slice(1)) sendPart(p);
        send({ serverContent: { generationComplete: true } });
        if (opts.usage === 'after') {
          send({ serverContent: { turnComplete: true } });
          send({ usageMetadata });
        } else if (opts.usage === 'none') send({ serverContent: { turnComplete: true } });
        else send({ serverContent: { turnComplete: true }, usageMetadata });
      };
      sendPart(parts[0]!);
      if (paced) held = finish;
      else finish();
    }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `ws://127.0.0.1:${port}${FAKE_GEMINI_PATH}`,
    port,
    handshakes,
    messages,
    mimeTypes,
    audio: () => Buffer.concat(chunks),
    broadcast: (m) => {
      for (const ws of wss.clients) ws.send(Buffer.from(JSON.stringify(m)));
    },
    drop: () => {
      for (const ws of wss.clients) ws.terminate();
    },
    close: async () => {
      for (const ws of wss.clients) ws.terminate();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
