import {
  SESSION_MODE,
  type ClientSecret,
  type CreateRealtimeClientSecretRequest,
  type CreateSessionClientSecretRequest,
  type EndReason,
  type ModelList,
  type RealtimeClientSecretResponse,
  type VoiceSession,
} from '@s2s/contract';
import { parseErrorResponse, retryAfterSeconds, S2SApiError, S2SConnectionError, S2SError } from './errors.js';
import { connectRealtime, type ConnectOptions, type RealtimeConnection } from './realtime.js';

export interface S2SClientOptions {
  /** The gateway's HTTP origin, e.g. `http://127.0.0.1:8080` (a trailing slash is ignored). */
  baseUrl: string;
  /** `vr_sk_…`: server-side only. A browser holds no key and connects with an `ek_` secret. */
  apiKey?: string | undefined;
  /** A fetch to use instead of the global one. */
  fetch?: typeof fetch | undefined;
}

export interface CreateSessionInput {
  model: string;
  /** Makes a retried create return the first session; a fresh random one when absent. */
  idempotencyKey?: string | undefined;
}

/**
 * The HTTP API of the gateway (api-v1 §4, decisions.md "Ephemeral client secrets") and its realtime socket.
 * Every answer is typed by `@s2s/contract`; every failure is an {@link S2SError} naming the URL.
 */
export class S2SClient {
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(opts: S2SClientOptions) {
    if (!/^https?:\/\//.test(opts.baseUrl)) throw new TypeError(`baseUrl must be an http(s) URL, not ${JSON.stringify(opts.baseUrl)}`);
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.#apiKey = opts.apiKey;
    this.#fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** The public, priced catalog (no key needed). */
  readonly models = {
    list: (): Promise<ModelList> => this.request('GET', '/v1/models', { auth: false }),
  };

  readonly sessions = {
    /** 201 `ready` with `realtime.url`; the preauthorization is reserved. */
    create: (input: CreateSessionInput): Promise<VoiceSession> =>
      this.request('POST', '/v1/voice/sessions', {
        body: { model: input.model, mode: SESSION_MODE },
        headers: { 'Idempotency-Key': input.idempotencyKey ?? globalThis.crypto.randomUUID() },
      }),
    get: (id: string): Promise<VoiceSession> => this.request('GET', `/v1/voice/sessions/${encodeURIComponent(id)}`),
    /** Ends the session and waits for settlement: the terminal resource, its final usage and `billed_cents`. */
    end: (id: string, opts: { reason?: EndReason } = {}): Promise<VoiceSession> =>
      this.request('POST', `/v1/voice/sessions/${encodeURIComponent(id)}/end`, opts.reason ? { body: { reason: opts.reason } } : {}),
    /** An `ek_` secret that attaches this (owned, live) session from a browser. */
    createClientSecret: (id: string, body: CreateSessionClientSecretRequest = {}): Promise<ClientSecret> =>
      this.request('POST', `/v1/voice/sessions/${encodeURIComponent(id)}/client_secrets`, { body }),
  };

  readonly clientSecrets = {
    /** OpenAI's client-secret request: creates a session with these settings and an `ek_` secret for it. */
    create: (body: CreateRealtimeClientSecretRequest): Promise<RealtimeClientSecretResponse> =>
      this.request('POST', '/v1/realtime/client_secrets', { body }),
  };

  readonly realtime = {
    /**
     * Attaches a session over svc-realtime-v1 and waits for `session.created`. The credential is the
     * client's API key unless `credential` (an `ek_` secret) is given; a browser needs the secret.
     */
    connect: (target: Pick<VoiceSession, 'realtime'> | string, opts: Partial<ConnectOptions> = {}): Promise<RealtimeConnection> => {
      const url = typeof target === 'string' ? target : target.realtime.url;
      const credential = opts.credential ?? this.#apiKey;
      if (!credential) throw new S2SError(`realtime ${url}: needs an API key or an ek_ client secret`, { url });
      return connectRealtime(url, { ...opts, credential });
    },
  };

  /** One call of the HTTP API: JSON in and out, an {@link S2SApiError} for any error status. */
  async request<T>(
    method: string,
    path: string,
    opts: { body?: unknown; headers?: Record<string, string>; auth?: boolean } = {},
  ): Promise<T> {
    const url = `${this.baseUrl}${path}`;
    const headers: Record<string, string> = { Accept: 'application/json', ...opts.headers };
    if (opts.auth !== false) {
      if (!this.#apiKey) throw new S2SError(`${method} ${url}: needs an API key (apiKey)`, { url, method });
      headers.Authorization = `Bearer ${this.#apiKey}`;
    }
    if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
    let res: Response;
    try {
      res = await this.#fetch(url, { method, headers, ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}) });
    } catch (cause) {
      throw new S2SConnectionError({ url, method, cause });
    }
    const text = await res.text().catch((cause: unknown) => {
      throw new S2SConnectionError({ url, method, cause });
    });
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: an error below, or a protocol failure
    }
    if (!res.ok) {
      throw new S2SApiError({
        url,
        method,
        status: res.status,
        body: parseErrorResponse(json),
        retryAfter: retryAfterSeconds(res.headers.get('retry-after')),
      });
    }
    if (json === null) throw new S2SError(`${method} ${url}: ${res.status} without a JSON body`, { url, method });
    return json as T;
  }
}
