// Issue 8, defects 4, 6 and 7 on the relay: impossible ids, parser-level refusals, the two realtime
// request errors and the 1007 close.
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { ErrorEvent, ErrorResponse } from '@s2s/contract';
import { attach, attachUrl, createKey, createModel, newSession, refused, setupRelay, tone } from './helpers.js';

t.test('input_audio_buffer.commit on an empty buffer: commit_empty with the event_id, no upstream round trip', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/vad', providerModel: 'vad-1' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/vad');
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);

  client.send({ type: 'input_audio_buffer.commit', event_id: 'empty-1' });
  const e = ErrorEvent.parse(await client.next('error'));
  t.equal(e.error.code, 'input_audio_buffer_commit_empty');
  t.equal(e.error.type, 'invalid_request_error');
  t.equal(e.error.event_id, 'empty-1', 'echoes the client event_id');

  // After a commit, the buffer is empty again; a clear empties it too.
  client.append(tone(40));
  client.send({ type: 'input_audio_buffer.commit', event_id: 'full' });
  client.send({ type: 'input_audio_buffer.commit', event_id: 'empty-2' });
  const again = ErrorEvent.parse(await client.next('error'));
  t.equal(again.error.code, 'input_audio_buffer_commit_empty');
  t.equal(again.error.event_id, 'empty-2');
  client.append(tone(20));
  client.send({ type: 'input_audio_buffer.clear' });
  client.send({ type: 'input_audio_buffer.commit', event_id: 'empty-3' });
  t.equal(ErrorEvent.parse(await client.next('error')).error.event_id, 'empty-3');

  t.equal(client.closeCode, null, 'the socket stays open');
  const commits = env.simEvents.filter((x) => x.event.type === 'input_audio_buffer.commit');
  t.equal(commits.length, 1, 'only the non-empty commit reached the upstream');
  await client.close();
});

t.test('response.cancel with nothing in progress: response_cancel_not_active with the event_id', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/vad', providerModel: 'vad-1' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/vad');
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);

  client.send({ type: 'response.cancel', event_id: 'cancel-1' });
  const e = ErrorEvent.parse(await client.next('error'));
  t.equal(e.error.code, 'response_cancel_not_active');
  t.equal(e.error.type, 'invalid_request_error');
  t.equal(e.error.event_id, 'cancel-1');
  t.equal(client.closeCode, null, 'the socket stays open');
  t.notOk(
    env.simEvents.some((x) => x.event.type === 'response.cancel'),
    'nothing sent upstream',
  );

  // A cancel while a response is under way still reaches the upstream.
  client.append(tone(3000));
  client.send({ type: 'response.create' });
  await client.next('response.created');
  client.send({ type: 'response.cancel', event_id: 'cancel-2' });
  const done = await client.next('response.done');
  t.equal((done.response as { status: string }).status, 'cancelled');
  t.ok(
    env.simEvents.some((x) => x.event.type === 'response.cancel'),
    'the cancel reached the upstream',
  );
  await client.close();
});

t.test('a text frame that is not UTF-8 closes with 1007', async (t) => {
  const env = await setupRelay(t);
  await createModel(env.db, { id: 'local/echo', providerModel: 'echo-stream' });
  const key = await createKey(env.db, 10_000);
  const s = await newSession(env.db, key, 'local/echo');
  const { client } = await attach(attachUrl(env.url, s.id), key.secret);
  client.ws.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false });
  const closed = await client.closed;
  t.equal(closed.code, 1007);
});

t.test('an impossible session id is 404 session_not_found before the upgrade, never 500', async (t) => {
  const env = await setupRelay(t);
  const key = await createKey(env.db, 10_000);
  for (const [name, id] of [
    ['NUL byte', '\u0000'],
    ['NUL inside', 'vs_abc\u0000def'],
    ['over 255 characters', `vs_${'a'.repeat(300)}`],
  ] as const) {
    const r = await refused(attachUrl(env.url, id), { secret: key.secret });
    t.equal(r.status, 404, name);
    t.equal(r.body.error.code, 'session_not_found', name);
    t.equal(r.body.error.type, 'not_found_error', name);
    t.match(r.body.error.request_id, /^req_/, name);
  }
});

/** Raw bytes to the relay's port; resolves with whatever it answers before closing. */
function rawExchange(port: number, bytes: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => (text += c));
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
    socket.write(bytes);
  });
}

t.test('requests the HTTP parser refuses still get an ErrorResponse with a request id', async (t) => {
  const env = await setupRelay(t);
  const port = (env.app.server.address() as AddressInfo).port;
  // The one answer every server gives (@s2s/http-errors answerParserRefusals): 431 carries its own code.
  const cases: [string, Buffer, number, string][] = [
    [
      'a control byte in a header value',
      Buffer.from('GET /v1/realtime?session_id=x HTTP/1.1\r\nHost: a\r\nX-Bad: a\u0001b\r\n\r\n', 'latin1'),
      400,
      'invalid_request',
    ],
    [
      'headers over the limit',
      Buffer.from(`GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`, 'latin1'),
      431,
      'request_header_fields_too_large',
    ],
    ['not HTTP at all', Buffer.from('HELLO\r\n\r\n', 'latin1'), 400, 'invalid_request'],
  ];
  for (const [name, bytes, status, code] of cases) {
    const answer = await rawExchange(port, bytes);
    const [head = '', body = ''] = answer.split('\r\n\r\n');
    t.match(head, new RegExp(`^HTTP/1.1 ${status} `), `${name}: status`);
    t.match(head, /\r\nX-Request-Id: req_[0-9a-f]{32}/i, `${name}: X-Request-Id`);
    const parsed = ErrorResponse.safeParse(JSON.parse(body));
    t.ok(parsed.success, `${name}: ErrorResponse`);
    t.equal(parsed.data?.error.code, code, `${name}: code`);
    t.match(head, new RegExp(`X-Request-Id: ${parsed.data?.error.request_id}`), `${name}: the same request id`);
  }
});
