// Sessions that outlive their upstream connections, end to end (issue 11, Tests): the real local provider
// capping every connection OpenAI's way (a warning, then session_expired and close 1001), the real relay
// moving the session, billing settling it. Expected figures follow the simulator's documented rules
// (packages/local-provider/README.md): the whole context billed on every response, text 1 token per 4
// characters, audio in 1 per 100 ms, out 1 per 50 ms; a new connection's context is the replayed text.
import t, { type Test } from 'tap';
import { CreateKeyResponse, VoiceSession } from '@s2s/contract';
import { ZERO_USAGE, type Usage } from '@s2s/core';
import { checkLedgerInvariants } from '@s2s/db/testing';
import { BYTES_PER_MS, pcmFrames, pcmSilence, pcmTone } from '@s2s/local-provider';
import { eventually, type ServerEventLike } from '@s2s/testing';
import { expectedCents } from './bill.js';
import {
  api,
  attachSession,
  azureRouteEnv,
  expectCharged,
  movesOf,
  putFailoverModel,
  startAzureRoute,
  startStack,
  type Stack,
} from './stack.js';

const MODEL = 'local/echo-1';
const text = (s: string) => Math.ceil(s.length / 4);
const audioIn = (ms: number) => Math.ceil(ms / 100);
const audioOut = (ms: number) => Math.ceil(ms / 50);
type Counters = Usage;
const COUNTERS = Object.keys(ZERO_USAGE) as (keyof Usage)[];
const counters = (partial: Partial<Counters>): Counters => ({ ...ZERO_USAGE, ...partial });
const pick = (u: object) => Object.fromEntries(COUNTERS.map((k) => [k, (u as Record<string, unknown>)[k]]));
const add = (a: Counters, b: Counters): Counters => Object.fromEntries(COUNTERS.map((k) => [k, a[k] + b[k]])) as unknown as Counters;

async function open(t: Test, stack: Stack, model = MODEL) {
  const key = CreateKeyResponse.parse(
    (await api(stack, 'POST', '/admin/v1/keys', { admin: true, body: { balance_cents: 10_000, label: 'continuity' } })).body,
  );
  const models = await api<{ data: { id: string; pricing: Record<string, number> }[] }>(stack, 'GET', '/v1/models');
  const rate = models.body.data.find((m) => m.id === model)!.pricing;
  const created = await api<VoiceSession>(stack, 'POST', '/v1/voice/sessions', {
    key: key.key,
    body: { model, mode: 'speech_to_speech' },
  });
  const session = VoiceSession.parse(created.body);
  const client = await attachSession(t, session, key.key);
  return { key, rate, session, client };
}

/**
 * Ends the session and checks every counter, the bill to the cent, the wallet and the ledger, and the
 * usage by the provider that served it (`parts`: each provider's counters, in the order they served).
 */
async function endAndCheck(
  t: Test,
  stack: Stack,
  key: CreateKeyResponse,
  session: VoiceSession,
  rate: Record<string, number>,
  total: Counters,
  parts: [provider: string, usage: Counters][] = [['local', total]],
) {
  const ended = await api<VoiceSession>(stack, 'POST', `/v1/voice/sessions/${session.id}/end`, {
    key: key.key,
  });
  t.equal(ended.status, 200);
  t.equal(ended.body.status, 'completed');
  t.equal(ended.body.model, session.model, 'the same model throughout');
  t.same(pick(ended.body.usage), total, 'every counter of the session, each response once');
  const routes = ended.body.usage.routes ?? [];
  t.same(
    routes.map((r) => [r.provider, pick(r)]),
    parts,
    'the usage names the provider that served each part',
  );
  for (const k of COUNTERS)
    t.equal(
      routes.reduce((sum, r) => sum + r[k], 0),
      ended.body.usage[k],
      `${k}: the parts add up to the total`,
    );
  const cents = expectedCents(rate, total);
  t.equal(ended.body.usage.billed_cents, cents, 'billed to the cent');
  await expectCharged(t, stack, key.wallet_id, 10_000, cents);
}

const moves = movesOf;

const INSTRUCTIONS = 'You keep numbers in mind. Answer briefly.';

/**
 * Three turns on three upstream connections, each ended by the simulator's cap (`provider`): spoken, text,
 * spoken, each answered whole, the conversation replayed as text on each new connection, the client seeing
 * neither an error nor a close, every counter and the bill exact. `reason`: how the relay's two moves went
 * (`deadline`: planned at the announcement, at a quiet moment; `lost`: at once after the cut).
 */
async function acrossTwoCaps(t: Test, provider: Record<string, string>, reason: 'deadline' | 'lost') {
  const stack = await startStack(t, { provider });
  const { key, rate, session, client } = await open(t, stack);
  client.send({ type: 'session.update', session: { instructions: INSTRUCTIONS, audio: { input: { transcription: {} } } } });
  await client.next('session.updated');
  const I = text(INSTRUCTIONS);
  let from = client.events.length;
  const since = async (type: string) => {
    const last = await client.next(type, 30_000);
    const evs = client.events.slice(from, client.events.indexOf(last) + 1);
    from = client.events.indexOf(last) + 1;
    return evs;
  };
  const usageOf = (evs: ServerEventLike[]) => (evs.at(-1)!.response as { usage: Record<string, unknown> }).usage;
  const audioOf = (evs: ServerEventLike[]) =>
    Buffer.concat(evs.filter((e) => e.type === 'response.output_audio.delta').map((e) => Buffer.from(e.audio as string, 'base64')));

  // Connection 1: a spoken turn, echoed.
  const speech1 = pcmTone(1000);
  for (const f of pcmFrames(Buffer.concat([speech1, pcmSilence(500)]))) client.append(f);
  const turn1 = await since('response.done');
  t.ok(audioOf(turn1).equals(speech1), 'turn 1 played back byte for byte');
  const u1 = counters({
    audio_in_ms: 1500,
    audio_out_ms: 1000,
    input_text_tokens: I,
    input_audio_tokens: audioIn(1500),
    output_audio_tokens: audioOut(1000),
    transcribed_ms: 1500,
  });
  t.same(pick(usageOf(turn1)), u1, 'turn 1: instructions and the turn');

  // Connection 2: seeded with the conversation as text; a text turn.
  await eventually(
    () => moves(stack),
    (n) => n >= 1,
    15_000,
  );
  const said = 'remember 42';
  client.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: said }] } });
  client.send({ type: 'response.create' });
  const turn2 = await since('response.done');
  t.equal(audioOf(turn2).length, said.length * 60 * BYTES_PER_MS, 'the text spoken (60 ms a character)');
  const transcript1 = 'speech 1000 ms';
  // The whole context again, all of it text now and none of it cached (a new connection): the replay is billed.
  const u2 = counters({
    audio_out_ms: said.length * 60,
    input_text_tokens: I + text(transcript1) + text(transcript1) + text(said),
    output_audio_tokens: audioOut(said.length * 60),
  });
  t.same(pick(usageOf(turn2)), u2, 'turn 2: instructions, turn 1 and its answer replayed as text, the text turn');

  // Connection 3: the whole conversation again; a spoken turn.
  await eventually(
    () => moves(stack),
    (n) => n >= 2,
    15_000,
  );
  const speech3 = pcmTone(800);
  for (const f of pcmFrames(Buffer.concat([speech3, pcmSilence(500)]))) client.append(f);
  const turn3 = await since('response.done');
  t.ok(audioOf(turn3).equals(speech3), 'turn 3 played back byte for byte');
  const u3 = counters({
    audio_in_ms: 1300,
    audio_out_ms: 800,
    input_text_tokens: I + text(transcript1) * 2 + text(said) * 2,
    input_audio_tokens: audioIn(1300),
    output_audio_tokens: audioOut(800),
    transcribed_ms: 1300,
  });
  t.same(pick(usageOf(turn3)), u3, 'turn 3: everything before it replayed, the spoken turn');
  t.notOk(
    client.events.some((e) => e.type === 'error'),
    'the client saw no error',
  );
  t.equal(client.closeCode, null, 'nor a close');

  t.equal(moves(stack, reason), moves(stack), `every move: ${reason}`);

  // The bill: every response once, no gap and no overlap.
  await endAndCheck(t, stack, key, session, rate, add(add(u1, u2), u3));
}

t.test('Gemini-like: the cap announced ahead (goAway), the session moves twice at quiet moments, intact and billed to the cent', (t) =>
  // Every upstream connection is warned 2 s after it opens (session_expiring with the time left) and cut at 6 s.
  acrossTwoCaps(t, { LOCAL_PROVIDER_MAX_CONNECTION_MS: '6000', LOCAL_PROVIDER_CAP_WARNING_MS: '4000' }, 'deadline'),
);

t.test('OpenAI-like: the cap cuts unannounced (session_expired, close 1001), the session moves twice, intact and billed to the cent', (t) =>
  // Every upstream connection is cut 6 s after it opens, OpenAI's way at its 60 minutes, with no warning.
  acrossTwoCaps(t, { LOCAL_PROVIDER_MAX_CONNECTION_MS: '6000' }, 'lost'),
);

/**
 * A live microphone across two caps (`provider`): the client streams audio in real time without pause, a
 * spoken turn every 2 s, while the relay moves the session twice, so input arrives during each switch.
 * Nothing is lost or counted twice: the session's input is every byte sent, each answered turn is played
 * back whole, its tokens are those of the responses the client saw (each once), and the bill is exact.
 * `announced`: the cap is announced ahead, so no answer is ever cut (an unannounced cut may cut one).
 */
async function liveMicrophone(t: Test, provider: Record<string, string>, announced: boolean) {
  const stack = await startStack(t, { provider });
  const { key, rate, session, client } = await open(t, stack);
  client.send({ type: 'session.update', session: { instructions: INSTRUCTIONS, audio: { input: { transcription: {} } } } });
  await client.next('session.updated');
  const speech = pcmTone(600);
  const cycle = pcmFrames(Buffer.concat([speech, pcmSilence(1400)]), 100);
  let sent = 0;
  // 100 ms frames in real time until two moves are done and one more whole cycle was spoken after them.
  let cyclesAfter = -1;
  for (let i = 0; cyclesAfter < 1; i++) {
    const frame = cycle[i % cycle.length]!;
    client.append(frame);
    sent += frame.length;
    if (i % cycle.length === cycle.length - 1 && (cyclesAfter >= 0 || moves(stack) >= 2)) cyclesAfter++;
    await new Promise((r) => setTimeout(r, 100));
  }
  const turns = sent / (cycle.length * 100 * BYTES_PER_MS);
  // The last turn's answer: every turn spoken is answered (or its response reported failed, billed as measured).
  await eventually(
    () => client.events.filter((e) => e.type === 'response.done').length,
    (n) => n >= turns,
    30_000,
  );
  t.ok(moves(stack) >= 2, 'two moves while the microphone was live');
  t.notOk(
    client.events.some((e) => e.type === 'error'),
    'the client saw no error',
  );
  t.equal(client.closeCode, null, 'nor a close');
  const dones = client.events.filter((e) => e.type === 'response.done');
  const completed = dones.filter((e) => (e.response as { status: string }).status === 'completed');
  if (announced) t.equal(completed.length, turns, 'every turn answered: the moves wait for quiet moments');
  else t.ok(completed.length >= turns - moves(stack), 'every turn answered but at most one cut short by each cut');
  // Each completed answer is a whole turn played back: the audio stream out is continuous too.
  for (const done of completed) {
    const id = (done.response as { id: string }).id;
    const out = Buffer.concat(
      client.events
        .filter((e) => e.type === 'response.output_audio.delta' && e.response_id === id)
        .map((e) => Buffer.from(e.audio as string, 'base64')),
    );
    t.ok(out.equals(speech), `response ${id}: the turn played back byte for byte`);
  }
  const reported = dones.reduce(
    (sum, e) => add(sum, counters(pick((e.response as { usage: object }).usage) as Partial<Counters>)),
    ZERO_USAGE,
  );
  // Input: every byte sent, once (including what arrived while the session moved); the rest as the responses reported it.
  await endAndCheck(t, stack, key, session, rate, { ...reported, audio_in_ms: sent / BYTES_PER_MS });
}

t.test('a live microphone across two announced caps (Gemini-like): input during the switches kept, billed to the cent', (t) =>
  liveMicrophone(t, { LOCAL_PROVIDER_MAX_CONNECTION_MS: '6000', LOCAL_PROVIDER_CAP_WARNING_MS: '4000' }, true),
);

t.test('a live microphone across two unannounced cuts (OpenAI-like): input during the switches kept, billed to the cent', (t) =>
  liveMicrophone(t, { LOCAL_PROVIDER_MAX_CONNECTION_MS: '6000' }, false),
);

t.test('an upstream that cannot be re-established (the provider is gone): upstream_unavailable, 1011, settled', async (t) => {
  const stack = await startStack(t, { relay: { UPSTREAM_RECONNECT_ATTEMPTS: '2' } });
  const { key, session, client } = await open(t, stack);
  for (const f of pcmFrames(Buffer.concat([pcmTone(500), pcmSilence(500)]))) client.append(f);
  await client.next('response.done', 30_000);
  // The provider dies: the connection is lost and every reconnect is refused.
  stack.provider.child.kill('SIGKILL');
  const error = await client.next('error', 30_000);
  t.equal((error.error as { code: string }).code, 'upstream_unavailable');
  t.equal((await client.closed).code, 1011);
  const settled = await eventually(
    async () => (await api<VoiceSession>(stack, 'GET', `/v1/voice/sessions/${session.id}`, { key: key.key })).body,
    (s) => s.status === 'failed',
    20_000,
  );
  t.equal(settled.status, 'failed', 'the session failed and settled');
  t.equal(settled.billing.reserved_cents, 0, 'nothing held');
  t.same(await checkLedgerInvariants(stack.db.db.pool), []);
});

t.test('failover: the provider of the route dies, the session continues on the next route (Azure), billed to the cent', async (t) => {
  const azure = await startAzureRoute(t);
  const stack = await startStack(t, { relay: azureRouteEnv(azure) });
  t.equal((await putFailoverModel(stack, 'acme/keeper')).status, 200);
  const { key, rate, session, client } = await open(t, stack, 'acme/keeper');
  client.send({ type: 'session.update', session: { instructions: INSTRUCTIONS, audio: { input: { transcription: {} } } } });
  await client.next('session.updated');
  const I = text(INSTRUCTIONS);
  const usageOf = (e: ServerEventLike) => (e.response as { usage: Record<string, unknown> }).usage;

  for (const f of pcmFrames(Buffer.concat([pcmTone(1000), pcmSilence(500)]))) client.append(f);
  const d1 = await client.next('response.done', 30_000);
  const u1 = counters({
    audio_in_ms: 1500,
    audio_out_ms: 1000,
    input_text_tokens: I,
    input_audio_tokens: audioIn(1500),
    output_audio_tokens: audioOut(1000),
    transcribed_ms: 1500,
  });
  t.same(pick(usageOf(d1)), u1, 'turn 1 on the first route');

  stack.provider.child.kill('SIGKILL');
  await eventually(
    () => stack.relay.output.some((l) => l.includes('"session failed over to the next route"')),
    (found) => found,
    20_000,
  );
  const from = client.events.length;
  const speech2 = pcmTone(600);
  for (const f of pcmFrames(Buffer.concat([speech2, pcmSilence(500)]))) client.append(f);
  const d2 = await client.next('response.done', 30_000);
  const out2 = Buffer.concat(
    client.events
      .slice(from)
      .filter((e) => e.type === 'response.output_audio.delta')
      .map((e) => Buffer.from(e.audio as string, 'base64')),
  );
  t.ok(out2.equals(speech2), 'turn 2 answered on the next route, byte for byte');
  const transcript1 = 'speech 1000 ms';
  const u2 = counters({
    audio_in_ms: 1100,
    audio_out_ms: 600,
    input_text_tokens: I + text(transcript1) * 2,
    input_audio_tokens: audioIn(1100),
    output_audio_tokens: audioOut(600),
    transcribed_ms: 1100,
  });
  t.same(pick(usageOf(d2)), u2, 'turn 2: the conversation replayed on the new route (text), then the turn');
  t.notOk(
    client.events.some((e) => e.type === 'error'),
    'the client saw no error',
  );

  // Turn 1 served by the first route, turn 2 by the next: both named, one bill under the one rate snapshot.
  await endAndCheck(t, stack, key, session, rate, add(u1, u2), [
    ['local', u1],
    ['azure', u2],
  ]);
});
