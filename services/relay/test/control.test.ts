// Control sockets (decisions.md, "Control sockets (sideband)"): `GET /v1/realtime?call_id=`, the owning API
// key, every server event but audio, every client event but audio, one at a time, on any relay.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { selfSignedCertificate } from '@s2s/testing';
import type { RelayApp } from '../src/server/app.js';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import type { RealtimeServerEvent } from 'openai/resources/realtime/realtime';
import { mintClientSecret, requestEnd } from '@s2s/sessions';
import {
  attach,
  attachUrl,
  Client,
  createKey,
  createModel,
  eventually,
  frames,
  newSession,
  refused,
  sessionRow,
  setupRelay,
  silence,
  sleep,
  tone,
} from './helpers.js';

const MODEL = 'test/control-1';

/** A TLS front for a relay (the SDK dials wss:// only), as the edge is in production. */
async function tlsFront(t: Test, app: RelayApp): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'control-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { cert, key } = selfSignedCertificate(dir);
  const server = createServer({ cert: readFileSync(cert), key: readFileSync(key) });
  server.on('upgrade', (req, socket, head) => app.server.emit('upgrade', req, socket, head));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The `openai` package's sideband client (`OpenAIRealtimeWS({ callID })`) against a relay. */
function sideband(origin: string, apiKey: string, callID: string) {
  const rt = new OpenAIRealtimeWS({ callID, options: { rejectUnauthorized: false } }, new OpenAI({ apiKey, baseURL: `${origin}/v1` }));
  rt.on('error', () => {});
  const events: RealtimeServerEvent[] = [];
  const closed = new Promise<number>((resolve) => rt.socket.on('close', (code) => resolve(code)));
  rt.socket.on('message', (data) => events.push(JSON.parse(data.toString()) as RealtimeServerEvent));
  const opened = new Promise<void>((resolve, reject) => {
    rt.socket.once('open', () => resolve());
    rt.socket.once('error', reject);
  });
  return { rt, events, closed, opened };
}

async function speak(client: Client, ms = 400): Promise<void> {
  for (const f of frames(Buffer.concat([tone(ms), silence(700)]))) {
    client.append(f);
    await sleep(5);
  }
}

t.test("the openai package's OpenAIRealtimeWS({ callID }) watches and steers a session whose media is elsewhere", async (t) => {
  const env = await setupRelay(t);
  const key = await createKey(env.db, 10_000);
  await createModel(env.db, { id: MODEL });
  const session = await newSession(env.db, key, MODEL);
  const { client: media } = await attach(attachUrl(env.url, session.id), key.secret);
  t.teardown(() => media.ws.terminate());

  // The control socket opens on a second relay of the same deployment: events cross the bus.
  const other = await env.startRelay();
  const control = sideband(await tlsFront(t, other.app), key.secret, session.id);
  t.teardown(() => control.rt.close());
  await control.opened;
  t.match(control.rt.url.toString(), /\/v1\/realtime\?call_id=vs_/);
  await eventually(
    () => control.events.map((e) => e.type),
    (types) => types.includes('session.created'),
  );

  // The caller speaks on the media socket: the control socket hears everything but the audio.
  await speak(media);
  await media.next('response.done');
  await eventually(
    () => control.events.map((e) => e.type),
    (types) => types.includes('response.done'),
  );
  const types = control.events.map((e) => e.type);
  t.ok(types.includes('input_audio_buffer.speech_started'), 'speech events');
  t.ok(types.includes('response.output_audio_transcript.done'), 'the answer transcript');
  t.notOk(types.includes('response.output_audio.delta'), 'no audio on the control socket');
  t.ok(
    media.events.some((e) => e.type === 'response.output_audio.delta'),
    'the media socket got the audio',
  );

  // The application answers a tool call over the control socket.
  control.rt.send({
    type: 'session.update',
    session: {
      type: 'realtime',
      tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } }],
    },
  });
  await eventually(
    () => control.events.filter((e) => e.type === 'session.updated').length,
    (n) => n >= 1,
  );
  // The trailing silence of the turn is still buffered: cleared first, so the text item is the last one.
  control.rt.send({ type: 'input_audio_buffer.clear' });
  control.rt.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'call lookup {"q":"balance"}' }] },
  });
  control.rt.send({ type: 'response.create' });
  const call = (await eventually(
    () => control.events.find((e) => e.type === 'response.function_call_arguments.done'),
    (e) => e !== undefined,
  )) as Extract<RealtimeServerEvent, { type: 'response.function_call_arguments.done' }>;
  t.equal(call.name, 'lookup');
  control.rt.send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: call.call_id, output: 'ok' } });
  control.rt.send({ type: 'response.create' });
  await eventually(
    () => media.events.filter((e) => e.type === 'response.output_audio_transcript.done').map((e) => e.transcript),
    (ts) => ts.includes('ok'),
  );
  t.pass('the tool output reached the conversation: the media socket hears the answer');

  // Audio is refused on a control socket.
  control.rt.send({ type: 'input_audio_buffer.append', audio: tone(20).toString('base64'), event_id: 'a1' } as never);
  const error = (await eventually(
    () => control.events.find((e) => e.type === 'error'),
    (e) => e !== undefined,
  )) as Extract<RealtimeServerEvent, { type: 'error' }>;
  t.equal(error.error.code, 'invalid_event');
  t.equal(error.error.event_id, 'a1');

  // A newer control socket replaces this one (4001); neither ends the session or touches the media socket.
  const front = await tlsFront(t, env.app);
  const newer = sideband(front, key.secret, session.id);
  t.teardown(() => newer.rt.close());
  await newer.opened;
  t.equal(await control.closed, 4001, 'the older control socket is replaced');
  await eventually(
    () => newer.events.map((e) => e.type),
    (ts) => ts.includes('session.created'),
  );
  newer.rt.close();
  await newer.closed;
  await sleep(200);
  t.equal(media.closeCode, null, 'the media socket stays');
  t.equal((await sessionRow(env.db, session.id))?.end_requested_at, null, 'the session goes on');

  // The session's end closes a control socket with 1000.
  const last = sideband(front, key.secret, session.id);
  await last.opened;
  await media.close();
  await requestEnd({ ctx: { db: env.db, bus: env.bus }, input: { sessionId: session.id, cause: 'client_closed' } });
  t.equal(await last.closed, 1000, 'the session ended: the control socket closes');
});

t.test('control sockets are refused before the upgrade like an attach', async (t) => {
  const env = await setupRelay(t);
  const key = await createKey(env.db, 10_000);
  const stranger = await createKey(env.db, 10_000);
  await createModel(env.db, { id: MODEL });
  const session = await newSession(env.db, key, MODEL);
  const url = (id: string) => `${env.url}?call_id=${encodeURIComponent(id)}`;
  const secret = (await mintClientSecret({ ctx: { db: env.db }, input: { sessionId: session.id, ttlSeconds: 60, now: new Date() } })).value;

  const noKey = await refused(url(session.id), { protocol: null });
  t.equal(noKey.status, 401);
  const ek = await refused(url(session.id), { protocol: null, secret });
  t.equal(ek.status, 401, 'an ek_ secret cannot open a control socket');
  t.equal(ek.body.error.code, 'invalid_vr_sk');
  const ekProtocol = await refused(url(session.id), { protocol: `openai-insecure-api-key.${secret}` });
  t.equal(ekProtocol.status, 401, 'nor in a subprotocol');
  const notOwner = await refused(url(session.id), { protocol: null, secret: stranger.secret });
  t.equal(notOwner.status, 401, "another key's session");
  const unknown = await refused(url('vs_nope'), { protocol: null, secret: key.secret });
  t.equal(unknown.status, 404);
  t.equal(unknown.body.error.code, 'session_not_found');
  const both = await refused(`${url(session.id)}&session_id=${session.id}`, { protocol: null, secret: key.secret });
  t.equal(both.status, 400);

  await env.db.pool.query("UPDATE voice_sessions SET status = 'completed', end_requested_at = now() WHERE id = $1", [session.id]);
  const ended = await refused(url(session.id), { protocol: null, secret: key.secret });
  t.equal(ended.status, 410);
  t.equal(ended.body.error.code, 'session_expired');
  t.equal((env.app.server.address() as AddressInfo).port > 0, true);
});
