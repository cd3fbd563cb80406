// A phone call outlives its upstream connections (decisions.md, "Phone calls": continuity across provider caps
// and failover are those of every session): a caller streaming in real time through a Twilio (or Telnyx) media
// stream while the simulator caps every upstream connection, or while the provider of the route dies and the
// session fails over. The caller hears no gap beyond the reconnect, every turn is answered, and the bill
// settled after stop is exact to the cent.
import t, { type Test } from 'tap';
import { CreateKeyResponse, RealtimeClientSecretResponse, VoiceSession } from '@s2s/contract';
import { ZERO_USAGE, type Usage } from '@s2s/core';
import { pcmSilence, pcmTone } from '@s2s/local-provider';
import { Client, eventually, sleep } from '@s2s/testing';
import WebSocket from 'ws';
import { expectedCents } from './bill.js';
import { answersOf, mulawOf, PhoneLine, type PhoneProvider } from './phone.js';
import { api, azureRouteEnv, expectCharged, movesOf, putFailoverModel, startAzureRoute, startStack, type Stack } from './stack.js';

// Four calls in real time (about 20 s each) with their stacks: more than tap's 240 s on a loaded machine.
t.setTimeout(480_000);

/** One turn of the caller: 600 ms of speech, then 1400 ms of the line's silence (the VAD ends the turn). */
const SPEECH_MS = 600;
const CYCLE_MS = 2000;
const FRAMES = CYCLE_MS / 20;
const SPEECH_FRAMES = SPEECH_MS / 20;
/**
 * How late an answer may start after its turn's speech ended: the simulator's VAD (500 ms of silence), a
 * reconnect to the provider and the replay of the conversation, with room for a loaded machine. A turn that
 * waited for a move beyond this is a gap the caller hears.
 */
const ANSWER_BOUND_MS = 1500;
/** The longest silence inside one answer: the line never runs dry while an answer plays. */
const WITHIN_ANSWER_GAP_MS = 100;

interface Call {
  stack: Stack;
  key: CreateKeyResponse;
  rate: Record<string, number>;
  sessionId: string;
  line: PhoneLine;
  control: Client;
}

async function placeCall(t: Test, stack: Stack, model: string, provider: PhoneProvider): Promise<Call> {
  const key = CreateKeyResponse.parse(
    (await api(stack, 'POST', '/admin/v1/keys', { admin: true, body: { balance_cents: 10_000, label: 'phone continuity' } })).body,
  );
  const models = await api<{ data: { id: string; pricing: Record<string, number> }[] }>(stack, 'GET', '/v1/models');
  const rate = models.body.data.find((m) => m.id === model)!.pricing;
  const minted = RealtimeClientSecretResponse.parse(
    (
      await api(stack, 'POST', '/v1/realtime/client_secrets', {
        key: key.key,
        body: { session: { type: 'realtime', model, instructions: 'You answer the phone. Answer briefly.' } },
      })
    ).body,
  );
  const sessionId = minted.session.id;
  // The application's control socket: it sees every response with its usage.
  const ws = new WebSocket(`${stack.relayUrl}?call_id=${sessionId}`, { headers: { Authorization: `Bearer ${key.key}` } });
  const control = new Client(ws);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`control refused ${res.statusCode}`)));
  });
  t.teardown(() => control.close());
  const line = new PhoneLine(stack.relayUrl.replace('/v1/realtime', `/v1/telephony/${provider}`), provider);
  t.teardown(() => line.terminate());
  await line.start(minted.value);
  await control.next('session.created');
  return { stack, key, rate, sessionId, line, control };
}

/**
 * The caller talks in real time, one turn every 2 s, until `done()` says so (checked at each turn's end) and
 * one more whole turn was spoken after it; `midSpeech` runs halfway through each turn's speech. Returns when
 * each turn's speech ended and how many frames were sent.
 */
async function talk(
  line: PhoneLine,
  done: () => boolean,
  midSpeech: () => void = () => {},
  maxMs = 60_000,
): Promise<{ speechEnds: number[]; frames: number }> {
  const cycle = mulawOf(Buffer.concat([pcmTone(SPEECH_MS), pcmSilence(CYCLE_MS - SPEECH_MS)]));
  const speechEnds: number[] = [];
  const started = Date.now();
  let frames = 0;
  let after = -1;
  for (let i = 0; after < 1 && Date.now() - started < maxMs; i++) {
    const f = i % FRAMES;
    line.media(cycle.subarray(f * 160, (f + 1) * 160));
    frames++;
    if (f === SPEECH_FRAMES / 2) midSpeech();
    if (f === SPEECH_FRAMES - 1) speechEnds.push(Date.now());
    if (f === FRAMES - 1 && (after >= 0 || done())) after++;
    // On the caller's clock (no drift): frame i leaves at started + 20 i ms.
    await sleep(Math.max(0, started + (i + 1) * 20 - Date.now()));
  }
  return { speechEnds, frames };
}

/** Sums the usage of the responses the control socket saw (the OpenAI dialect's shape) into the gateway's counters. */
function reportedUsage(control: Client): Usage {
  const u: Usage = { ...ZERO_USAGE };
  for (const e of control.events) {
    if (e.type !== 'response.done') continue;
    const usage = (e.response as { usage?: Record<string, any> }).usage;
    if (!usage) continue;
    const cached = usage.input_token_details.cached_tokens as number;
    u.input_audio_tokens += usage.input_token_details.audio_tokens as number;
    u.input_text_tokens += (usage.input_token_details.text_tokens as number) - cached;
    u.cached_input_tokens += cached;
    u.output_audio_tokens += usage.output_token_details.audio_tokens as number;
    u.output_text_tokens += usage.output_token_details.text_tokens as number;
  }
  return u;
}

/**
 * What the caller heard: every turn answered within ANSWER_BOUND_MS of its speech's end (a move included),
 * no silence inside an answer, and no error reported to the application.
 */
function checkHeard(t: Test, call: Call, speechEnds: number[]): void {
  const answers = answersOf(call.line);
  const latencies = speechEnds.map((end, i) => {
    const next = speechEnds[i + 1] ?? Infinity;
    const answer = answers.find((a) => a.firstAt > end && a.firstAt < next);
    return answer === undefined ? Infinity : answer.firstAt - end;
  });
  t.comment(`answer latencies (ms): ${latencies.join(' ')}`);
  t.comment(`longest silence inside an answer: ${Math.max(...answers.map((a) => a.longestGapMs)).toFixed(1)} ms`);
  t.ok(
    latencies.every((ms) => ms <= ANSWER_BOUND_MS),
    `every one of ${speechEnds.length} turns answered within ${ANSWER_BOUND_MS} ms of its end (worst ${Math.max(...latencies)} ms)`,
  );
  t.ok(
    answers.every((a) => a.longestGapMs <= WITHIN_ANSWER_GAP_MS),
    `no answer paused more than ${WITHIN_ANSWER_GAP_MS} ms`,
  );
  t.ok(
    answers.every((a) => a.bytes >= (SPEECH_MS - 40) * 8),
    'each answer is the whole turn (the echo of 600 ms)',
  );
  t.same(
    call.control.events.filter((e) => e.type === 'error'),
    [],
    'the application saw no error',
  );
}

/** Hangs up (stop) and checks the settled session: every millisecond and token once, the bill to the cent. */
async function hangUpAndCheck(t: Test, call: Call, frames: number, parts: string[]): Promise<void> {
  const { stack, key, sessionId, line, control } = call;
  line.stop();
  await line.closed;
  const settled = await eventually(
    async () => VoiceSession.parse((await api(stack, 'GET', `/v1/voice/sessions/${sessionId}`, { key: key.key })).body),
    (s) => s.status !== 'active' && s.status !== 'ready',
    20_000,
  );
  t.equal(settled.status, 'completed');
  const heardMs = line.of('media').reduce((ms, m) => ms + Buffer.from(m.media.payload, 'base64').length / 8, 0);
  const total: Usage = { ...reportedUsage(control), audio_in_ms: frames * 20, audio_out_ms: heardMs };
  const counters = Object.fromEntries(Object.keys(ZERO_USAGE).map((k) => [k, settled.usage[k as keyof Usage]]));
  t.same(counters, total, 'every frame the caller sent, every answer the line played and every reported token, once');
  t.same(
    (settled.usage.routes ?? []).map((r) => r.provider),
    parts,
    'the providers that served the call',
  );
  const cents = expectedCents(call.rate, total);
  t.ok(cents > 0);
  t.equal(settled.usage.billed_cents, cents, 'billed to the cent');
  await expectCharged(t, stack, key.wallet_id, 10_000, cents);
}

async function acrossTwoCaps(t: Test, provider: PhoneProvider, cap: Record<string, string>, reason: 'deadline' | 'lost') {
  const stack = await startStack(t, { provider: cap });
  const call = await placeCall(t, stack, 'local/echo-1', provider);
  const { speechEnds, frames } = await talk(call.line, () => movesOf(stack) >= 2);
  await eventually(
    () => call.control.events.filter((e) => e.type === 'response.done').length,
    (n) => n >= speechEnds.length,
    20_000,
  );
  t.ok(movesOf(stack) >= 2, `${movesOf(stack)} moves during the call`);
  t.equal(movesOf(stack, reason), movesOf(stack), `every move: ${reason}`);
  checkHeard(t, call, speechEnds);
  await hangUpAndCheck(t, call, frames, ['local']);
}

t.test('a Twilio call across two unannounced caps (OpenAI-like): no gap beyond the reconnect, billed to the cent', (t) =>
  acrossTwoCaps(t, 'twilio', { LOCAL_PROVIDER_MAX_CONNECTION_MS: '6000' }, 'lost'),
);

t.test('a Twilio call across two announced caps (Gemini-like): no gap beyond the reconnect, billed to the cent', (t) =>
  acrossTwoCaps(t, 'twilio', { LOCAL_PROVIDER_MAX_CONNECTION_MS: '6000', LOCAL_PROVIDER_CAP_WARNING_MS: '4000' }, 'deadline'),
);

t.test('a Telnyx call across two unannounced caps: no gap beyond the reconnect, billed to the cent', (t) =>
  acrossTwoCaps(t, 'telnyx', { LOCAL_PROVIDER_MAX_CONNECTION_MS: '6000' }, 'lost'),
);

t.test(
  'a Twilio call whose provider dies: the call fails over to the next route, no gap beyond the reconnect, billed to the cent',
  async (t) => {
    const azure = await startAzureRoute(t);
    const stack = await startStack(t, { relay: azureRouteEnv(azure) });
    t.equal((await putFailoverModel(stack, 'acme/keeper')).status, 200);
    const call = await placeCall(t, stack, 'acme/keeper', 'twilio');
    const failedOver = () => stack.relay.output.some((l) => l.includes('"session failed over to the next route"'));
    let killed = false;
    const { speechEnds, frames } = await talk(
      call.line,
      () => killed && failedOver(),
      () => {
        // Two turns answered on the first route, then its provider dies while the caller is speaking.
        if (!killed && call.control.events.filter((e) => e.type === 'response.done').length >= 2) {
          stack.provider.child.kill('SIGKILL');
          killed = true;
        }
      },
    );
    await eventually(
      () => call.control.events.filter((e) => e.type === 'response.done').length,
      (n) => n >= speechEnds.length,
      20_000,
    );
    t.ok(failedOver(), 'the session failed over');
    checkHeard(t, call, speechEnds);
    await hangUpAndCheck(t, call, frames, ['local', 'azure']);
  },
);
