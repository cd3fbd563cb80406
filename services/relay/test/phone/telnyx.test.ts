// Telnyx media streaming against a real relay (decisions.md, "Phone calls"): the same call as Twilio's, in
// Telnyx's messages; its Ed25519 signature when TELNYX_PUBLIC_KEY is set.
import { generateKeyPairSync, sign } from 'node:crypto';
import t from 'tap';
import { G711_BYTES_PER_MS } from '@s2s/audio';
import { createKey, createModel, eventually, sessionRow, setupRelay, silence, tone } from '../helpers.js';
import { controlOf, FakeTelnyx, MODEL, phoneSession, phoneUrl } from './fakes.js';

t.test('a native Telnyx stream: audio in, the answer out in 20 ms chunks with a mark, DTMF, barge-in with clear, stop', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 10_000);
  const { session, ek } = await phoneSession(env, key);
  const control = await controlOf(t, env, key, session.id);
  const phone = new FakeTelnyx(phoneUrl(env, 'telnyx'));
  t.teardown(() => phone.terminate());
  await phone.opened();
  phone.connected();
  phone.start({ client_secret: ek });
  await control.next('session.created');

  let sent = await phone.speak(Buffer.concat([tone(600), silence(700)]));
  const done = await control.next('response.done');
  const responseId = (done.response as { id: string }).id;
  await eventually(
    () => phone.of('mark').length,
    (n) => n === 1,
  );
  const media = phone.of('media');
  t.ok(media.length > 10);
  t.ok(
    media.every((m) => Object.keys(m).join() === 'event,media' && Object.keys(m.media).join() === 'payload'),
    "Telnyx's media frame: event and media.payload only",
  );
  t.ok(
    media.slice(0, -1).every((m) => Buffer.from(m.media.payload, 'base64').length === 160),
    '20 ms chunks',
  );
  t.same(phone.of('mark')[0], { event: 'mark', mark: { name: responseId } });

  phone.dtmf('#');
  t.equal((await control.next('input_audio_buffer.dtmf_event_received')).event, '#');

  // The mark is not echoed: the answer is still queued at Telnyx when the caller speaks.
  const before = phone.received.length;
  sent += await phone.speak(tone(300));
  await eventually(
    () => phone.received.slice(before).some((m) => m.event === 'clear'),
    (x) => x,
  );
  t.same(
    phone.received.slice(before).find((m) => m.event === 'clear'),
    { event: 'clear' },
  );
  const truncated = await control.next('conversation.item.truncated');
  t.ok((truncated.audio_end_ms as number) <= 1300);
  sent += await phone.speak(silence(700));

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
  t.equal(final?.audio_in_ms, Math.floor(sent / G711_BYTES_PER_MS));
});

t.test("with TELNYX_PUBLIC_KEY, an upgrade without Telnyx's Ed25519 signature is 403 before the upgrade", async (t) => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('base64');
  const env = await setupRelay(t, { TELNYX_PUBLIC_KEY: raw });
  await createModel(env.db, { id: MODEL });
  const key = await createKey(env.db, 10_000);
  const url = phoneUrl(env, 'telnyx');
  const ts = String(Math.floor(Date.now() / 1000));
  const headers = (signature: string, timestamp = ts) => ({ 'telnyx-signature-ed25519': signature, 'telnyx-timestamp': timestamp });
  const good = sign(null, Buffer.from(`${ts}|`), privateKey).toString('base64');
  const forged = sign(null, Buffer.from(`${ts}|`), generateKeyPairSync('ed25519').privateKey).toString('base64');
  await t.rejects(new FakeTelnyx(url).opened(), /refused 403/, 'no signature');
  await t.rejects(new FakeTelnyx(url, headers(forged)).opened(), /refused 403/, 'another key');
  const old = String(Number(ts) - 600);
  const replay = sign(null, Buffer.from(`${old}|`), privateKey).toString('base64');
  await t.rejects(new FakeTelnyx(url, headers(replay, old)).opened(), /refused 403/, 'a replay after 5 minutes');

  const { ek } = await phoneSession(env, key);
  const signed = new FakeTelnyx(url, headers(good));
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
