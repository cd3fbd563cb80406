// A small end-to-end client of the gateway: creates a session over HTTP, attaches to its realtime URL,
// streams a WAV file (or a generated tone) in real time as 20 ms frames, saves the spoken answer as a WAV
// file, ends the session and prints its final usage and billing.
//
//   S2S_API_KEY=vr_sk_... npm run demo -- [--wav input.wav] [--out answer.wav] [--model local/echo-1]
//                                          [--instructions TEXT] [--tool]
//
// --instructions sets the model's instructions in the first session.update. --tool declares a demo function
// tool, `lookup_order`, asks for it after the spoken turn (a user text item; on the local provider
// `call lookup_order {...}` makes the call), answers the call with a made-up order status, and has the model
// speak the result. Transcripts are printed as they arrive, and the bill by modality at the end.
//
// BASE_URL (default http://127.0.0.1:8080) is the control plane; the key may also be given as --key.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/** What this script uses of the `ws` client (scripts/ has no dependencies of its own: ws comes from the relay's). */
interface WsClient {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number): void;
  on(event: 'open', fn: () => void): this;
  on(event: 'message', fn: (data: Buffer) => void): this;
  on(event: 'close', fn: (code: number, reason: Buffer) => void): this;
  on(event: 'error', fn: (err: Error) => void): this;
  on(
    event: 'unexpected-response',
    fn: (
      req: unknown,
      res: { statusCode?: number; on(e: 'data', f: (c: Buffer) => void): void; on(e: 'end', f: () => void): void },
    ) => void,
  ): this;
}
type WsConstructor = new (url: string, protocols: string, opts: { headers: Record<string, string> }) => WsClient;
const WebSocket = createRequire(new URL('../services/relay/package.json', import.meta.url))('ws') as WsConstructor;

const SAMPLE_RATE = 24000;
const FRAME_MS = 20;
const BYTES_PER_MS = 48;
const PROTOCOL = 'svc-realtime-v1';

interface Args {
  key: string;
  wav: string | undefined;
  out: string;
  model: string;
  baseUrl: string;
  instructions: string | undefined;
  tool: boolean;
}

const FLAGS = ['key', 'wav', 'out', 'model', 'instructions', 'tool'];
const USAGE = 'use --wav FILE, --out FILE, --model ID, --key KEY, --instructions TEXT, --tool';
const DEMO_TOOL = {
  type: 'function',
  name: 'lookup_order',
  description: 'Looks up the delivery status of an order by its number.',
  parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
};

function parseArgs(argv: string[]): Args {
  const named = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    const name = a.startsWith('--') ? a.slice(2) : '';
    if (!FLAGS.includes(name)) {
      console.error(`Unexpected argument ${JSON.stringify(a)}: ${USAGE}`);
      process.exit(2);
    }
    named.set(name, name === 'tool' ? 'yes' : (argv[++i] ?? ''));
  }
  const key = named.get('key') ?? process.env.S2S_API_KEY ?? '';
  if (!key) {
    console.error('An API key is needed: set S2S_API_KEY or pass --key vr_sk_...');
    process.exit(2);
  }
  return {
    key,
    wav: named.get('wav'),
    out: named.get('out') ?? 'answer.wav',
    model: named.get('model') ?? 'local/echo-1',
    baseUrl: (process.env.BASE_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, ''),
    instructions: named.get('instructions'),
    tool: named.has('tool'),
  };
}

// ---- audio ----

/** 1 s of a 440 Hz tone then 1 s of silence: one spoken turn for the server VAD. */
function demoAudio(): Buffer {
  const pcm = Buffer.alloc(2 * SAMPLE_RATE * 2);
  for (let i = 0; i < SAMPLE_RATE; i++) pcm.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / SAMPLE_RATE)), i * 2);
  return pcm;
}

/** PCM16 WAV → raw PCM16LE mono 24 kHz (channels averaged, rate converted linearly). */
function readWav(path: string): Buffer {
  const file = readFileSync(path);
  if (file.toString('ascii', 0, 4) !== 'RIFF' || file.toString('ascii', 8, 12) !== 'WAVE') throw new Error(`${path} is not a WAV file`);
  let fmt: { format: number; channels: number; rate: number; bits: number } | null = null;
  let data: Buffer | null = null;
  for (let off = 12; off + 8 <= file.length;) {
    const id = file.toString('ascii', off, off + 4);
    const size = file.readUInt32LE(off + 4);
    const body = file.subarray(off + 8, off + 8 + size);
    if (id === 'fmt ')
      fmt = { format: body.readUInt16LE(0), channels: body.readUInt16LE(2), rate: body.readUInt32LE(4), bits: body.readUInt16LE(14) };
    if (id === 'data') data = body;
    off += 8 + size + (size & 1);
  }
  if (!fmt || !data) throw new Error(`${path} has no fmt or data chunk`);
  if (fmt.format !== 1 || fmt.bits !== 16) throw new Error(`${path} must be 16-bit PCM (format ${fmt.format}, ${fmt.bits} bits)`);
  const frames = Math.floor(data.length / (2 * fmt.channels));
  const mono = new Float64Array(frames);
  for (let i = 0; i < frames; i++) {
    let sum = 0;
    for (let c = 0; c < fmt.channels; c++) sum += data.readInt16LE((i * fmt.channels + c) * 2);
    mono[i] = sum / fmt.channels;
  }
  const outFrames = Math.floor((frames * SAMPLE_RATE) / fmt.rate);
  const out = Buffer.alloc(outFrames * 2);
  for (let i = 0; i < outFrames; i++) {
    const pos = (i * fmt.rate) / SAMPLE_RATE;
    const i0 = Math.floor(pos);
    const a = mono[i0] ?? 0;
    const b = mono[i0 + 1] ?? a;
    out.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(a + (b - a) * (pos - i0)))), i * 2);
  }
  // Trailing silence, so that the server VAD sees the end of the turn.
  return Buffer.concat([out, Buffer.alloc(700 * BYTES_PER_MS)]);
}

function wavFile(pcm: Buffer): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + pcm.length, 4);
  header.write('WAVEfmt ', 8, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(SAMPLE_RATE, 24);
  header.writeUInt32LE(SAMPLE_RATE * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(pcm.length, 40);
  return Buffer.concat([header, pcm]);
}

// ---- HTTP ----

async function call<T>(args: Args, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${args.baseUrl}${path}`, {
    method,
    headers: { Authorization: `Bearer ${args.key}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await res.json()) as T & { error?: { code: string; message: string; request_id: string } };
  if (!res.ok) {
    throw new Error(`${method} ${path}: ${res.status} ${json.error?.code}: ${json.error?.message} (request ${json.error?.request_id})`);
  }
  return json;
}

interface VoiceSession {
  id: string;
  status: string;
  realtime: { url: string; protocol: string };
  billing: { preauthorized_cents: number; balance_cents: number; reserved_cents: number };
  usage: { audio_in_ms: number; audio_out_ms: number; billed_cents: number } & Record<string, number | string>;
}

// ---- realtime ----

interface ServerEvent {
  type: string;
  [k: string]: unknown;
}

/** One answer: resolves at its response.done with whatever function calls it made. */
interface Answer {
  calls: { call_id: string; name: string; arguments: string }[];
}

async function converse(session: VoiceSession, args: Args, audio: Buffer): Promise<Buffer> {
  const ws = new WebSocket(session.realtime.url, PROTOCOL, { headers: { Authorization: `Bearer ${args.key}` } });
  const answer: Buffer[] = [];
  let current: { id: string; calls: Answer['calls']; resolve: (a: Answer) => void } | null = null;
  let pending: ((a: Answer) => void) | null = null;
  let answers = 0;
  let ready!: () => void;
  const readyP = new Promise<void>((r) => (ready = r));
  let fail!: (err: Error) => void;
  const failed = new Promise<never>((_, reject) => (fail = reject));
  failed.catch(() => {});
  const send = (e: Record<string, unknown>) => ws.send(JSON.stringify(e));
  /** The next answer the model gives (the VAD's or one asked for). */
  const nextAnswer = () => Promise.race([new Promise<Answer>((r) => (pending = r)), failed]);

  ws.on('message', (data) => {
    const e = JSON.parse(data.toString()) as ServerEvent;
    switch (e.type) {
      case 'session.updated':
        ready();
        break;
      case 'input_audio_buffer.speech_started':
      case 'input_audio_buffer.speech_stopped':
        console.log(`  ${e.type.split('.').pop()} at ${String(e.audio_start_ms ?? e.audio_end_ms)} ms`);
        break;
      case 'conversation.item.input_audio_transcription.completed':
        console.log(`  you said: ${String(e.transcript)}`);
        break;
      case 'response.output_audio_transcript.done':
        console.log(`  model said: ${String(e.transcript)}`);
        break;
      case 'response.output_text.done':
        console.log(`  model wrote: ${String(e.text)}`);
        break;
      case 'response.function_call_arguments.done':
        console.log(`  model calls ${String(e.name)}(${String(e.arguments)})`);
        current?.calls.push({ call_id: String(e.call_id), name: String(e.name), arguments: String(e.arguments) });
        break;
      case 'response.created': {
        const resolve = pending ?? (() => {});
        pending = null;
        current = { id: (e.response as { id: string }).id, calls: [], resolve };
        console.log(`  answer ${current.id} started`);
        break;
      }
      case 'response.output_audio.delta':
        if (e.response_id === current?.id) answer.push(Buffer.from(e.audio as string, 'base64'));
        break;
      case 'response.done': {
        const r = e.response as { id: string; status: string; usage: Record<string, number> };
        if (r.id !== current?.id) break;
        console.log(`  answer ${r.status}; usage of this response: ${JSON.stringify(r.usage)}`);
        answers++;
        const done = current;
        current = null;
        done.resolve({ calls: done.calls });
        break;
      }
      case 'error':
        console.error(`  error event: ${JSON.stringify(e.error)}`);
        break;
    }
  });
  ws.on('close', (code, reason) => fail(new Error(`socket closed (${code} ${reason.toString()}) before the conversation was over`)));
  ws.on('error', fail);
  ws.on('unexpected-response', (_req, res) => {
    let text = '';
    res.on('data', (c) => (text += c.toString()));
    res.on('end', () => fail(new Error(`attach to ${session.realtime.url} refused with ${res.statusCode}: ${text}`)));
  });
  ws.on('open', () => {
    // The upstream opens with the client's first settings: instructions, tools and transcription go in
    // before any audio.
    send({
      type: 'session.update',
      session: {
        audio: { input: { transcription: {} } },
        ...(args.instructions ? { instructions: args.instructions } : {}),
        ...(args.tool ? { tools: [DEMO_TOOL] } : {}),
      },
    });
  });
  await Promise.race([readyP, failed]);
  console.log(`attached to ${session.realtime.url}`);

  try {
    const spoken = nextAnswer();
    // Real time: frame k leaves at start + k * 20 ms, whatever the timer jitter.
    const frameBytes = FRAME_MS * BYTES_PER_MS;
    const start = performance.now();
    for (let k = 0, off = 0; off < audio.length; k++, off += frameBytes) {
      const wait = start + k * FRAME_MS - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      send({ type: 'input_audio_buffer.append', audio: audio.subarray(off, off + frameBytes).toString('base64') });
    }
    console.log(`streamed ${Math.round(audio.length / BYTES_PER_MS)} ms of audio`);
    // Without a turn the VAD recognised, ask for the answer explicitly.
    const nudge = setTimeout(() => {
      if (answers === 0 && current === null) {
        send({ type: 'input_audio_buffer.commit' });
        send({ type: 'response.create' });
      }
    }, 1500);
    await spoken.finally(() => clearTimeout(nudge));

    if (args.tool) {
      // Ask for the tool in a text turn; the local provider calls it when the text says `call <tool> <JSON>`.
      const asked = nextAnswer();
      // What is left in the input buffer (the silence after the turn) is not part of the question.
      send({ type: 'input_audio_buffer.clear' });
      send({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'call lookup_order {"order_id":"42"}' }] },
      });
      send({ type: 'response.create' });
      const { calls } = await asked;
      for (const call of calls) {
        const output = JSON.stringify({ order_id: '42', status: 'shipped', arrives: 'tomorrow' });
        console.log(`  answering ${call.name}: ${output}`);
        send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: call.call_id, output } });
      }
      if (calls.length > 0) {
        const result = nextAnswer();
        send({ type: 'response.create' });
        await result;
      }
    }
  } finally {
    ws.close(1000);
  }
  return Buffer.concat(answer);
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const audio = args.wav ? readWav(args.wav) : demoAudio();
  const session = await call<VoiceSession>(args, 'POST', '/v1/voice/sessions', { model: args.model, mode: 'speech_to_speech' });
  console.log(`session ${session.id} (${session.status}); preauthorized ${session.billing.preauthorized_cents} cents`);
  try {
    const answer = await converse(session, args, audio);
    writeFileSync(args.out, wavFile(answer));
    console.log(`saved ${Math.round(answer.length / BYTES_PER_MS)} ms of answer to ${args.out}`);
  } finally {
    const ended = await call<VoiceSession>(args, 'POST', `/v1/voice/sessions/${session.id}/end`);
    console.log(`session ${ended.id}: ${ended.status}`);
    const { model: _m, provider: _p, pricing_source: _s, rate_snapshot_id: _r, billed_cents: _b, ...counters } = ended.usage;
    console.log(
      `  usage: ${Object.entries(counters)
        .map(([k, v]) => `${k} ${String(v)}`)
        .join(', ')}`,
    );
    console.log(
      `  billed ${ended.usage.billed_cents} cents; wallet available ${ended.billing.balance_cents} cents, still reserved ${ended.billing.reserved_cents}`,
    );
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
