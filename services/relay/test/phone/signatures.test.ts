import { generateKeyPairSync, sign } from 'node:crypto';
import t from 'tap';
import { checkTelnyxSignature, checkTwilioSignature, telnyxPublicKey, twilioSignature } from '../../src/codecs/phone/signatures.js';

t.test("Twilio's documented example signs the URL and the sorted parameters", async (t) => {
  // Twilio's webhook-security example: auth token 12345, this URL and these POST parameters.
  const params = { CallSid: 'CA1234567890ABCDE', Caller: '+14158675309', Digits: '1234', From: '+14158675309', To: '+18005551212' };
  t.equal(twilioSignature('12345', 'https://mycompany.com/myapp.php?foo=1&bar=2', params), 'RSOYDt4T1cUTdK1PDd93/VVr8B8=');
});

t.test('a stream upgrade is checked against its URL, with or without the default port', async (t) => {
  const token = 'auth-token-of-the-account';
  const url = 'wss://gateway.example.com/v1/telephony/twilio';
  const signature = twilioSignature(token, url);
  t.ok(checkTwilioSignature({ authToken: token, signature, urls: [url] }));
  t.ok(checkTwilioSignature({ authToken: token, signature, urls: ['wss://gateway.example.com:443/v1/telephony/twilio'] }));
  t.ok(checkTwilioSignature({ authToken: token, signature, urls: ['wss://other.example/x', url] }), 'any candidate URL');
  t.notOk(checkTwilioSignature({ authToken: 'another-token', signature, urls: [url] }), 'another account');
  t.notOk(checkTwilioSignature({ authToken: token, signature, urls: [`${url}?x=1`] }), 'another URL');
  t.notOk(checkTwilioSignature({ authToken: token, signature: undefined, urls: [url] }), 'no signature');
  t.notOk(checkTwilioSignature({ authToken: token, signature: signature.slice(1), urls: [url] }), 'a truncated signature');
  t.notOk(checkTwilioSignature({ authToken: token, signature, urls: ['not a url'] }));
});

t.test('Telnyx: an Ed25519 signature of timestamp|body within five minutes', async (t) => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('base64');
  const key = telnyxPublicKey(raw);
  if (!key) throw new Error('key');
  const now = 1_790_000_000_000;
  const ts = String(now / 1000);
  const signature = sign(null, Buffer.from(`${ts}|`), privateKey).toString('base64');
  t.ok(checkTelnyxSignature({ publicKey: key, signature, timestamp: ts, nowMs: now }), 'an upgrade has an empty body');
  t.ok(checkTelnyxSignature({ publicKey: key, signature, timestamp: ts, nowMs: now + 299_000 }));
  t.notOk(checkTelnyxSignature({ publicKey: key, signature, timestamp: ts, nowMs: now + 301_000 }), 'a replay after 5 minutes');
  t.notOk(checkTelnyxSignature({ publicKey: key, signature, timestamp: String(now / 1000 + 1), nowMs: now }), 'another timestamp');
  t.notOk(checkTelnyxSignature({ publicKey: key, signature, timestamp: ts, body: 'x', nowMs: now }), 'another body');
  t.notOk(checkTelnyxSignature({ publicKey: key, signature: undefined, timestamp: ts, nowMs: now }));
  t.notOk(checkTelnyxSignature({ publicKey: key, signature, timestamp: undefined, nowMs: now }));
  t.notOk(checkTelnyxSignature({ publicKey: key, signature: 'AAAA', timestamp: ts, nowMs: now }), 'not 64 bytes');
  t.notOk(checkTelnyxSignature({ publicKey: key, signature, timestamp: '1e9', nowMs: now }), 'not digits');
  const other = generateKeyPairSync('ed25519').privateKey;
  const forged = sign(null, Buffer.from(`${ts}|`), other).toString('base64');
  t.notOk(checkTelnyxSignature({ publicKey: key, signature: forged, timestamp: ts, nowMs: now }), 'another key');
  const body = '{"event":"streaming.started"}';
  const withBody = sign(null, Buffer.from(`${ts}|${body}`), privateKey).toString('base64');
  t.ok(checkTelnyxSignature({ publicKey: key, signature: withBody, timestamp: ts, body, nowMs: now }), 'a webhook with a body');
  t.equal(telnyxPublicKey('c2hvcnQ='), null, 'not a 32-byte key');
});
