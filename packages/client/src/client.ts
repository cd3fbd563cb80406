import {
  SESSION_MODE,
  type ClientSecret,
  type CreateRealtimeClientSecretRequest,
  type CreateSessionClientSecretRequest,
  type EndReason,
  type ModelList,
  type RealtimeClientSecretResponse,
  type VoiceSession,
  WEBRTC_CALLS_PATH,
} from '@s2s/contract';
import { openCall, type OpenCallOptions, type RealtimeCall } from './call.js';
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

  /** WebRTC calls (decisions.md, "WebRTC"): the SDP exchange and the hangup. A browser opens one with `realtime.call`. */
  readonly calls = {
    /**
     * Posts an SDP offer; resolves with the SDP answer and the call's id (its voice session's id, from
     * `Location`). With `credential` (an `ek_` secret) the offer attaches the secret's session; with `session`
     * (OpenAI's session, `model` a catalog id) the client's API key creates the session as
     * `clientSecrets.create` would, in OpenAI's multipart form.
     */
    create: async (
      offer: string,
      opts: { credential: string; session?: undefined } | { session: CreateRealtimeClientSecretRequest['session']; credential?: undefined },
    ): Promise<{ sdp: string; callId: string }> => {
      let res: Response;
      if (opts.credential !== undefined) {
        res = await this.#call('POST', WEBRTC_CALLS_PATH, { body: offer, contentType: 'application/sdp', credential: opts.credential });
      } else {
        const form = new FormData();
        form.set('sdp', offer);
        form.set('session', JSON.stringify(opts.session));
        res = await this.#call('POST', WEBRTC_CALLS_PATH, { body: form });
      }
      const url = `${this.baseUrl}${WEBRTC_CALLS_PATH}`;
      const sdp = await res.text().catch((cause: unknown) => {
        throw new S2SConnectionError({ url, method: 'POST', cause });
      });
      const callId = /\/calls\/([^/?#]+)/.exec(res.headers.get('location') ?? '')?.[1];
      if (callId === undefined)
        throw new S2SError(`POST ${url}: ${res.status} without a Location naming the call`, { url, method: 'POST' });
      return { sdp, callId: decodeURIComponent(callId) };
    },
    /** Ends the call's session (`client_closed`) with the owning API key: the session resource. */
    hangup: (id: string): Promise<VoiceSession> => this.request('POST', `${WEBRTC_CALLS_PATH}/${encodeURIComponent(id)}/hangup`),
  };

  readonly realtime = {
    /**
     * Opens a WebRTC call from a browser with an `ek_` client secret and resolves at `session.created`: the
     * microphone goes up an Opus track, the answer plays from the remote track, and the call's events (the
     * OpenAI dialect) arrive on its `oai-events` channel.
     */
    call: (opts: OpenCallOptions): Promise<RealtimeCall> =>
      openCall(`${this.baseUrl}${WEBRTC_CALLS_PATH}`, opts, (sdp) => this.calls.create(sdp, { credential: opts.credential })),
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
    const res = await this.#call(method, path, {
      headers: { Accept: 'application/json', ...opts.headers },
      auth: opts.auth,
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body), contentType: 'application/json' } : {}),
    });
    const text = await res.text().catch((cause: unknown) => {
      throw new S2SConnectionError({ url, method, cause });
    });
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: a protocol failure below
    }
    if (json === null) throw new S2SError(`${method} ${url}: ${res.status} without a JSON body`, { url, method });
    return json as T;
  }

  /**
   * Sends one request (the API key as a bearer unless `auth: false`, or the `credential` given) and returns
   * a successful response; an error status becomes an {@link S2SApiError} with its ErrorResponse.
   */
  async #call(
    method: string,
    path: string,
    opts: {
      body?: string | FormData;
      contentType?: string;
      headers?: Record<string, string>;
      auth?: boolean | undefined;
      credential?: string;
    },
  ): Promise<Response> {
    const url = `${this.baseUrl}${path}`;
    const headers: Record<string, string> = { ...opts.headers };
    const credential = opts.credential ?? (opts.auth === false ? undefined : this.#apiKey);
    if (credential === undefined && opts.auth !== false) throw new S2SError(`${method} ${url}: needs an API key (apiKey)`, { url, method });
    if (credential !== undefined) headers.Authorization = `Bearer ${credential}`;
    if (opts.contentType !== undefined) headers['Content-Type'] = opts.contentType;
    let res: Response;
    try {
      res = await this.#fetch(url, { method, headers, ...(opts.body !== undefined ? { body: opts.body } : {}) });
    } catch (cause) {
      throw new S2SConnectionError({ url, method, cause });
    }
    if (res.ok) return res;
    const text = await res.text().catch(() => '');
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: the status alone
    }
    throw new S2SApiError({
      url,
      method,
      status: res.status,
      body: parseErrorResponse(json),
      retryAfter: retryAfterSeconds(res.headers.get('retry-after')),
    });
  }
}
