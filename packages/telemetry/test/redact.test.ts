import t from 'tap';
import { redactString } from '../src/index.js';

t.test('credentials are removed from free text', async (t) => {
  const cases: [string, string][] = [
    ['Bearer vr_sk_abc123', 'Bearer [REDACTED]'],
    ['authorization: bearer eyJhbGciOi.x.y', 'authorization: bearer [REDACTED]'],
    ['key vr_sk_AbC0123 leaked', 'key vr_sk_[REDACTED] leaked'],
    ['Basic dXNlcjpwYXNzd29yZA==', 'Basic [REDACTED]'],
    ['sk-proj-0123456789abcdefghij', 'sk-[REDACTED]'],
    ['/v1/realtime?session_id=vs_1&api_key=x1', '/v1/realtime?session_id=vs_1&api_key=[REDACTED]'],
    ['wss://h/x?key=abc&model=m', 'wss://h/x?key=[REDACTED]&model=m'],
    ['?access_token=abc#frag', '?access_token=[REDACTED]#frag'],
  ];
  for (const [input, expected] of cases) t.equal(redactString(input), expected, input);
});

t.test('ordinary text is left alone', async (t) => {
  for (const s of ['session attached', '/v1/realtime?session_id=vs_abc', 'Basic plan', 'task-runner', 'key_abc123']) {
    t.equal(redactString(s), s);
  }
});

t.test('a key glued after a word character is still removed, in a path, a query or a message', async (t) => {
  const key = 'vr_sk_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789';
  const ek = 'ek_0123456789abcdefghijABCDEFGHIJ012345';
  const cases: [string, string][] = [
    [`/v1/voice/sessions/vs_x_${key}`, '/v1/voice/sessions/vs_x_vr_sk_[REDACTED]'],
    [`/v1/voice/sessions/vs_x_${key}/end`, '/v1/voice/sessions/vs_x_vr_sk_[REDACTED]/end'],
    [`/v1/voice/sessions/${key}`, '/v1/voice/sessions/vr_sk_[REDACTED]'],
    [`session vs_1${key} gone`, 'session vs_1vr_sk_[REDACTED] gone'],
    [`/v1/realtime?session_id=vs_1&note=x_${key}`, '/v1/realtime?session_id=vs_1&note=x_vr_sk_[REDACTED]'],
    [`subprotocol openai-insecure-api-key.${ek}`, 'subprotocol openai-insecure-api-key.ek_[REDACTED]'],
    [`svc-realtime-v1.auth.${ek}`, 'svc-realtime-v1.auth.ek_[REDACTED]'],
    [`/v1/realtime/x_${ek}`, '/v1/realtime/x_ek_[REDACTED]'],
    [`upstream key sk-proj-0123456789abcdefghij`, 'upstream key sk-[REDACTED]'],
    [`header x_sk-proj-0123456789abcdefghij`, 'header x_sk-[REDACTED]'],
    [`key_AIzaSyA1234567890abcdefghijklmnopqrstuv`, 'key_[REDACTED]'],
    ['api_key=abc&session_id=vs_1', 'api_key=[REDACTED]&session_id=vs_1'],
  ];
  for (const [input, expected] of cases) t.equal(redactString(input), expected, input);
});

t.test('ids and short look-alikes are not keys', async (t) => {
  for (const s of ['vs_abcdefghijklmnopqrstuvwx', 'key_abcdefghijklmnopqrstuvwx', 'week_1 report', 'ek_short', 'session_id=vs_1']) {
    t.equal(redactString(s), s);
  }
});
