import { Writable } from 'node:stream';
import t from 'tap';
import { createLogger } from '../src/index.js';

const SECRET = 'vr_sk_abcdefghijklmnopqrstuvwxyz0123456789ABCD';

function capture(): { lines: () => Record<string, unknown>[]; raw: () => string; stream: Writable } {
  let buf = '';
  const stream = new Writable({
    write(chunk, _enc, cb) {
      buf += String(chunk);
      cb();
    },
  });
  return {
    stream,
    raw: () => buf,
    lines: () =>
      buf
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

t.test('JSON lines with the service name and a level label', async (t) => {
  const out = capture();
  const log = createLogger({ service: 'relay', destination: out.stream });
  log.info({ session_id: 'vs_1' }, 'session attached');
  const [line] = out.lines();
  t.equal(line?.service, 'relay');
  t.equal(line?.level, 'info');
  t.equal(line?.msg, 'session attached');
  t.equal(line?.session_id, 'vs_1');
  t.type(line?.time, 'string');
});

t.test('level option filters', async (t) => {
  const out = capture();
  const log = createLogger({ service: 'billing', level: 'warn', destination: out.stream });
  log.info('hidden');
  log.warn('shown');
  t.same(
    out.lines().map((l) => l.msg),
    ['shown'],
  );
});

t.test('authorization headers and keys are redacted', async (t) => {
  const out = capture();
  const log = createLogger({ service: 'control-plane', destination: out.stream });
  log.info({ req: { method: 'POST', headers: { authorization: `Bearer ${SECRET}`, cookie: 'sid=1' } } }, 'request');
  log.info({ headers: { authorization: `Bearer ${SECRET}`, 'x-api-key': SECRET } }, 'upstream');
  log.info({ key: SECRET }, 'key created');
  log.info({ body: { api_key: SECRET, token: 'tok', secret: 's', audio: 'AAAA', model: 'local/echo' } }, 'payload');
  log.info({ note: `client sent Bearer ${SECRET} in a query ?key=${SECRET}` }, 'odd');
  log.info(`interpolated ${SECRET}`);

  const raw = out.raw();
  t.notMatch(raw, SECRET);
  t.notMatch(raw, 'vr_sk_abc');
  t.notMatch(raw, 'AAAA');
  const lines = out.lines();
  const req = lines[0]?.req as { method: string; headers: Record<string, unknown> };
  t.equal(req.headers.authorization, '[REDACTED]');
  t.equal(req.headers.cookie, '[REDACTED]');
  t.equal(req.method, 'POST', 'the rest of the object is kept');
  t.equal((lines[1]?.headers as Record<string, unknown>)['x-api-key'], '[REDACTED]');
  t.equal(lines[2]?.key, '[REDACTED]');
  t.same(lines[3]?.body, {
    api_key: '[REDACTED]',
    token: '[REDACTED]',
    secret: '[REDACTED]',
    audio: '[REDACTED]',
    model: 'local/echo',
  });
  t.equal(lines[4]?.note, 'client sent Bearer [REDACTED] in a query ?key=[REDACTED]');
  t.equal(lines[5]?.msg, 'interpolated vr_sk_[REDACTED]');
});

t.test('the caller object is not mutated', async (t) => {
  const out = capture();
  const log = createLogger({ service: 'relay', destination: out.stream });
  const fields = { headers: { authorization: `Bearer ${SECRET}` }, note: `Bearer ${SECRET}` };
  log.info(fields, 'x');
  t.equal(fields.headers.authorization, `Bearer ${SECRET}`);
  t.equal(fields.note, `Bearer ${SECRET}`);
});

t.test('errors keep message, code and stack, and nothing else', async (t) => {
  const out = capture();
  const log = createLogger({ service: 'billing', destination: out.stream });
  const err = Object.assign(new Error(`connect failed for Bearer ${SECRET}`, { cause: new Error('ECONNREFUSED') }), {
    code: 'E_UPSTREAM',
    config: { headers: { Authorization: `Bearer ${SECRET}` } },
  });
  log.error({ err }, 'upstream failed');
  const line = out.lines()[0] as { err: Record<string, unknown> };
  t.equal(line.err.message, 'connect failed for Bearer [REDACTED]');
  t.equal(line.err.code, 'E_UPSTREAM');
  t.equal(line.err.type, 'Error');
  t.match(line.err.stack, /logger\.test\.ts/);
  t.same((line.err.cause as Record<string, unknown>).message, 'ECONNREFUSED');
  t.notOk('config' in line.err, 'arbitrary error properties are dropped');
  t.notMatch(out.raw(), SECRET);
});

t.test('a key glued to a word character is redacted in messages and fields', async (t) => {
  const out = capture();
  const log = createLogger({ service: 'control-plane', destination: out.stream });
  const ek = 'ek_0123456789abcdefghijABCDEFGHIJ012345';
  log.info({ url: { path: `/v1/voice/sessions/vs_x_${SECRET}` }, protocol: `svc-realtime-v1.auth.${ek}` }, 'request');
  log.warn(`not found: /v1/voice/sessions/vs_x_${SECRET}?x=1_${ek}`);
  const raw = out.raw();
  t.notMatch(raw, SECRET);
  t.notMatch(raw, 'abcdefghijklmnopqrstuvwxyz0123456789');
  t.notMatch(raw, ek);
  const [fields, message] = out.lines();
  t.same(fields?.url, { path: '/v1/voice/sessions/vs_x_vr_sk_[REDACTED]' });
  t.equal(fields?.protocol, 'svc-realtime-v1.auth.ek_[REDACTED]');
  t.equal(message?.msg, 'not found: /v1/voice/sessions/vs_x_vr_sk_[REDACTED]?x=1_ek_[REDACTED]');
});

t.test("secret fields at any depth of a line, and in a child's bindings", async (t) => {
  const out = capture();
  const log = createLogger({ service: 'relay', destination: out.stream });
  const child = log.child({ request_id: 'req_1', token: SECRET });
  child.info({ res: { headers: { 'set-cookie': ['sid=1'] } }, attempt: { upstream: { headers: { 'x-api-key': SECRET } } } }, 'upstream');
  t.notMatch(out.raw(), SECRET);
  const [line] = out.lines() as [Record<string, any>];
  t.equal(line.request_id, 'req_1', 'bindings are kept');
  t.equal(line.token, '[REDACTED]', 'a secret binding');
  t.equal(line.res.headers['set-cookie'], '[REDACTED]', 'a secret field of any type');
  t.equal(line.attempt.upstream.headers['x-api-key'], '[REDACTED]', 'three levels down');
});
