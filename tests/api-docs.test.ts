// docs/openapi.json and docs/asyncapi.json are what scripts/api-docs.ts makes of the current zod contract
// (a contract change without `npm run api-docs` fails here), and both are valid documents of their kind.
import { readFileSync } from 'node:fs';
import { Parser } from '@asyncapi/parser';
import { compileErrors, validate } from '@readme/openapi-parser';
import t from 'tap';
import { ASYNCAPI_FILE, buildAsyncApi, buildOpenApi, OPENAPI_FILE, render } from '../scripts/api-docs.js';

const openapi = buildOpenApi();
const asyncapi = buildAsyncApi();

t.test('the committed documents are the generated ones', async (t) => {
  for (const [file, doc] of [
    [OPENAPI_FILE, openapi],
    [ASYNCAPI_FILE, asyncapi],
  ] as const) {
    t.ok(readFileSync(file, 'utf8') === render(doc), `${file} is up to date (run npm run api-docs after changing the contract)`);
  }
});

t.test('OpenAPI 3.1: valid, every route with its schemas', async (t) => {
  const result = await validate(structuredClone(openapi) as never);
  t.ok(result.valid, result.valid ? 'valid' : compileErrors(result));
  const paths = openapi.paths as Record<string, Record<string, any>>;
  const create = paths['/v1/voice/sessions']!.post;
  t.same(create.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/CreateSessionRequest' });
  t.same(Object.keys(create.responses), ['201', '400', '401', '402', '404', '409', '429', '503']);
  t.ok(create.parameters.some((p: any) => p.name === 'Idempotency-Key'));
  const schemas = (openapi.components as any).schemas;
  t.same(schemas.VoiceSession.properties.status.enum, ['ready', 'active', 'completed', 'cancelled', 'failed', 'expired']);
  t.ok(schemas.VoiceSession.required.includes('billing'));
  t.same(Object.keys(schemas.ErrorResponse.properties.error.properties), ['type', 'code', 'message', 'request_id']);
  t.same(
    paths['/admin/v1/sessions']!.get.parameters.map((p: any) => p.name),
    ['limit', 'after', 'key_id', 'wallet_id', 'model', 'status'],
  );
  const playground = paths['/console/api/playground/client_secrets']!.post;
  t.same(playground.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/PlaygroundSecretRequest' });
  t.same(playground.security, [{ adminToken: [] }], "the console's backend spends a wallet: admin token only");
  t.same(schemas.PlaygroundSecretRequest.required, ['key_id', 'model']);
});

t.test('AsyncAPI 3.0: valid, both dialects with every event of the contract', async (t) => {
  const { diagnostics } = await new Parser().parse(structuredClone(asyncapi) as never);
  const errors = diagnostics.filter((d) => d.severity === 0);
  t.same(
    errors.map((d) => `${d.code} ${d.path.join('.')}: ${d.message}`),
    [],
    'no errors',
  );
  const messages = (asyncapi.components as any).messages as Record<string, { name: string; payload: { $ref: string } }>;
  const svc = Object.keys(messages).filter((k) => k.startsWith('svc_'));
  const openai = Object.keys(messages).filter((k) => k.startsWith('openai_'));
  // 11 client and 30 server event types in each dialect.
  t.equal(svc.length, 41);
  t.equal(openai.length, 41);
  t.equal(messages.openai_response_output_audio_delta!.payload.$ref, '#/components/schemas/openai_response_output_audio_delta');
  t.equal(
    messages.openai_response_output_text_delta!.payload.$ref,
    '#/components/schemas/svc_response_output_text_delta',
    'a shared event is one schema',
  );
  const schemas = (asyncapi.components as any).schemas;
  t.ok(schemas.openai_response_output_audio_delta.properties.delta, 'OpenAI output audio in delta');
  t.ok(schemas.svc_response_output_audio_delta.properties.audio, 'svc output audio in audio');
});
