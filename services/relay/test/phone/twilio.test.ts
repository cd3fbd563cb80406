// Phone calls (decisions.md, "Phone calls: media streams"): a simulated Twilio Media Stream, written from
// Twilio's documented messages, against a real relay, PostgreSQL, NATS and the simulator.
import t, { type Test } from 'tap';
import { G711_BYTES_PER_MS, decodeG711 } from '@s2s/audio';
import { createKey, createModel, eventually, sessionRow, setupRelay, silence, tone } from '../helpers.js';
import { controlOf, FakeTwilio, MODEL, phoneSession, phoneUrl, SID } from './fakes.js';
import { twilioSignature } from '../../src/codecs/phone/signatures.js';

async function phoneEnv(t: Test, env: Record<string, string> = {}) {
  const relay = await setupRelay(t, env);
  await createModel(relay.db, { id: MODEL });
  const key = await createKey(relay.db, 10_000);
  return { env: relay, key };
}

t.test(
  'a native Twilio stream: audio in, the answer out in 20 ms chunks with a mark, DTMF and a tool over the control socket, barge-in, stop',
  async (t) => {
    const { env, key } = await phoneEnv(t);
    const { session, ek } = await phoneSession(env, key);
    const control = await controlOf(t, env, key, session.id);

    const phone = new FakeTwilio(phoneUrl(env, 'twilio'));
    t.teardown(() => phone.terminate());
    await phone.opened();
    phone.connected();
    phone.start({ client_secret: ek, caller: '+15550100' });
    await control.next('session.created');

    // The caller speaks; the answer comes back as μ-law media of 160 bytes, then a mark named after the response.
    let sent = await phone.speak(Buffer.concat([tone(600), silence(700)]));
    const done = await control.next('response.done');
    const responseId = (done.response as { id: string }).id;
    await eventually(
      () => phone.of('mark').length,
      (n) => n === 1,
    );
    const media = phone.of('media');
    t.ok(media.length > 10, `${media.length} media messages`);
    t.ok(
      media.every((m) => m.streamSid === SID),
      'each names the stream',
    );
    const sizes = media.map((m) => Buffer.from(m.media.payload, 'base64').length);
    t.ok(
      sizes.slice(0, -1).every((n) => n === 160),
      'every chunk but the last is 20 ms (160 bytes)',
    );
    t.same(phone.of('mark')[0], { event: 'mark', streamSid: SID, mark: { name: responseId } }, 'the mark is named after the response');
    const answer = decodeG711('pcmu', Buffer.concat(media.map((m) => Buffer.from(m.media.payload, 'base64'))));
    t.ok(Math.max(...answer.map(Math.abs)) > 1000, 'the answer is audible μ-law');
    phone.mark(responseId);

    // A keypad press reaches the control socket.
    phone.dtmf('5');
    const dtmf = await control.next('input_audio_buffer.dtmf_event_received');
    t.equal(dtmf.event, '5');
    t.ok(Math.abs((dtmf.received_at as number) - Date.now() / 1000) < 5, 'received_at in Unix seconds');

    // The application answers a tool call over the control socket; the caller hears the result.
    control.send({ type: 'input_audio_buffer.clear' });
    control.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'call lookup {"q":"balance"}' }] },
    });
    control.send({ type: 'response.create' });
    const call = await control.next('response.function_call_arguments.done');
    t.equal(call.name, 'lookup');
    await control.next('response.done');
    control.send({
      type: 'conversation.item.create',
      item: { type: 'function_call_output', call_id: call.call_id, output: 'twelve dollars' },
    });
    control.send({ type: 'response.create' });
    const toolDone = await control.next('response.done');
    await eventually(
      () => phone.of('mark').length,
      (n) => n === 2,
    );
    t.equal(phone.of('mark')[1]?.mark.name, (toolDone.response as { id: string }).id, 'the spoken tool result ends with its mark');
    phone.mark((toolDone.response as { id: string }).id);

    // Barge-in: an answer is queued at Twilio (its mark not echoed) when the caller speaks again.
    sent += await phone.speak(Buffer.concat([tone(600), silence(700)]));
    const third = await control.next('response.done');
    const thirdId = (third.response as { id: string }).id;
    await eventually(
      () => phone.of('mark').length,
      (n) => n === 3,
    );
    const before = phone.received.length;
    sent += await phone.speak(tone(300));
    await eventually(
      () => phone.received.slice(before).some((m) => m.event === 'clear'),
      (x) => x,
    );
    t.same(
      phone.received.slice(before).find((m) => m.event === 'clear'),
      { event: 'clear', streamSid: SID },
      'clear',
    );
    const truncated = await control.next('conversation.item.truncated');
    const thirdItem = ((third.response as { output?: { id: string }[] }).output ?? [])[0]?.id;
    if (thirdItem !== undefined) t.equal(truncated.item_id, thirdItem);
    t.ok((truncated.audio_end_ms as number) < 1300, `truncated at ${truncated.audio_end_ms} ms: what the caller heard`);
    t.ok(thirdId.length > 0);
    sent += await phone.speak(silence(700));

    // Stop ends the call (client_closed) and settles what was measured.
    phone.stop();
    t.equal(await phone.closed, 1000);
    const row = await eventually(
      () => sessionRow(env.db, session.id),
      (r) => r?.end_requested_at !== null,
    );
    t.equal(row?.end_cause, 'client_closed');
    const final = await eventually(
      () => env.checkpoints.filter((c) => c.session_id === session.id && c.final).at(-1),
      (c) => c !== undefined,
    );
    t.equal(final?.audio_in_ms, Math.floor(sent / G711_BYTES_PER_MS), 'audio_in_ms: every μ-law byte the caller sent ÷ 8');
    t.ok((final?.audio_out_ms ?? 0) > 0);
  },
);

t.test('bad input: refused or closed as documented, nothing billed that was not measured', async (t) => {
  const { env, key } = await phoneEnv(t);
  const url = phoneUrl(env, 'twilio');
  const attachments = async () => (await env.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM session_attachments')).rows[0]?.n;

  const cases: [string, (p: FakeTwilio) => void, number][] = [
    ['media before start', (p) => p.media(Buffer.alloc(160, 0xff)), 1008],
    ['a start without a secret', (p) => p.start({}), 1008],
    ['a start with a malformed secret', (p) => p.start({ client_secret: 'ek_short' }), 1008],
    ['an unknown event first', (p) => p.send({ event: 'hello' }), 1008],
    ['not JSON first', (p) => p.send('{oops'), 1008],
    ['a stop before start', (p) => p.stop(), 1000],
  ];
  for (const [name, act, code] of cases) {
    const p = new FakeTwilio(url);
    await p.opened();
    p.connected();
    act(p);
    t.equal(await p.closed, code, name);
  }

  // An unknown secret, an expired one, and a secret whose session has ended: 1008, nothing attached.
  const unknown = new FakeTwilio(url);
  await unknown.opened();
  unknown.start({ client_secret: `ek_${'A'.repeat(40)}` });
  t.equal(await unknown.closed, 1008, 'an unknown secret');
  const expired = await phoneSession(env, key, { ttlSeconds: 10, ageSeconds: 60 });
  const late = new FakeTwilio(url);
  await late.opened();
  late.start({ client_secret: expired.ek });
  t.equal(await late.closed, 1008, 'an expired secret');
  const ended = await phoneSession(env, key);
  await env.db.pool.query("UPDATE voice_sessions SET status = 'completed', end_requested_at = now() WHERE id = $1", [ended.session.id]);
  const gone = new FakeTwilio(url);
  await gone.opened();
  gone.start({ client_secret: ended.ek });
  t.equal(await gone.closed, 1008, "another (ended) session's secret");
  t.equal(await attachments(), 0, 'nothing attached');

  // No start within the limit (10 s): 1008.
  const silent = new FakeTwilio(url);
  await silent.opened();
  silent.connected();
  const start = Date.now();
  t.equal(await silent.closed, 1008, 'no start in time');
  t.ok(Date.now() - start >= 9000, 'after the 10 s limit');

  // On a live call: bad payloads, an unknown event and a second start are dropped, the call goes on; the
  // size limit closes with 1009; nothing of it is metered.
  const live = await phoneSession(env, key);
  const control = await controlOf(t, env, key, live.session.id);
  const p = new FakeTwilio(url);
  await p.opened();
  p.start({ client_secret: live.ek });
  await control.next('session.created');
  p.send({ event: 'media', sequenceNumber: '2', streamSid: SID, media: { track: 'inbound', chunk: '1', timestamp: '0', payload: '!!!' } });
  p.send({ event: 'media', sequenceNumber: '3', streamSid: SID, media: { track: 'inbound', chunk: '2', timestamp: '20', payload: '' } });
  p.send({ event: 'hello' });
  p.start({ client_secret: live.ek });
  const errors = [await control.next('error'), await control.next('error'), await control.next('error'), await control.next('error')];
  t.same(
    errors.map((e) => (e.error as { code: string }).code),
    ['invalid_audio_format', 'invalid_audio_format', 'invalid_event', 'invalid_event'],
    'each refused (the application sees it on its control socket)',
  );
  p.media(Buffer.alloc(160, 0xff));
  await eventually(
    () => env.checkpoints.filter((c) => c.session_id === live.session.id).at(-1)?.audio_in_ms,
    (ms) => ms === 20,
  );
  p.send('x'.repeat(2 * 1024 * 1024));
  t.equal(await p.closed, 1009, 'a message over the size limit');
  const final = await eventually(
    () => env.checkpoints.filter((c) => c.session_id === live.session.id && c.final).at(-1),
    (c) => c !== undefined,
  );
  t.equal(final?.audio_in_ms, 20, 'only the one valid frame is metered');
  const row = await eventually(
    () => sessionRow(env.db, live.session.id),
    (r) => r?.end_requested_at !== null,
  );
  t.equal(row?.end_cause, 'client_closed', 'a stream that never sent stop ends when its socket closes');
});

t.test("with TWILIO_AUTH_TOKEN, an upgrade without Twilio's signature of its URL is 403 before the upgrade", async (t) => {
  const token = 'twilio-auth-token-0123456789';
  const { env, key } = await phoneEnv(t, { TWILIO_AUTH_TOKEN: token, REALTIME_PUBLIC_URL: 'wss://gateway.example.com/v1/realtime' });
  const url = phoneUrl(env, 'twilio');
  const refused = new FakeTwilio(url, {
    'X-Twilio-Signature': twilioSignature('another-token', 'wss://gateway.example.com/v1/telephony/twilio'),
  });
  await t.rejects(refused.opened(), /refused 403/);
  const none = new FakeTwilio(url);
  await t.rejects(none.opened(), /refused 403/);

  const { ek } = await phoneSession(env, key);
  const signed = new FakeTwilio(url, { 'X-Twilio-Signature': twilioSignature(token, 'wss://gateway.example.com/v1/telephony/twilio') });
  t.teardown(() => signed.terminate());
  await signed.opened();
  signed.start({ client_secret: ek });
  await signed.speak(Buffer.concat([tone(300), silence(700)]));
  await eventually(
    () => signed.of('mark').length,
    (n) => n === 1,
  );
  t.pass('the signed stream is served');
});
