// The current OpenAI session fields with the real `openai` client (decisions.md, "Current OpenAI session
// fields"), through the edge's TLS: `reasoning` and `truncation` on a model whose provider honours them
// (provider `openai`, here a second simulator process standing in for OpenAI: it speaks the GA protocol and
// honours `reasoning` deterministically) are passed on and reported; on one whose provider does not
// (`local/echo-1`), `reasoning` is refused naming the param and `truncation` is reported as what takes effect.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { CreateKeyResponse } from '@s2s/contract';
import { SEED_RATE } from '@s2s/core';
import { api, spawnService, startEdge, startStack } from './stack.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const UPSTREAM_KEY = 'openai-e2e-key-0123456789';

function selfSigned(): { cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), 's2s-fields-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

interface Report {
  errors: { code: string; param: string }[];
  updated: Record<string, any>[];
  text: string;
}

t.test('reasoning and truncation from the openai client: passed on where honoured, refused or reported where not', async (t) => {
  const upstream = await spawnService(t, {
    name: 'openai-standin',
    node: process.execPath,
    args: ['--import', 'tsx', 'services/local-provider/src/main.ts'],
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', OTEL_SDK_DISABLED: 'true', LOCAL_PROVIDER_PORT: '0', LOCAL_PROVIDER_API_KEY: UPSTREAM_KEY },
    listening: 'local provider listening',
  });
  const stack = await startStack(t, {
    relay: { OPENAI_API_KEY: UPSTREAM_KEY, OPENAI_REALTIME_URL: `ws://127.0.0.1:${upstream.port}/v1/realtime` },
  });
  const tls = selfSigned();
  const edge = await startEdge(t, stack, tls);
  const put = await api(stack, 'PUT', '/admin/v1/models', {
    admin: true,
    body: {
      id: 'openai/gpt-realtime-2',
      display_name: 'GPT Realtime 2',
      owned_by: 'openai',
      provider: 'openai',
      provider_model: 'gpt-realtime-2',
      enabled: true,
      approved: true,
      pricing: SEED_RATE,
    },
  });
  t.equal(put.status, 200, 'a model on provider openai');
  // The catalog says what each model's provider honours, as the relay then does.
  const models = await api<{ data: { id: string; capabilities: { session_fields?: Record<string, unknown> } }[] }>(
    stack,
    'GET',
    '/v1/models',
  );
  const fieldsOf = (id: string) => models.body.data.find((m) => m.id === id)?.capabilities.session_fields;
  t.same(fieldsOf('openai/gpt-realtime-2'), {
    reasoning: true,
    prompt: true,
    parallel_tool_calls: 'honoured',
    truncation: 'honoured',
    include: 'honoured',
  });
  t.same(fieldsOf('local/echo-1'), {
    reasoning: false,
    prompt: false,
    parallel_tool_calls: false,
    truncation: 'disabled',
    include: 'none',
  });
  const key = CreateKeyResponse.parse(
    (await api<CreateKeyResponse>(stack, 'POST', '/admin/v1/keys', { admin: true, body: { balance_cents: 10_000, label: 'fields' } })).body,
  );

  const run = async (model: string): Promise<Report> => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', fileURLToPath(new URL('./openai-session-fields-client.ts', import.meta.url))],
      {
        env: { ...process.env, NODE_EXTRA_CA_CERTS: tls.cert, S2S_BASE_URL: `${edge.origin}/v1`, S2S_API_KEY: key.key, S2S_MODEL: model },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    t.equal(code, 0, `${model}: the client finished`);
    return JSON.parse(out.trim().split('\n').at(-1)!) as Report;
  };

  const honoured = await run('openai/gpt-realtime-2');
  t.same(honoured.errors, [], 'openai: accepted');
  t.match(honoured.updated[0], {
    model: 'openai/gpt-realtime-2',
    reasoning: { effort: 'high' },
    truncation: { type: 'retention_ratio', retention_ratio: 0.8 },
  });
  t.equal(honoured.text, '(high effort) hello', 'the upstream got the reasoning effort (the stand-in answers with it)');

  const plain = await run('local/echo-1');
  t.same(plain.errors, [{ code: 'unsupported_parameter', param: 'session.reasoning' }], 'local: reasoning refused, naming the param');
  t.equal(plain.updated.length, 1);
  t.equal(plain.updated[0]!.truncation, 'disabled', 'the hint accepted, reported as what takes effect: the simulator never truncates');
  t.notOk('reasoning' in plain.updated[0]!, 'no reasoning in force');
});
