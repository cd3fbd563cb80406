import t from 'tap';
import { REALTIME_PROTOCOL } from '@s2s/contract';
import { createCodecs, DIALECTS } from '../src/codecs/index.js';
import { loadConfig } from '../src/config.js';
import { createProviderRegistry, PROVIDER_ENV, PROVIDERS } from '../src/providers/index.js';
import { negotiate } from '../src/server/handshake.js';

t.test('providers: one entry per name, no variable read by two, each adapter named as its entry', async (t) => {
  const names = PROVIDERS.map((p) => p.name);
  t.same(names, ['local', 'openai', 'azure', 'gemini']);
  const keys = PROVIDERS.flatMap((p) => Object.keys(p.env));
  t.equal(new Set(keys).size, keys.length, 'no variable in two entries');
  t.same(Object.keys(PROVIDER_ENV).sort(), [...keys].sort(), 'config takes every entry variable');
  const all = loadConfig({
    OPENAI_API_KEY: 'sk-test-0123456789',
    AZURE_OPENAI_ENDPOINT: 'https://example.openai.azure.com',
    AZURE_OPENAI_API_KEY: 'azure-key-0123456789',
    GEMINI_API_KEY: 'gm-test-0123456789',
  });
  const registry = createProviderRegistry(all);
  for (const name of names) t.equal(registry.get(name)?.adapter.name, name, `${name} offered under its name`);
});

t.test('providers: only local without keys; azure needs both its endpoint and its key', async (t) => {
  const bare = createProviderRegistry(loadConfig({}));
  t.same(
    PROVIDERS.map((p) => bare.get(p.name) !== undefined),
    [true, false, false, false],
  );
  const half = createProviderRegistry(loadConfig({ AZURE_OPENAI_API_KEY: 'azure-key-0123456789' }));
  t.equal(half.get('azure'), undefined);
  const blank = createProviderRegistry(loadConfig({ OPENAI_API_KEY: '  ' }));
  t.equal(blank.get('openai'), undefined, 'a blank key is no key');
});

t.test('dialects: every name negotiation answers is registered; codecs per process or per attachment', async (t) => {
  const registered = DIALECTS.map((d) => d.name);
  const negotiated = [
    negotiate({ offered: REALTIME_PROTOCOL, authorization: undefined, legacyPath: false }).dialect,
    negotiate({ offered: undefined, authorization: undefined, legacyPath: true }).dialect,
  ];
  for (const d of negotiated) t.ok(registered.includes(d), `${d} registered`);
  t.equal(new Set(registered).size, registered.length, 'one entry per name');
  const codecFor = createCodecs();
  const a = { id: 'vs_a', modelId: 'm' };
  const b = { id: 'vs_b', modelId: 'm' };
  t.equal(codecFor('svc-realtime-v1', a), codecFor('svc-realtime-v1', b), 'svc-realtime-v1: one codec for the process');
  t.not(codecFor('openai', a), codecFor('openai', b), 'openai: one codec per attachment');
  t.equal(codecFor('openai', a).protocol, 'realtime');
  t.equal(codecFor('svc-realtime-v1', a).protocol, REALTIME_PROTOCOL);
  t.throws(() => codecFor('nope' as never, a), /not registered/);
});
