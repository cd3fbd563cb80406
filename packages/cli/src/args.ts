import { parseArgs, type ParseArgsConfig } from 'node:util';

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080';
export const DEFAULT_MODEL = 'local/echo-1';

export const USAGE = `Usage: s2s <command> [flags]

Commands:
  models                         the public, priced catalog
  sessions create [--model ID] [--idempotency-key KEY]
  sessions get <session_id>
  sessions end <session_id> [--reason client_closed|timeout|error]
  talk (--wav FILE | --mic [--seconds N] | --tone) [--out FILE] [--model ID] [--instructions TEXT] [--voice NAME] [--tool]
                                 a spoken conversation with live progress, transcripts, the running cost and the bill;
                                 --tone speaks a generated 1 s 440 Hz tone (a turn for the local simulator)
  call (--twilio | --webrtc) --wav FILE [--out FILE] [--model ID] [--instructions TEXT]
                                 a call with the question in FILE, the answer saved as WAV, the bill;
                                 --twilio: a simulated phone call, Twilio's media-stream protocol to
                                 /v1/telephony/twilio, 20 ms μ-law frames (the answer at 8 kHz);
                                 --webrtc: a WebRTC call to /v1/realtime/calls, Opus on the tracks, the events
                                 on oai-events, the transcripts printed (the answer at 24 kHz)

Flags of every command:
  --base-url URL   the gateway (default: S2S_BASE_URL, else ${DEFAULT_BASE_URL})
  --key KEY        the API key (default: S2S_API_KEY)
  --json           print the gateway's JSON answer (models, sessions)
  -h, --help       this help`;

/** A command line the CLI refuses: printed with the usage, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

const common = {
  'base-url': { type: 'string' },
  key: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];

const talkOptions = {
  ...common,
  wav: { type: 'string' },
  mic: { type: 'boolean' },
  tone: { type: 'boolean' },
  seconds: { type: 'string' },
  out: { type: 'string' },
  model: { type: 'string' },
  instructions: { type: 'string' },
  voice: { type: 'string' },
  tool: { type: 'boolean' },
} as const satisfies ParseArgsConfig['options'];

const callOptions = {
  ...common,
  twilio: { type: 'boolean' },
  webrtc: { type: 'boolean' },
  wav: { type: 'string' },
  out: { type: 'string' },
  model: { type: 'string' },
  instructions: { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

export interface CallOptions {
  /** What the call speaks: Twilio's media streams, or WebRTC. */
  via: 'twilio' | 'webrtc';
  wav: string;
  out: string;
  model: string;
  instructions: string | undefined;
}

export interface Connection {
  baseUrl: string;
  key: string | undefined;
  json: boolean;
}

export type Command =
  | { kind: 'help' }
  | ({ kind: 'models' } & Connection)
  | ({ kind: 'sessions.create'; model: string; idempotencyKey: string | undefined } & Connection)
  | ({ kind: 'sessions.get'; id: string } & Connection)
  | ({ kind: 'sessions.end'; id: string; reason: 'client_closed' | 'timeout' | 'error' | undefined } & Connection)
  | ({ kind: 'talk' } & Connection & TalkOptions)
  | ({ kind: 'call' } & Connection & CallOptions);

export interface TalkOptions {
  input: { wav: string } | { mic: true; seconds: number | undefined } | { tone: true };
  out: string;
  model: string;
  instructions: string | undefined;
  voice: string | undefined;
  tool: boolean;
}

function parse<O extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: O, positionals: number) {
  let parsed;
  try {
    parsed = parseArgs({ args, options, strict: true, allowPositionals: positionals > 0 });
  } catch (err) {
    // node:util's messages name the flag ("Unknown option '--base'"); the usage follows.
    throw new UsageError((err as Error).message);
  }
  if (parsed.positionals.length > positionals) throw new UsageError(`Unexpected argument '${parsed.positionals[positionals]}'`);
  return parsed;
}

function connection(
  values: { 'base-url'?: string | undefined; key?: string | undefined; json?: boolean | undefined },
  env: Env,
): Connection {
  const baseUrl = (values['base-url'] ?? env.S2S_BASE_URL ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]/.test(baseUrl)) throw new UsageError(`--base-url must be an http(s) URL, not '${baseUrl}'`);
  return { baseUrl, key: values.key ?? env.S2S_API_KEY, json: values.json ?? false };
}

export type Env = Readonly<Record<string, string | undefined>>;

/** The command of `argv` (without node and the script), or a UsageError saying what is wrong. */
export function parseCommand(argv: string[], env: Env): Command {
  const [first, ...rest] = argv;
  if (first === undefined || first === '-h' || first === '--help' || first === 'help') return { kind: 'help' };
  if (first === 'models') {
    const { values } = parse(rest, common, 0);
    return values.help ? { kind: 'help' } : { kind: 'models', ...connection(values, env) };
  }
  if (first === 'sessions') {
    const [verb, ...more] = rest;
    if (verb === 'create') {
      const { values } = parse(more, { ...common, model: { type: 'string' }, 'idempotency-key': { type: 'string' } }, 0);
      if (values.help) return { kind: 'help' };
      return {
        kind: 'sessions.create',
        model: values.model ?? DEFAULT_MODEL,
        idempotencyKey: values['idempotency-key'],
        ...connection(values, env),
      };
    }
    if (verb === 'get' || verb === 'end') {
      const { values, positionals } = parse(more, { ...common, ...(verb === 'end' ? { reason: { type: 'string' } } : {}) }, 1);
      if (values.help) return { kind: 'help' };
      const id = positionals[0];
      if (!id) throw new UsageError(`sessions ${verb} needs a session id`);
      if (verb === 'get') return { kind: 'sessions.get', id, ...connection(values, env) };
      const reason = (values as { reason?: string }).reason;
      if (reason !== undefined && reason !== 'client_closed' && reason !== 'timeout' && reason !== 'error') {
        throw new UsageError(`--reason must be client_closed, timeout or error, not '${reason}'`);
      }
      return { kind: 'sessions.end', id, reason, ...connection(values, env) };
    }
    throw new UsageError(verb === undefined ? 'sessions needs create, get or end' : `Unknown sessions command '${verb}'`);
  }
  if (first === 'talk') {
    const { values } = parse(rest, talkOptions, 0);
    if (values.help) return { kind: 'help' };
    if ([values.wav, values.mic, values.tone].filter(Boolean).length !== 1)
      throw new UsageError('talk needs exactly one of --wav FILE, --mic or --tone');
    let seconds: number | undefined;
    if (values.seconds !== undefined) {
      if (!values.mic) throw new UsageError('--seconds goes with --mic');
      seconds = Number(values.seconds);
      if (!(seconds > 0 && seconds <= 3600))
        throw new UsageError(`--seconds must be a number of seconds up to 3600, not '${values.seconds}'`);
    }
    return {
      kind: 'talk',
      ...connection(values, env),
      input: values.wav ? { wav: values.wav } : values.mic ? { mic: true, seconds } : { tone: true },
      out: values.out ?? 'answer.wav',
      model: values.model ?? DEFAULT_MODEL,
      instructions: values.instructions,
      voice: values.voice,
      tool: values.tool ?? false,
    };
  }
  if (first === 'call') {
    const { values } = parse(rest, callOptions, 0);
    if (values.help) return { kind: 'help' };
    if (values.twilio === values.webrtc) throw new UsageError('call needs one of --twilio or --webrtc (what the call speaks)');
    if (!values.wav) throw new UsageError('call needs --wav FILE (the question)');
    return {
      kind: 'call',
      ...connection(values, env),
      via: values.twilio ? 'twilio' : 'webrtc',
      wav: values.wav,
      out: values.out ?? 'answer.wav',
      model: values.model ?? DEFAULT_MODEL,
      instructions: values.instructions,
    };
  }
  throw new UsageError(`Unknown command '${first}'`);
}
