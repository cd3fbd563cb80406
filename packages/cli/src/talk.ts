import { readFileSync, writeFileSync } from 'node:fs';
import {
  billOf,
  BYTES_PER_MS,
  decodeWav,
  encodeWav,
  pcmBytes,
  S2SClient,
  SAMPLE_RATE,
  S2SError,
  toGatewayPcm,
  USAGE_COUNTERS,
  type RealtimeConnection,
  type VoiceSession,
} from '@s2s/client';
import type { Connection, TalkOptions } from './args.js';
import { RunningCost } from './cost.js';
import { recordMicrophone } from './mic.js';
import { createProgress, type Output, type Progress } from './progress.js';

/** The demo tool of `--tool` (the local provider calls it when a text turn says `call lookup_order {...}`). */
export const DEMO_TOOL = {
  type: 'function' as const,
  name: 'lookup_order',
  description: 'Looks up the delivery status of an order by its number.',
  parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
};
const TOOL_QUESTION = 'call lookup_order {"order_id":"42"}';
/** Silence after the input, so the server VAD sees the turn end (it waits for 500 ms of it). */
const TRAILING_SILENCE_MS = 700;
/** How long a spoken turn may take to be answered before the CLI commits it and asks explicitly. */
const NUDGE_MS = 1500;
const ANSWER_TIMEOUT_MS = 30_000;

export interface TalkIo {
  stdout: Output;
  /** Ctrl-C: stops the microphone (a second one ends the process as usual). */
  onInterrupt(fn: () => void): void;
}

/**
 * `s2s talk`: a session, one spoken turn (a WAV file or the microphone), an optional tool round trip, the
 * answer saved as WAV, then the session ended and its settled bill printed. The session is ended whatever
 * fails on the way, so its reservation is never left held.
 */
export async function talk(cmd: Connection & TalkOptions, io: TalkIo): Promise<void> {
  const client = new S2SClient({ baseUrl: cmd.baseUrl, apiKey: cmd.key });
  const input = 'wav' in cmd.input ? readWavInput(cmd.input.wav) : 'tone' in cmd.input ? toneTurn() : null;
  const catalog = await client.models.list();
  const model = catalog.data.find((m) => m.id === cmd.model);
  if (!model) {
    const url = `${client.baseUrl}/v1/models`;
    throw new S2SError(
      `model ${cmd.model} is not in the catalog at ${url} (it lists: ${catalog.data.map((m) => m.id).join(', ') || 'nothing'})`,
      { url },
    );
  }
  const session = await client.sessions.create({ model: cmd.model });
  const progress = createProgress(io.stdout);
  progress.line(`session ${session.id} (${session.status}) on ${model.id}; preauthorized ${session.billing.preauthorized_cents} cents`);
  const cost = new RunningCost(model.pricing);
  const answer: Uint8Array[] = [];
  let failure: unknown = null;
  try {
    const conn = await client.realtime.connect(session);
    try {
      await converse(conn, cmd, io, progress, cost, answer, input);
    } finally {
      await conn.close();
    }
  } catch (err) {
    failure = err;
  } finally {
    progress.stop();
  }
  const ended = await client.sessions.end(session.id);
  printBill(io.stdout, ended, cost);
  if (failure) throw failure;
  const bytes = answer.reduce((n, a) => n + a.byteLength, 0);
  writeFileSync(cmd.out, encodeWav(Buffer.concat(answer)));
  io.stdout.write(`saved ${(bytes / BYTES_PER_MS / 1000).toFixed(2)} s of answer to ${cmd.out}\n`);
}

/** 1 s of a 440 Hz tone, then the trailing silence: one turn the local simulator's energy VAD recognises. */
function toneTurn(): Uint8Array {
  const tone = new Int16Array(SAMPLE_RATE);
  for (let i = 0; i < tone.length; i++) tone[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / SAMPLE_RATE));
  return Buffer.concat([pcmBytes(tone), Buffer.alloc(TRAILING_SILENCE_MS * BYTES_PER_MS)]);
}

function readWavInput(path: string): Uint8Array {
  let file: Buffer;
  try {
    file = readFileSync(path);
  } catch (err) {
    throw new Error(`cannot read --wav ${path}: ${(err as Error).message}`, { cause: err });
  }
  try {
    return Buffer.concat([toGatewayPcm(decodeWav(file)), Buffer.alloc(TRAILING_SILENCE_MS * BYTES_PER_MS)]);
  } catch (err) {
    throw new Error(`--wav ${path}: ${(err as Error).message}`, { cause: err });
  }
}

async function converse(
  conn: RealtimeConnection,
  cmd: TalkOptions,
  io: TalkIo,
  progress: Progress,
  cost: RunningCost,
  answer: Uint8Array[],
  input: Uint8Array | null,
): Promise<void> {
  let receivedBytes = 0;
  let started = 0;
  let finished = 0;
  conn.onAudio((pcm) => {
    answer.push(pcm);
    receivedBytes += pcm.byteLength;
    progress.received(receivedBytes / BYTES_PER_MS);
  });
  conn.on('response.created', () => started++);
  conn.on('response.done', (e) => {
    finished++;
    cost.add(e.response.usage);
    progress.cost(cost.cents, cost.responses);
  });
  conn.on('conversation.item.input_audio_transcription.completed', (e) => progress.line(`  you said: ${e.transcript}`));
  conn.on('response.output_audio_transcript.done', (e) => progress.line(`  model said: ${e.transcript}`));
  conn.on('response.output_text.done', (e) => progress.line(`  model wrote: ${e.text}`));
  conn.on('response.function_call_arguments.done', (e) => progress.line(`  model calls ${e.name}(${e.arguments})`));
  conn.on('error', (e) =>
    progress.line(`  gateway error ${e.error.code}${e.error.param ? ` (${e.error.param})` : ''}: ${e.error.message}`),
  );

  // The upstream opens with these settings, before any audio.
  await conn.updateSession(
    {
      audio: { input: { transcription: {} } },
      ...(cmd.instructions !== undefined ? { instructions: cmd.instructions } : {}),
      ...(cmd.voice !== undefined ? { voice: cmd.voice } : {}),
      ...(cmd.tool ? { tools: [DEMO_TOOL] } : {}),
    },
    { timeoutMs: ANSWER_TIMEOUT_MS },
  );
  progress.line(`attached to ${conn.url}`);

  if (input) {
    const totalMs = input.byteLength / BYTES_PER_MS;
    await conn.streamAudio(input, { onFrame: (sent) => progress.sent(sent / BYTES_PER_MS, totalMs) });
  } else {
    await recordTurn(conn, cmd, io, progress);
  }
  // The VAD answers a turn it recognised; without one, commit what was sent and ask.
  const nudge = setTimeout(() => {
    if (started === 0 && conn.isOpen) {
      conn.send({ type: 'input_audio_buffer.commit' });
      conn.send({ type: 'response.create' });
    }
  }, NUDGE_MS);
  try {
    if (finished === 0) await conn.nextResponseDone({ timeoutMs: ANSWER_TIMEOUT_MS });
  } finally {
    clearTimeout(nudge);
  }
  // A response still under way (the microphone may have caught a second turn) is heard to its end.
  while (finished < started) await conn.nextResponseDone({ timeoutMs: ANSWER_TIMEOUT_MS });

  if (cmd.tool) {
    conn.handleToolCalls((call) => {
      const output = { order_id: '42', status: 'shipped', arrives: 'tomorrow' };
      progress.line(`  answering ${call.name}: ${JSON.stringify(output)}`);
      return output;
    });
    // What is left in the input buffer (the silence after the turn) is not part of the question.
    conn.send({ type: 'input_audio_buffer.clear' });
    conn.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: TOOL_QUESTION }] },
    });
    const calling = new Set<string>();
    conn.on('response.function_call_arguments.done', (e) => calling.add(e.response_id));
    const asked = await conn.createResponse(undefined, { timeoutMs: ANSWER_TIMEOUT_MS });
    if (calling.has(asked.response.id)) {
      // The calls are answered once `asked` is done; their response.create starts the spoken result.
      await conn.waitFor('response.done', { match: (e) => e.response.id !== asked.response.id, timeoutMs: ANSWER_TIMEOUT_MS });
    }
  }
}

/** Streams the microphone until Ctrl-C or `--seconds`, then the trailing silence that ends the turn. */
async function recordTurn(conn: RealtimeConnection, cmd: TalkOptions, io: TalkIo, progress: Progress): Promise<void> {
  const rec = recordMicrophone();
  const seconds = 'mic' in cmd.input ? cmd.input.seconds : undefined;
  progress.line(`recording from the microphone${seconds ? ` for ${seconds} s` : ''}; Ctrl-C stops`);
  let sent = 0;
  // `--seconds` counts from the recorder's first sample, not from its start: a recorder slow to start (a
  // loaded machine) would otherwise be stopped before it recorded anything.
  let timer: NodeJS.Timeout | undefined;
  rec.onAudio((pcm) => {
    if (seconds && !timer) timer = setTimeout(() => rec.stop(), seconds * 1000);
    if (!conn.isOpen) return;
    sent += conn.appendAudio(pcm);
    progress.sent(sent / BYTES_PER_MS);
  });
  io.onInterrupt(() => rec.stop());
  try {
    await Promise.race([rec.done, conn.closed.then(() => rec.stop())]);
  } finally {
    if (timer) clearTimeout(timer);
  }
  if (conn.isOpen) await conn.streamAudio(new Uint8Array(TRAILING_SILENCE_MS * BYTES_PER_MS));
}

function printBill(out: Output, ended: VoiceSession, cost: RunningCost): void {
  const bill = billOf(ended);
  out.write(`session ${bill.sessionId}: ${bill.status}\n`);
  out.write(`  usage: ${USAGE_COUNTERS.map((c) => `${c} ${bill.usage[c]}`).join(', ')}\n`);
  out.write(
    `  billed ${bill.billedCents} cents (responses alone: ${cost.billedCents}); ` +
      `wallet available ${bill.walletAvailableCents} cents, preauthorized ${bill.preauthorizedCents}, still reserved ${ended.billing.reserved_cents}\n`,
  );
}
