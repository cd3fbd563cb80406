// The one answer every HTTP server gives to what Node's parser refuses (docs/architecture.md "Odd HTTP input").
import { once } from 'node:events';
import http from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import t from 'tap';
import { ErrorResponse } from '@s2s/contract';
import { answerParserRefusals } from '../src/index.js';

async function serve(t: { teardown(fn: () => unknown): void }) {
  const lines: Record<string, unknown>[] = [];
  const refused: Duplex[] = [];
  const server = http.createServer((_req, res) => res.end('ok'));
  answerParserRefusals(server, { info: (fields) => void lines.push(fields) }, (socket) => void refused.push(socket));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => (server.closeAllConnections(), server.close()));
  return { port: (server.address() as AddressInfo).port, lines, refused };
}

function exchange(port: number, bytes: string): Promise<{ status: number; head: string; body: unknown }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => (text += c));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = text.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), head, body: JSON.parse(body) });
    });
    socket.write(bytes, 'latin1');
  });
}

t.test('refusals: 400, 431 and CONNECT 404 as ErrorResponses with a fresh request id, then the connection closes', async (t) => {
  const s = await serve(t);
  const cases: [string, string, number, string][] = [
    ['a control byte in a header value', 'GET / HTTP/1.1\r\nHost: a\r\nX: a\x01b\r\n\r\n', 400, 'invalid_request'],
    ['not HTTP at all', 'HELLO\r\n\r\n', 400, 'invalid_request'],
    ['headers over 16 KiB', `GET / HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(17_000)}\r\n\r\n`, 431, 'request_header_fields_too_large'],
    ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 404, 'not_found'],
  ];
  for (const [name, bytes, status, code] of cases) {
    const answer = await exchange(s.port, bytes);
    t.equal(answer.status, status, name);
    const parsed = ErrorResponse.safeParse(answer.body);
    t.ok(parsed.success, `${name}: ErrorResponse`);
    t.equal(parsed.data?.error.code, code, `${name}: code`);
    t.match(answer.head, new RegExp(`\\r\\nX-Request-Id: ${parsed.data?.error.request_id}\\r\\n`), `${name}: the same request id`);
    t.match(answer.head, /\r\nConnection: close\r\n/, `${name}: closes`);
  }
  t.equal(s.refused.length, 3, 'onRefused runs for each parser refusal');
  t.same(
    s.lines.map((l) => l.status),
    [400, 400, 431, 404],
    'one log line each',
  );
  t.notOk(JSON.stringify(s.lines).includes('a\x01b'), 'the refused header value is not logged');
});
