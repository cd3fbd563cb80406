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
