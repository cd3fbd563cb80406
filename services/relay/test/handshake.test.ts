// Subprotocol negotiation and credential selection (pure; decisions.md "The OpenAI-compatible dialect").
import t from 'tap';
import { checkOrigin, negotiate } from '../src/server/handshake.js';

const EK = `ek_${'a1B2'.repeat(10)}`;
const KEY = `vr_sk_${'x'.repeat(40)}`;

t.test('svc-realtime-v1 offered: that protocol, on either path', async (t) => {
  for (const legacyPath of [false, true]) {
    const n = negotiate({ offered: 'svc-realtime-v1', authorization: `Bearer ${KEY}`, legacyPath });
    t.same(n, { dialect: 'svc-realtime-v1', protocol: 'svc-realtime-v1', credential: { kind: 'api_key', authorization: `Bearer ${KEY}` } });
  }
  const beside = negotiate({ offered: `svc-realtime-v1.auth.${EK}, svc-realtime-v1`, authorization: undefined, legacyPath: false });
  t.same(beside, { dialect: 'svc-realtime-v1', protocol: 'svc-realtime-v1', credential: { kind: 'client_secret', secret: EK } });
  const bearer = negotiate({ offered: 'svc-realtime-v1', authorization: `Bearer ${EK}`, legacyPath: false });
  t.same(bearer.credential, { kind: 'client_secret', secret: EK }, 'a bearer ek_ is a client secret');
  const same = negotiate({ offered: `svc-realtime-v1, openai-insecure-api-key.${EK}`, authorization: `Bearer ${EK}`, legacyPath: false });
  t.same(same.credential, { kind: 'client_secret', secret: EK }, 'the same secret twice is one credential');
});

t.test('the canonical path requires svc-realtime-v1; the legacy path falls to the OpenAI dialect', async (t) => {
  t.throws(() => negotiate({ offered: 'realtime', authorization: undefined, legacyPath: false }), {
    code: 'invalid_request',
    message: /svc-realtime-v1 subprotocol is required/,
  });
  t.throws(() => negotiate({ offered: undefined, authorization: undefined, legacyPath: false }), { code: 'invalid_request' });
  const none = negotiate({ offered: undefined, authorization: `Bearer ${KEY}`, legacyPath: true });
  t.same(
    none,
    { dialect: 'openai', protocol: null, credential: { kind: 'api_key', authorization: `Bearer ${KEY}` } },
    'nothing offered: nothing echoed',
  );
  const realtime = negotiate({ offered: 'realtime', authorization: `Bearer ${KEY}`, legacyPath: true });
  t.same(
    realtime,
    { dialect: 'openai', protocol: 'realtime', credential: { kind: 'api_key', authorization: `Bearer ${KEY}` } },
    'realtime echoed',
  );
  const sdk = negotiate({
    offered: `realtime, openai-insecure-api-key.${EK}, openai-beta.realtime-v1, openai-agents-sdk.0.1`,
    authorization: undefined,
    legacyPath: true,
  });
  t.same(sdk, { dialect: 'openai', protocol: 'realtime', credential: { kind: 'client_secret', secret: EK } }, 'the secret never echoed');
  const markers = negotiate({
    offered: 'openai-agents-sdk.0.1, openai-beta.realtime-v1',
    authorization: `Bearer ${KEY}`,
    legacyPath: true,
  });
  t.equal(markers.protocol, null, 'SDK markers are ignored, not echoed');
  const svc = negotiate({ offered: 'realtime, svc-realtime-v1', authorization: `Bearer ${KEY}`, legacyPath: true });
  t.equal(svc.dialect, 'svc-realtime-v1', 'svc-realtime-v1 offered wins');
});

t.test('credentials in subprotocols: API keys 401, malformed or conflicting secrets 401, two credentials 400', async (t) => {
  t.throws(() => negotiate({ offered: `svc-realtime-v1, openai-insecure-api-key.${KEY}`, authorization: undefined, legacyPath: false }), {
    code: 'invalid_vr_sk',
    message: /subprotocol/,
  });
  t.throws(() => negotiate({ offered: `svc-realtime-v1, svc-realtime-v1.auth.${KEY}`, authorization: `Bearer ${KEY}`, legacyPath: true }), {
    code: 'invalid_vr_sk',
  });
  t.throws(() => negotiate({ offered: 'svc-realtime-v1, svc-realtime-v1.auth.ek_short', authorization: undefined, legacyPath: false }), {
    code: 'invalid_client_secret',
  });
  const other = `ek_${'Z'.repeat(40)}`;
  t.throws(
    () => negotiate({ offered: `svc-realtime-v1, svc-realtime-v1.auth.${other}`, authorization: `Bearer ${EK}`, legacyPath: false }),
    { code: 'invalid_client_secret' },
  );
  t.throws(() => negotiate({ offered: `svc-realtime-v1, svc-realtime-v1.auth.${EK}`, authorization: `Bearer ${KEY}`, legacyPath: false }), {
    code: 'invalid_request',
  });
});

t.test('checkOrigin', async (t) => {
  t.doesNotThrow(() => checkOrigin('https://any.example', undefined), 'unset: any');
  t.doesNotThrow(() => checkOrigin('https://any.example', '*'));
  t.doesNotThrow(() => checkOrigin(undefined, ['https://app.example.com']), 'no Origin: not a browser');
  t.doesNotThrow(() => checkOrigin('https://app.example.com', ['https://app.example.com']));
  t.throws(() => checkOrigin('https://evil.example', ['https://app.example.com']), { code: 'origin_not_allowed' });
  t.throws(() => checkOrigin('null', ['https://app.example.com']), { code: 'origin_not_allowed' });
});
