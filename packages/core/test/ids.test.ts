import t from 'tap';
import { bearerToken, constantTimeEqual, hashApiKey, isApiKeyShaped, issueApiKey, newId, randomBase62 } from '../src/ids.js';
import { realtimeUrl } from '../src/session-resource.js';

t.test('api keys', async (t) => {
  const k = issueApiKey();
  t.match(k.secret, /^vr_sk_[0-9A-Za-z]{40}$/);
  t.ok(isApiKeyShaped(k.secret));
  t.equal(k.hash, hashApiKey(k.secret));
  t.not(k.hash, k.secret);
  t.notOk(k.hash.includes(k.secret.slice(6)), 'the hash does not contain the secret');
  t.equal(k.displayPrefix, k.secret.slice(0, 10));
  t.not(issueApiKey().secret, k.secret);
  t.notOk(isApiKeyShaped('vr_sk_short'));
  t.notOk(isApiKeyShaped('sk_' + 'a'.repeat(40)));
});

t.test('ids and base62', async (t) => {
  t.match(newId('vs'), /^vs_[0-9A-Za-z]{24}$/);
  t.equal(randomBase62(100).length, 100);
  const seen = new Set(Array.from({ length: 1000 }, () => newId('att')));
  t.equal(seen.size, 1000);
});

t.test('bearer parsing', async (t) => {
  t.equal(bearerToken('Bearer abc'), 'abc');
  t.equal(bearerToken('bearer abc'), 'abc');
  t.equal(bearerToken('Basic abc'), null);
  t.equal(bearerToken(undefined), null);
  t.equal(bearerToken('Bearer a b'), null);
  t.ok(constantTimeEqual('x', 'x'));
  t.notOk(constantTimeEqual('x', 'y'));
});

t.test('realtime url carries the session id', async (t) => {
  t.equal(realtimeUrl('wss://gw.example/v1/realtime', 'vs_1'), 'wss://gw.example/v1/realtime?session_id=vs_1');
});

t.test('realtime url: the same string URL writes, for any base and id, the first time and after', async (t) => {
  const byUrl = (base: string, id: string) => {
    const url = new URL(base);
    url.searchParams.set('session_id', id);
    return url.toString();
  };
  const bases = [
    'ws://127.0.0.1:8081/v1/realtime',
    'wss://gw.example/v1/realtime?region=eu&x=a%20b+c',
    'wss://gw.example/v1/realtime?session_id=old&session_id=older&k=1#frag',
    'wss://gw.example:443/v1/real%74ime/?',
    'wss://gw.example/v1/realtime?p=S2sSessionIdPlaceholder0',
  ];
  const ids = ['vs_1', newId('vs'), 'a b', 'x&y=z', 'é+%', ''];
  for (const base of bases) {
    for (let pass = 0; pass < 2; pass++) {
      for (const id of ids) t.equal(realtimeUrl(base, id), byUrl(base, id), `${base} ${id}`);
    }
  }
  t.throws(() => realtimeUrl('not a url', 'vs_1'));
  t.throws(() => realtimeUrl('not a url', 'vs_1'));
});
