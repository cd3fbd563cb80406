import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { CLIENT_SECRET_PATTERN, CLIENT_SECRET_PREFIX } from '@s2s/contract';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Uniform base62 string from rejection sampling (248 = 4 * 62, so no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248) out += BASE62[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export type IdPrefix = 'vs' | 'key' | 'wal' | 'rate' | 'att' | 'resp' | 'conv' | 'evt' | 'relay' | 'item' | 'ctl';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBase62(24)}`;
}

export const API_KEY_PREFIX = 'vr_sk_';
const API_KEY_PATTERN = /^vr_sk_[0-9A-Za-z]{32,128}$/;

export interface IssuedKey {
  secret: string;
  hash: string;
  displayPrefix: string;
}

/** A new API key: shown once; only its SHA-256 is stored (the secret has ~238 bits of entropy). */
/** Longest identifier the gateway can ever hold (ids it makes are far shorter). */
export const MAX_ID_LENGTH = 255;

/**
 * False for an identifier that can never exist (a NUL byte, which PostgreSQL text cannot hold, or over
 * 255 characters): such an id is simply not found, without asking the store (decisions.md).
 */
export function isPossibleId(id: string): boolean {
  return id.length > 0 && id.length <= MAX_ID_LENGTH && !id.includes('\u0000');
}

export function issueApiKey(): IssuedKey {
  const secret = API_KEY_PREFIX + randomBase62(40);
  return { secret, hash: hashApiKey(secret), displayPrefix: secret.slice(0, API_KEY_PREFIX.length + 4) };
}

export function isApiKeyShaped(secret: string): boolean {
  return API_KEY_PATTERN.test(secret);
}

export function hashApiKey(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** A new ephemeral client secret (`ek_` + 40 base62); only its SHA-256 is stored, like an API key's. */
export function issueClientSecret(): { secret: string; hash: string } {
  const secret = CLIENT_SECRET_PREFIX + randomBase62(40);
  return { secret, hash: hashApiKey(secret) };
}

export function isClientSecretShaped(secret: string): boolean {
  return CLIENT_SECRET_PATTERN.test(secret);
}

/** Bearer token of an Authorization header, or null. */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1] ?? null;
}

export function constantTimeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}

export function newTraceId(): string {
  return randomBytes(16).toString('hex');
}
