/**
 * Why an upstream could not be reached or used:
 * - `unauthorized`: it refused our credentials (HTTP 401/403, or an auth close); permanent, never retried;
 * - `rejected`: it refused the request itself (unknown model, bad setup); permanent, never retried;
 * - `unavailable`: refused connection, 5xx, dropped handshake; retried;
 * - `timeout`: no usable session within the connect timeout;
 * - `aborted`: the caller gave up (its AbortSignal fired).
 */
export type UpstreamErrorKind = 'unauthorized' | 'rejected' | 'unavailable' | 'timeout' | 'aborted';

/**
 * The only error an adapter or ProviderBase rejects with. Its message is a fixed sentence naming the
 * provider: never the upstream URL, host, key, or the upstream's own error text (which may echo a key).
 */
export class UpstreamError extends Error {
  readonly kind: UpstreamErrorKind;
  readonly provider: string;
  /** HTTP status of a refused handshake, or the close code of a refused session, when there was one. */
  readonly status: number | undefined;
  /** Node's error code of a network failure (e.g. ECONNREFUSED), when there was one. */
  readonly networkCode: string | undefined;

  constructor(provider: string, kind: UpstreamErrorKind, opts: { status?: number; networkCode?: string } = {}) {
    super(messageFor(provider, kind, opts.status));
    this.name = 'UpstreamError';
    this.provider = provider;
    this.kind = kind;
    this.status = opts.status;
    this.networkCode = opts.networkCode;
  }

  /** Permanent failures are not worth another attempt. */
  get permanent(): boolean {
    return this.kind === 'unauthorized' || this.kind === 'rejected' || this.kind === 'aborted';
  }
}

export function isUpstreamError(err: unknown): err is UpstreamError {
  return err instanceof UpstreamError;
}

function messageFor(provider: string, kind: UpstreamErrorKind, status: number | undefined): string {
  const suffix = status === undefined ? '' : ` (status ${status})`;
  switch (kind) {
    case 'unauthorized':
      return `provider ${provider} refused the configured credentials${suffix}`;
    case 'rejected':
      return `provider ${provider} rejected the session request${suffix}`;
    case 'unavailable':
      return `provider ${provider} is unavailable${suffix}`;
    case 'timeout':
      return `provider ${provider} did not answer within the connect timeout`;
    case 'aborted':
      return `connection to provider ${provider} was aborted`;
  }
}
