// Generates docs/openapi.json (OpenAPI 3.1, the HTTP API) and docs/asyncapi.json (AsyncAPI 3.0, both
// realtime dialects) from the zod contract: every schema is @s2s/contract's, converted by zod's own
// z.toJSONSchema; this file only says which route answers which schema. `npm run api-docs` rewrites
// them; `--check` (part of `npm run lint`) and tests/api-docs.test.ts fail when they are stale.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import * as c from '@s2s/contract';

export const OPENAPI_FILE = fileURLToPath(new URL('../docs/openapi.json', import.meta.url));
export const ASYNCAPI_FILE = fileURLToPath(new URL('../docs/asyncapi.json', import.meta.url));

const VERSION = '1.0.0';
type Json = Record<string, unknown>;

/** Named schemas: each becomes a component, referenced wherever it appears (in any other schema too). */
function registry(entries: Record<string, z.ZodType>) {
  const reg = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(entries)) reg.add(schema, { id });
  return reg;
}

/** The components of a registry, `$ref`s pointing at `prefix`; `$id`/`$schema` dropped (the document sets the dialect). */
function components(reg: ReturnType<typeof registry>, prefix: string, target: 'draft-2020-12' | 'draft-7', io: 'input' | 'output'): Json {
  const { schemas } = z.toJSONSchema(reg, { target, io, uri: (id) => `${prefix}${id}`, unrepresentable: 'any' }) as {
    schemas: Record<string, Json>;
  };
  return Object.fromEntries(Object.entries(schemas).map(([id, { $id: _id, $schema: _s, ...schema }]) => [id, schema]));
}

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

// ---- OpenAPI ----

/** Request bodies are read as input (defaults optional), answers as output. */
const REQUESTS = {
  CreateSessionRequest: c.CreateSessionRequest,
  EndSessionRequest: c.EndSessionRequest,
  CreateRealtimeClientSecretRequest: c.CreateRealtimeClientSecretRequest,
  CreateSessionClientSecretRequest: c.CreateSessionClientSecretRequest,
  CreateKeyRequest: c.CreateKeyRequest,
  UpdateKeyRequest: c.UpdateKeyRequest,
  CreditWalletRequest: c.CreditWalletRequest,
  UpsertModelRequest: c.UpsertModelRequest,
  PlaygroundSecretRequest: c.PlaygroundSecretRequest,
};
const RESPONSES = {
  ModelList: c.ModelList,
  VoiceSession: c.VoiceSession,
  ErrorResponse: c.ErrorResponse,
  ClientSecret: c.ClientSecret,
  RealtimeClientSecretResponse: c.RealtimeClientSecretResponse,
  CreateKeyResponse: c.CreateKeyResponse,
  ApiKeyResource: c.ApiKeyResource,
  RevokeKeyResponse: c.RevokeKeyResponse,
  Wallet: c.Wallet,
  AdminModel: c.AdminModel,
  AdminKeyList: c.AdminKeyList,
  AdminModelList: c.AdminModelList,
  AdminSessionList: c.AdminSessionList,
  LedgerEntryList: c.LedgerEntryList,
  PlaygroundSecret: c.PlaygroundSecret,
};

interface Route {
  method: 'get' | 'post' | 'put' | 'patch';
  path: string;
  summary: string;
  auth: 'none' | 'key' | 'admin';
  body?: keyof typeof REQUESTS;
  /** The body may be left out (end, a session's client secret). */
  bodyOptional?: boolean;
  query?: z.ZodObject;
  ok: [number, keyof typeof RESPONSES];
  /** Error codes this route answers (api-v1 §7, decisions.md, docs/operator-api.md). */
  errors: c.ErrorCode[];
  idempotent?: boolean;
}

const ADMIN_ERRORS: c.ErrorCode[] = ['invalid_admin_token'];
const LIST_ERRORS: c.ErrorCode[] = ['invalid_admin_token', 'invalid_request'];

const ROUTES: Route[] = [
  {
    method: 'get',
    path: '/v1/models',
    summary: 'The public, priced catalog',
    auth: 'none',
    ok: [200, 'ModelList'],
    errors: ['service_unavailable'],
  },
  {
    method: 'post',
    path: '/v1/voice/sessions',
    summary: 'Create a voice session (reserves the preauthorization)',
    auth: 'key',
    body: 'CreateSessionRequest',
    ok: [201, 'VoiceSession'],
    errors: [
      'invalid_request',
      'invalid_vr_sk',
      'insufficient_wallet_balance',
      'model_not_found',
      'idempotency_conflict',
      'rate_limit_exceeded',
      'service_unavailable',
    ],
    idempotent: true,
  },
  {
    method: 'get',
    path: '/v1/voice/sessions/{session_id}',
    summary: 'Retrieve a session (an idle one is expired and settled by the read)',
    auth: 'key',
    ok: [200, 'VoiceSession'],
    errors: ['invalid_vr_sk', 'session_not_found', 'session_expired', 'service_unavailable'],
  },
  {
    method: 'post',
    path: '/v1/voice/sessions/{session_id}/end',
    summary: 'End a session and wait for its settlement: the terminal resource with its bill',
    auth: 'key',
    body: 'EndSessionRequest',
    bodyOptional: true,
    ok: [200, 'VoiceSession'],
    errors: ['invalid_request', 'invalid_vr_sk', 'session_not_found', 'session_termination_failed', 'session_store_unavailable'],
  },
  {
    method: 'post',
    path: '/v1/voice/sessions/{session_id}/client_secrets',
    summary: 'Mint an ek_ client secret that attaches this session from a browser',
    auth: 'key',
    body: 'CreateSessionClientSecretRequest',
    bodyOptional: true,
    ok: [201, 'ClientSecret'],
    errors: ['invalid_request', 'invalid_vr_sk', 'session_not_found', 'session_expired'],
  },
  {
    method: 'post',
    path: '/v1/realtime/client_secrets',
    summary: "Create a session with OpenAI's session settings and an ek_ client secret for it",
    auth: 'key',
    body: 'CreateRealtimeClientSecretRequest',
    ok: [200, 'RealtimeClientSecretResponse'],
    errors: [
      'invalid_request',
      'invalid_vr_sk',
      'insufficient_wallet_balance',
      'model_not_found',
      'rate_limit_exceeded',
      'service_unavailable',
    ],
  },
  {
    method: 'post',
    path: '/admin/v1/keys',
    summary: 'Mint an API key (shown once) with its wallet',
    auth: 'admin',
    body: 'CreateKeyRequest',
    ok: [201, 'CreateKeyResponse'],
    errors: ['invalid_request', ...ADMIN_ERRORS],
  },
  {
    method: 'get',
    path: '/admin/v1/keys',
    summary: 'List keys, newest first',
    auth: 'admin',
    query: c.ListKeysQuery,
    ok: [200, 'AdminKeyList'],
    errors: LIST_ERRORS,
  },
  {
    method: 'get',
    path: '/admin/v1/keys/{key_id}',
    summary: 'A key (never its secret)',
    auth: 'admin',
    ok: [200, 'ApiKeyResource'],
    errors: [...ADMIN_ERRORS, 'key_not_found'],
  },
  {
    method: 'patch',
    path: '/admin/v1/keys/{key_id}',
    summary: "Change a key's label or limits (null: the gateway's default)",
    auth: 'admin',
    body: 'UpdateKeyRequest',
    ok: [200, 'ApiKeyResource'],
    errors: ['invalid_request', ...ADMIN_ERRORS, 'key_not_found'],
  },
  {
    method: 'post',
    path: '/admin/v1/keys/{key_id}/revoke',
    summary: 'Revoke a key',
    auth: 'admin',
    ok: [200, 'RevokeKeyResponse'],
    errors: [...ADMIN_ERRORS, 'key_not_found'],
  },
  {
    method: 'get',
    path: '/admin/v1/wallets/{wallet_id}',
    summary: 'A wallet',
    auth: 'admin',
    ok: [200, 'Wallet'],
    errors: [...ADMIN_ERRORS, 'wallet_not_found'],
  },
  {
    method: 'post',
    path: '/admin/v1/wallets/{wallet_id}/credit',
    summary: 'Credit a wallet',
    auth: 'admin',
    body: 'CreditWalletRequest',
    ok: [200, 'Wallet'],
    errors: ['invalid_request', ...ADMIN_ERRORS, 'wallet_not_found'],
  },
  {
    method: 'get',
    path: '/admin/v1/wallets/{wallet_id}/ledger',
    summary: "A wallet's ledger entries, newest first",
    auth: 'admin',
    query: c.ListLedgerQuery,
    ok: [200, 'LedgerEntryList'],
    errors: [...LIST_ERRORS, 'wallet_not_found'],
  },
  {
    method: 'get',
    path: '/admin/v1/models',
    summary: 'List every model with a current rate, approved or not',
    auth: 'admin',
    query: c.ListModelsQuery,
    ok: [200, 'AdminModelList'],
    errors: LIST_ERRORS,
  },
  {
    method: 'put',
    path: '/admin/v1/models',
    summary: 'Create or update a model; a pricing change makes a new rate snapshot',
    auth: 'admin',
    body: 'UpsertModelRequest',
    ok: [200, 'AdminModel'],
    errors: ['invalid_request', ...ADMIN_ERRORS],
  },
  {
    method: 'get',
    path: '/admin/v1/sessions',
    summary: 'List sessions with their owner, newest first',
    auth: 'admin',
    query: c.ListSessionsQuery,
    ok: [200, 'AdminSessionList'],
    errors: LIST_ERRORS,
  },
  {
    method: 'post',
    path: '/console/api/playground/client_secrets',
    summary: "The web console's backend: an ek_ client secret for a new session of the key the operator picks",
    auth: 'admin',
    body: 'PlaygroundSecretRequest',
    ok: [200, 'PlaygroundSecret'],
    errors: [
      'invalid_request',
      'invalid_admin_token',
      'key_not_found',
      'invalid_vr_sk',
      'insufficient_wallet_balance',
      'model_not_found',
      'rate_limit_exceeded',
      'service_unavailable',
    ],
  },
];

const REQUEST_ID_HEADER = { description: 'The request id (also in an error body).', schema: { type: 'string' } };

export function buildOpenApi(): Json {
  const schemas = {
    ...components(registry(REQUESTS), '#/components/schemas/', 'draft-2020-12', 'input'),
    ...components(registry(RESPONSES), '#/components/schemas/', 'draft-2020-12', 'output'),
  };
  const paths: Record<string, Record<string, Json>> = {};
  for (const r of ROUTES) {
    const parameters: Json[] = [...r.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
      name,
      in: 'path',
      required: true,
      schema: { type: 'string', minLength: 1 },
    }));
    if (r.idempotent) {
      parameters.push({
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description: 'A retry with the same key and request answers the first session (24 h, per key).',
        schema: z.toJSONSchema(c.IdempotencyKey, { target: 'draft-2020-12', io: 'input' }),
      });
    }
    for (const [name, field] of Object.entries(r.query?.shape ?? {})) {
      const { $schema: _s, ...schema } = z.toJSONSchema(field as z.ZodType, { target: 'draft-2020-12', io: 'input' }) as Json;
      parameters.push({ name, in: 'query', required: false, schema });
    }
    const responses: Json = {
      [String(r.ok[0])]: {
        description: r.summary,
        headers: {
          'X-Request-Id': REQUEST_ID_HEADER,
          ...(r.idempotent
            ? { 'Idempotent-Replayed': { description: '`true` on a replay.', schema: { type: 'string', const: 'true' } } }
            : {}),
        },
        content: { 'application/json': { schema: ref(r.ok[1]) } },
      },
    };
    const byStatus = new Map<number, c.ErrorCode[]>();
    for (const code of r.errors) byStatus.set(c.ERROR_STATUS[code], [...(byStatus.get(c.ERROR_STATUS[code]) ?? []), code]);
    for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
      responses[String(status)] = {
        description: `${c.errorTypeForStatus(status)}: ${codes.join(', ')}`,
        headers: {
          'X-Request-Id': REQUEST_ID_HEADER,
          ...(status === 429 || status === 503 ? { 'Retry-After': { schema: { type: 'integer' } } } : {}),
        },
        content: { 'application/json': { schema: ref('ErrorResponse') } },
      };
    }
    paths[r.path] ??= {};
    paths[r.path]![r.method] = {
      summary: r.summary,
      operationId: `${r.method}${r.path.replace(/\{(\w+)\}/g, 'By_$1').replace(/[^A-Za-z0-9]+(.)?/g, (_m, ch: string | undefined) => (ch ?? '').toUpperCase())}`,
      tags: [r.path.startsWith('/admin/') ? 'operator' : 'public'],
      security: r.auth === 'none' ? [] : [{ [r.auth === 'key' ? 'apiKey' : 'adminToken']: [] }],
      ...(parameters.length ? { parameters } : {}),
      ...(r.body ? { requestBody: { required: !r.bodyOptional, content: { 'application/json': { schema: ref(r.body) } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 's2s realtime speech-to-speech gateway: HTTP API',
      version: VERSION,
      description:
        'Generated from @s2s/contract by scripts/api-docs.ts (npm run api-docs); do not edit. The contract is ' +
        '../shared/spec/api-v1.md with decisions.md. The realtime socket is described by asyncapi.json.',
    },
    servers: [{ url: 'http://127.0.0.1:8080', description: '`npm start` (HTTP_PORT moves it)' }],
    tags: [
      { name: 'public', description: 'Catalog, voice sessions and client secrets (API key `vr_sk_…`).' },
      { name: 'operator', description: 'Operator API (admin token); docs/operator-api.md.' },
    ],
    paths,
    components: {
      schemas,
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'An API key, `vr_sk_…`; server-side only.' },
        adminToken: { type: 'http', scheme: 'bearer', description: 'The operator token (ADMIN_TOKEN).' },
      },
    },
  };
}

// ---- AsyncAPI ----

const messageKey = (dialect: string, type: string) => `${dialect}_${type.replace(/[^A-Za-z0-9]+/g, '_')}`;
type EventSchema = z.ZodObject<{ type: z.ZodLiteral<string> }>;

interface Dialect {
  key: 'svc' | 'openai';
  title: string;
  description: string;
  query: Json;
  headers: Json;
  client: readonly EventSchema[];
  server: readonly EventSchema[];
}

const DIALECTS: Dialect[] = [
  {
    key: 'svc',
    title: 'svc-realtime-v1',
    description:
      "The gateway's own protocol on the session's realtime.url (api-v1 §6, decisions.md): subprotocol `svc-realtime-v1`; " +
      'the key in `Authorization: Bearer vr_sk_…`, or an `ek_` client secret as a bearer or in the subprotocol `svc-realtime-v1.auth.ek_…`.',
    query: { type: 'object', properties: { session_id: { type: 'string', minLength: 1 } }, required: ['session_id'] },
    headers: {
      type: 'object',
      properties: {
        Authorization: { type: 'string' },
        'Sec-WebSocket-Protocol': { type: 'string', description: 'svc-realtime-v1 (and svc-realtime-v1.auth.ek_…)' },
      },
    },
    client: c.ClientEvent.options as readonly EventSchema[],
    server: c.ServerEvent.options as readonly EventSchema[],
  },
  {
    key: 'openai',
    title: 'OpenAI Realtime GA (legacy path)',
    description:
      'The OpenAI-compatible dialect on the legacy path `/v1/realtime?model=<catalog id>` (decisions.md, "The OpenAI-compatible dialect"): ' +
      'a client offering no subprotocol or `realtime` gets it; the key as a bearer, or `openai-insecure-api-key.ek_…`. It creates a session ' +
      '(or attaches the one an ek_ secret was minted for) and ends it when the socket closes.',
    query: { type: 'object', properties: { model: { type: 'string' } }, required: ['model'] },
    headers: {
      type: 'object',
      properties: {
        Authorization: { type: 'string' },
        'Sec-WebSocket-Protocol': { type: 'string', description: 'realtime (and openai-insecure-api-key.ek_…), or none' },
      },
    },
    client: c.OpenAiClientEvent.options as readonly EventSchema[],
    server: c.OpenAiServerEvent.options as readonly EventSchema[],
  },
];

export function buildAsyncApi(): Json {
  const named: Record<string, z.ZodType> = {};
  // An event the dialects share is one schema: its payload is named once (by the first dialect).
  const keyOf = new Map<z.ZodType, string>();
  const channels: Json = {};
  const operations: Json = {};
  const messages: Json = {};
  for (const d of DIALECTS) {
    const channelMessages: Json = {};
    for (const [direction, events] of [
      ['client', d.client],
      ['server', d.server],
    ] as const) {
      const refs: Json[] = [];
      for (const event of events) {
        const type = event.shape.type.value;
        const key = messageKey(d.key, type);
        const schemaKey = keyOf.get(event) ?? key;
        keyOf.set(event, schemaKey);
        named[schemaKey] = event;
        messages[key] = {
          name: type,
          title: `${type} (${direction === 'client' ? 'client to server' : 'server to client'})`,
          payload: { $ref: `#/components/schemas/${schemaKey}` },
        };
        channelMessages[key] = { $ref: `#/components/messages/${key}` };
        refs.push({ $ref: `#/channels/${d.key}/messages/${key}` });
      }
      // The document describes the gateway: it receives the client's events and sends its own.
      operations[`${d.key}_${direction}_events`] = {
        action: direction === 'client' ? 'receive' : 'send',
        channel: { $ref: `#/channels/${d.key}` },
        summary: `${d.title}: ${direction === 'client' ? 'events a client sends' : 'events the gateway sends'}`,
        messages: refs,
      };
    }
    channels[d.key] = {
      address: '/v1/realtime',
      title: d.title,
      description: d.description,
      messages: channelMessages,
      bindings: { ws: { method: 'GET', query: d.query, headers: d.headers } },
    };
  }
  return {
    asyncapi: '3.0.0',
    info: {
      title: 's2s realtime speech-to-speech gateway: realtime socket',
      version: VERSION,
      description:
        'Generated from @s2s/contract by scripts/api-docs.ts (npm run api-docs); do not edit. Audio is PCM16LE 24 kHz mono, base64 ' +
        'in JSON. Close codes: 1000 ended, 1007 not UTF-8, 1008 authorization lost or abuse, 1009 too big, 1011 upstream or internal ' +
        'failure, 1012 draining (attach again), 4001 replaced.',
    },
    defaultContentType: 'application/json',
    servers: { local: { host: '127.0.0.1:8080', protocol: 'ws', description: '`npm start` (wss with TLS_CERT_FILE)' } },
    channels,
    operations,
    components: { schemas: components(registry(named), '#/components/schemas/', 'draft-7', 'output'), messages },
  };
}

export const render = (doc: Json) => `${JSON.stringify(doc, null, 2)}\n`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const docs = [
    [OPENAPI_FILE, render(buildOpenApi())],
    [ASYNCAPI_FILE, render(buildAsyncApi())],
  ] as const;
  if (process.argv.includes('--check')) {
    // `npm run lint` (so land.sh too): a contract change must come with its regenerated descriptions.
    const stale = docs.filter(([file, text]) => !existsSync(file) || readFileSync(file, 'utf8') !== text).map(([file]) => file);
    if (stale.length > 0) {
      console.error(`stale: ${stale.join(', ')} (the zod contract changed); run npm run api-docs and commit the result`);
      process.exit(1);
    }
  } else {
    for (const [file, text] of docs) writeFileSync(file, text);
    console.log(`wrote ${OPENAPI_FILE} and ${ASYNCAPI_FILE}`);
  }
}
