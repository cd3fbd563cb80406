import t from 'tap';
import type { Pricing } from '@s2s/contract';
import { parseCommand, RunningCost, UsageError } from '../src/index.js';

t.test('flags, environment and defaults', async (t) => {
  const env = { S2S_BASE_URL: 'http://gw.example:9500/', S2S_API_KEY: 'vr_sk_env' };
  t.same(parseCommand(['models'], {}), { kind: 'models', baseUrl: 'http://127.0.0.1:8080', key: undefined, json: false });
  t.same(parseCommand(['models', '--json'], env), { kind: 'models', baseUrl: 'http://gw.example:9500', key: 'vr_sk_env', json: true });
  t.match(parseCommand(['sessions', 'get', 'vs_1', '--base-url', 'http://other', '--key', 'vr_sk_flag'], env), {
    kind: 'sessions.get',
    id: 'vs_1',
    baseUrl: 'http://other',
    key: 'vr_sk_flag',
  });
  t.match(parseCommand(['sessions', 'end', 'vs_1', '--reason', 'timeout'], env), { kind: 'sessions.end', reason: 'timeout' });
  t.match(parseCommand(['sessions', 'create'], env), { kind: 'sessions.create', model: 'local/echo-1', idempotencyKey: undefined });
  t.match(parseCommand(['talk', '--wav', 'in.wav', '--voice', 'alloy', '--tool'], env), {
    kind: 'talk',
    input: { wav: 'in.wav' },
    out: 'answer.wav',
    voice: 'alloy',
    tool: true,
    instructions: undefined,
  });
  t.match(parseCommand(['talk', '--mic', '--seconds', '2.5'], env), { input: { mic: true, seconds: 2.5 } });
  t.match(parseCommand(['talk', '--tone'], env), { input: { tone: true } });
  t.same(parseCommand([], env), { kind: 'help' });
  t.same(parseCommand(['talk', '--help'], env), { kind: 'help' });
});

t.test('refused command lines say what is wrong', async (t) => {
  const refused = (argv: string[], message: RegExp) => {
    let err: unknown;
    try {
      parseCommand(argv, {});
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof UsageError, `${argv.join(' ')} is a usage error`);
    t.match((err as Error).message, message);
  };
  refused(['talk', '--wav', 'a.wav', '--base', 'http://x'], /Unknown option '--base'/);
  refused(['talk'], /exactly one of --wav FILE, --mic or --tone/);
  refused(['talk', '--wav', 'a.wav', '--mic'], /exactly one/);
  refused(['talk', '--wav', 'a.wav', '--seconds', '3'], /--seconds goes with --mic/);
  refused(['talk', '--mic', '--seconds', 'soon'], /--seconds must be a number/);
  refused(['talk', '--wav'], /argument missing/);
  refused(['models', 'extra'], /Unexpected argument 'extra'/);
  refused(['models', '--base-url', 'gw.example'], /must be an http\(s\) URL/);
  refused(['sessions', 'get'], /needs a session id/);
  refused(['sessions', 'end', 'vs_1', '--reason', 'bored'], /--reason must be client_closed, timeout or error/);
  refused(['sessions', 'list'], /Unknown sessions command 'list'/);
  refused(['speak'], /Unknown command 'speak'/);
});

t.test('the running cost follows the billing formula over the responses so far', async (t) => {
  const pricing: Pricing = {
    source: 'test',
    currency: 'cent',
    unit: 'milli_cents',
    rate_snapshot_id: 'rate_1',
    per_minute: 600,
    audio_in_token: 10,
    audio_out_token: 20,
    text_in_token: 2,
    text_out_token: 8,
    cached_in_token: 1,
    transcription_per_minute: 600,
    relay_fee_milli_cents: 500,
  };
  const cost = new RunningCost(pricing);
  t.equal(cost.cents, 0);
  t.equal(cost.billedCents, 0, 'no usage, no relay fee');
  const usage = {
    audio_in_ms: 1000,
    audio_out_ms: 1000,
    input_audio_tokens: 10,
    input_text_tokens: 4,
    cached_input_tokens: 0,
    output_audio_tokens: 20,
    output_text_tokens: 0,
    transcribed_ms: 1000,
  };
  cost.add(usage);
  // 600 * 2000 / 60000 = 20, + 100 + 400 + 8, + 600 * 1000 / 60000 = 10, + 500 fee = 1038 milli-cents
  t.equal(cost.cents, 1.038);
  t.equal(cost.billedCents, 2);
  cost.add(usage);
  t.equal(cost.responses, 2);
  t.equal(cost.cents, 1.576, 'the relay fee once');
  t.equal(cost.billedCents, 2);
});

t.test('call (--twilio | --webrtc) --wav: a call speaking one protocol', async (t) => {
  t.match(parseCommand(['call', '--twilio', '--wav', 'q.wav'], { S2S_API_KEY: 'vr_sk_env' }), {
    kind: 'call',
    via: 'twilio',
    wav: 'q.wav',
    out: 'answer.wav',
    model: 'local/echo-1',
    key: 'vr_sk_env',
  });
  t.match(parseCommand(['call', '--webrtc', '--wav', 'q.wav', '--out', 'a.wav'], {}), { kind: 'call', via: 'webrtc', out: 'a.wav' });
  t.throws(() => parseCommand(['call', '--wav', 'q.wav'], {}), /one of --twilio or --webrtc/);
  t.throws(() => parseCommand(['call', '--twilio', '--webrtc', '--wav', 'q.wav'], {}), /one of --twilio or --webrtc/);
  t.throws(() => parseCommand(['call', '--twilio'], {}), /--wav/);
});
