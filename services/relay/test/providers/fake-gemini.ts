import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  MediaModality,
  type LiveClientMessage,
  type LiveClientSetup,
  type LiveServerMessage,
  type ModalityTokenCount,
  type UsageMetadata,
} from '@google/genai';
import { BYTES_PER_MS } from '@s2s/core';
import type { TokenReport } from '../../src/agent/types.js';
import { pcmTone } from '@s2s/local-provider';
import { WebSocketServer, type WebSocket } from 'ws';

export const FAKE_GEMINI_PATH = '/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent';
/** The fake's answer to every turn: 1 s of a 660 Hz tone at 24 kHz, in five 200 ms parts. */
export const FAKE_GEMINI_REPLY = pcmTone(1000, { frequencyHz: 660 });
const PART_BYTES = 200 * BYTES_PER_MS;
/** The transcript of the fake's spoken reply, in two pieces: `a tone ` with the first part, then this. */
export const FAKE_GEMINI_TRANSCRIPT = 'of a second';
/** Text tokens the fake counts: 1 per 4 characters. */
export const textTokens = (text: string) => Math.ceil(text.length / 4);
/** Text tokens the fake counts in every prompt (its stand-in for a system preamble). */
export const FAKE_GEMINI_PROMPT_TEXT_TOKENS = 7;
/** How long a paced turn waits for the client before Gemini goes on generating (it has no cancel to wait for). */
const PACED_HOLD_MS = 100;

/** A server message as it travels: the SDK's LiveServerMessage without its convenience getters. */
export type GeminiServerFrame = Omit<LiveServerMessage, 'text' | 'data'>;

export interface FakeGeminiOptions {
  apiKey: string;
  /**
   * The first turn stops after its first part (a barge-in window). Input arriving then interrupts it, as
   * Gemini's activity detection does (`interrupted`, then `turnComplete` with the usage of what it generated);
   * without input it goes on after a moment and completes (Gemini has no cancel message to wait for).
   */
  paced?: boolean;
  /** How a wrong key is refused: after the upgrade with a close (default, 1008 + reason), or HTTP 403. */
  refuse?: 'close' | 'http';
  /** Send usageMetadata in the turnComplete message (default), in a message after it, or never. */
  usage?: 'with-turn-complete' | 'after' | 'none';
  /**
   * Honour `setup.sessionResumption`: a resumable handle after setupComplete and after every completed turn,
   * and a setup carrying a handle resumes (the handles are only recorded). Off by default.
   */
  resumption?: boolean;
  /** Every connection ends this long after it opens, as Gemini's do: `goAway` ahead (a third of it), then the close. */
  capMs?: number;
}

export interface FakeGemini {
  url: string;
  port: number;
  /** Every upgrade request: the key header it carried and its query string. */
  handshakes: { apiKeyHeader: string | undefined; search: string }[];
  /** Every JSON message received, in order. */
  messages: LiveClientMessage[];
  /** All realtimeInput audio received (16 kHz PCM16LE), and each chunk's mimeType. */
  audio(): Buffer;
  mimeTypes: string[];
  /** Sends a message to every client (binary frame, as Gemini does). */
  broadcast(message: GeminiServerFrame): void;
  drop(): void;
  /** Announces the end of every connection (`goAway` with `timeLeft`), then closes them (1001) when it is up. */
  goAway(timeLeftMs: number): void;
  /** From now on, new connections are refused with HTTP 503 (an outage), or accepted again. */
  setRefusing(refusing: boolean): void;
  /** The handle each resuming setup carried, in order. */
  resumedWith: string[];
  close(): Promise<void>;
}

/** Audio tokens the fake reports: 32 per second, as Gemini counts. */
export const geminiTokens = (ms: number) => Math.ceil((ms * 32) / 1000);

/** The token report the adapter must make of fakeGeminiUsage(inMs, outMs). */
export function fakeGeminiTokens(inMs: number, outMs: number): TokenReport {
  return {
    inputAudioTokens: geminiTokens(inMs),
    inputTextTokens: FAKE_GEMINI_PROMPT_TEXT_TOKENS,
    cachedInputTokens: 0,
    outputAudioTokens: geminiTokens(outMs),
    outputTextTokens: 0,
    transcribedMs: 0,
  };
}

/** The fake's report for one turn: its prompt (a text preamble and the turn's audio) and the audio it generated. */
export function fakeGeminiUsage(inMs: number, outMs: number): UsageMetadata {
  const prompt = FAKE_GEMINI_PROMPT_TEXT_TOKENS + geminiTokens(inMs);
  return {
    promptTokenCount: prompt,
    responseTokenCount: geminiTokens(outMs),
    totalTokenCount: prompt + geminiTokens(outMs),
    promptTokensDetails: [
      { modality: MediaModality.TEXT, tokenCount: FAKE_GEMINI_PROMPT_TEXT_TOKENS },
      { modality: MediaModality.AUDIO, tokenCount: geminiTokens(inMs) },
    ],
    responseTokensDetails: [{ modality: MediaModality.AUDIO, tokenCount: geminiTokens(outMs) }],
  };
}

/**
 * A fake Gemini Live endpoint speaking the BidiGenerateContent messages the adapter uses, typed by the SDK's own
 * types. Audio turns (ended by audioStreamEnd or activityEnd) are answered with FAKE_GEMINI_REPLY; with the
 * transcriptions the setup asks for, the input transcript is `speech <ms> ms` and the spoken one
 * `a tone of a second`. Text turns (clientContent) are answered like the local simulator: `call <tool> <JSON>`
 * with a function call, anything else with itself; a tool response with its output; written in TEXT
 * modality, else spoken (the tone, the text as its transcript).
 */
export async function startFakeGemini(opts: FakeGeminiOptions): Promise<FakeGemini> {
  const handshakes: FakeGemini['handshakes'] = [];
  const messages: LiveClientMessage[] = [];
  const mimeTypes: string[] = [];
  const chunks: Buffer[] = [];
  const wss = new WebSocketServer({ noServer: true });
  const server = createServer((_req, res) => res.writeHead(404).end());
  let turns = 0;
  let handles = 0;
  let refusing = false;
  const resumedWith: string[] = [];

  server.on('upgrade', (req, socket: Socket, head) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const key = req.headers['x-goog-api-key'];
    handshakes.push({ apiKeyHeader: typeof key === 'string' ? key : undefined, search: url.search });
    if (refusing) return void socket.end('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n');
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

  /** Announces the end of `clients` (`goAway` with `timeLeft`), then closes them (1001) when it is up. */
  function goAway(clients: WebSocket[], timeLeftMs: number): void {
    for (const ws of clients)
      if (ws.readyState === ws.OPEN)
        ws.send(Buffer.from(JSON.stringify({ goAway: { timeLeft: `${timeLeftMs / 1000}s` } } satisfies GeminiServerFrame)));
    setTimeout(() => {
      for (const ws of clients) ws.close(1001, 'session time limit');
    }, timeLeftMs).unref();
  }

  function session(ws: WebSocket, authorized: boolean): void {
    const send = (m: GeminiServerFrame) => ws.readyState === ws.OPEN && ws.send(Buffer.from(JSON.stringify(m)));
    if (opts.capMs) {
      const lead = Math.floor(opts.capMs / 3);
      const cap = setTimeout(() => goAway([ws], lead), opts.capMs - lead);
      cap.unref();
      ws.on('close', () => clearTimeout(cap));
    }
    let inputBytes = 0;
    let setup: LiveClientSetup = {};
    /** User text given by clientContent since the last answer. */
    let pendingText = '';
    /** Text tokens the session's text and tool turns have brought into the context. */
    let context = 0;
    let calls = 0;
    /** A paced turn waiting: `interrupt` on client input, else `resume` when its hold ends. */
    let held: { interrupt: () => void; resume: () => void; timer: NodeJS.Timeout } | null = null;
    ws.on('message', (data) => {
      const msg = JSON.parse(data.toString()) as LiveClientMessage;
      messages.push(msg);
      if (msg.setup) {
        if (!authorized) return ws.close(1008, 'API key not valid. Please pass a valid API key.');
        setup = msg.setup;
        const handle = setup.sessionResumption?.handle;
        if (handle !== undefined) resumedWith.push(handle);
        send({ setupComplete: {} });
        return resumable();
      }
      if (msg.clientContent) {
        for (const turn of msg.clientContent.turns ?? []) for (const part of turn.parts ?? []) pendingText += part.text ?? '';
        if (msg.clientContent.turnComplete) answerText();
        return;
      }
      if (msg.toolResponse) {
        // An output given as `{ output }` is spoken as it is, any other response as its JSON.
        const outputs = (msg.toolResponse.functionResponses ?? []).map((r) =>
          typeof r.response?.output === 'string' && Object.keys(r.response).length === 1
            ? r.response.output
            : JSON.stringify(r.response ?? {}),
        );
        return speakOrWrite(outputs.join(' '), FAKE_GEMINI_PROMPT_TEXT_TOKENS + textTokens(outputs.join('')));
      }
      const input = msg.realtimeInput;
      if (!input) return;
      if (held) {
        const h = held;
        held = null;
        clearTimeout(h.timer);
        h.interrupt();
      }
      if (input.audio) {
        mimeTypes.push(input.audio.mimeType ?? '');
        const pcm = Buffer.from(input.audio.data ?? '', 'base64');
        chunks.push(pcm);
        inputBytes += pcm.length;
      }
      if (input.audioStreamEnd || input.activityEnd) {
        const inMs = Math.floor(inputBytes / 32);
        inputBytes = 0;
        // The input transcript comes before the answer, in two pieces, as Gemini streams it.
        if (setup.inputAudioTranscription) {
          send({ serverContent: { inputTranscription: { text: 'speech ' } } });
          send({ serverContent: { inputTranscription: { text: `${inMs} ms`, finished: true } } });
        }
        reply(inMs);
      }
    });

    /** A new resumption handle, when the setup asked for them and the fake honours them. */
    function resumable(): void {
      if (opts.resumption && setup.sessionResumption)
        send({ sessionResumptionUpdate: { newHandle: `handle_${++handles}`, resumable: true } });
    }

    /** `call <name> <JSON args>` for a declared tool is answered with that function call; other text with itself. */
    function answerText(): void {
      const text = pendingText;
      pendingText = '';
      const prompt = FAKE_GEMINI_PROMPT_TEXT_TOKENS + textTokens(text);
      const call = /^call (\S+) (.*)$/s.exec(text);
      const declared = (setup.tools ?? []).flatMap((t) =>
        typeof t === 'object' && 'functionDeclarations' in t ? (t.functionDeclarations ?? []) : [],
      );
      if (call && declared.some((d) => d.name === call[1])) {
        context += prompt;
        // Gemini waits for the tool response: no turnComplete, and the usage comes with the turn that follows.
        return void send({
          toolCall: { functionCalls: [{ id: `fc_${++calls}`, name: call[1], args: JSON.parse(call[2]!) as Record<string, unknown> }] },
        });
      }
      speakOrWrite(text, prompt);
    }

    /** A reply of `text`: written (TEXT modality) or spoken as the usual tone with `text` as its transcript. */
    function speakOrWrite(text: string, newTokens: number): void {
      const textOut = setup.generationConfig?.responseModalities?.[0] === 'TEXT';
      // The prompt is the whole context: what earlier text turns brought in is cached, as Gemini reports it.
      const cached = context;
      context += newTokens;
      const usage = (response: ModalityTokenCount): UsageMetadata => ({
        promptTokenCount: cached + newTokens,
        promptTokensDetails: [{ modality: MediaModality.TEXT, tokenCount: cached + newTokens }],
        ...(cached > 0
          ? { cachedContentTokenCount: cached, cacheTokensDetails: [{ modality: MediaModality.TEXT, tokenCount: cached }] }
          : {}),
        responseTokenCount: response.tokenCount ?? 0,
        responseTokensDetails: [response],
      });
      if (textOut) {
        const half = Math.ceil(text.length / 2);
        send({ serverContent: { modelTurn: { role: 'model', parts: [{ text: text.slice(0, half) }] } } });
        send({ serverContent: { modelTurn: { role: 'model', parts: [{ text: text.slice(half) }] } } });
        send({ serverContent: { generationComplete: true } });
        send({
          serverContent: { turnComplete: true },
          usageMetadata: usage({ modality: MediaModality.TEXT, tokenCount: textTokens(text) }),
        });
        return;
      }
      send({
        serverContent: {
          modelTurn: { parts: [{ inlineData: { mimeType: 'audio/pcm;rate=24000', data: FAKE_GEMINI_REPLY.toString('base64') } }] },
        },
      });
      if (setup.outputAudioTranscription) send({ serverContent: { outputTranscription: { text } } });
      send({ serverContent: { generationComplete: true } });
      send({
        serverContent: { turnComplete: true },
        usageMetadata: usage({ modality: MediaModality.AUDIO, tokenCount: geminiTokens(1000) }),
      });
    }

    function reply(inMs: number): void {
      const paced = opts.paced && turns === 0;
      turns++;
      const parts: Buffer[] = [];
      for (let off = 0; off < FAKE_GEMINI_REPLY.length; off += PART_BYTES) parts.push(FAKE_GEMINI_REPLY.subarray(off, off + PART_BYTES));
      const sendPart = (p: Buffer) =>
        send({
          serverContent: { modelTurn: { parts: [{ inlineData: { mimeType: 'audio/pcm;rate=24000', data: p.toString('base64') } }] } },
        } satisfies GeminiServerFrame);
      const complete = (usageMetadata: UsageMetadata) => {
        if (opts.usage === 'after') {
          send({ serverContent: { turnComplete: true } });
          send({ usageMetadata });
        } else if (opts.usage === 'none') send({ serverContent: { turnComplete: true } });
        else send({ serverContent: { turnComplete: true }, usageMetadata } satisfies GeminiServerFrame);
        resumable();
      };
      const finish = () => {
        for (const p of parts.slice(1)) sendPart(p);
        if (setup.outputAudioTranscription) send({ serverContent: { outputTranscription: { text: FAKE_GEMINI_TRANSCRIPT } } });
        send({ serverContent: { generationComplete: true } });
        complete(fakeGeminiUsage(inMs, FAKE_GEMINI_REPLY.length / BYTES_PER_MS));
      };
      sendPart(parts[0]!);
      if (setup.outputAudioTranscription) send({ serverContent: { outputTranscription: { text: 'a tone ' } } });
      if (!paced) return finish();
      held = {
        // Interrupted turns end without generationComplete: interrupted, then turnComplete (as the SDK documents).
        interrupt: () => {
          send({ serverContent: { interrupted: true } });
          complete(fakeGeminiUsage(inMs, parts[0]!.length / BYTES_PER_MS));
        },
        resume: finish,
        timer: setTimeout(() => {
          const h = held;
          held = null;
          h?.resume();
        }, PACED_HOLD_MS),
      };
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
    resumedWith,
    goAway: (timeLeftMs) => goAway([...wss.clients], timeLeftMs),
    setRefusing: (r) => {
      refusing = r;
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
