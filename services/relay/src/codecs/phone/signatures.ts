import { createHmac, createPublicKey, timingSafeEqual, verify, type KeyObject } from 'node:crypto';

/**
 * The telephony providers' request signatures (decisions.md, "Phone calls"), checked before a media stream is
 * upgraded. Pure: no I/O, the clock passed in.
 */

/**
 * Twilio's documented scheme: base64 HMAC-SHA1, keyed by the account's auth token, of the full URL Twilio
 * requested followed by the POST parameters sorted by name, each name then value (a stream's upgrade is a GET:
 * no parameters).
 */
export function twilioSignature(authToken: string, url: string, params: Readonly<Record<string, string>> = {}): string {
  const data =
    url +
    Object.keys(params)
      .sort()
      .map((k) => k + params[k])
      .join('');
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

/**
 * Whether `signature` (X-Twilio-Signature) signs one of `urls` (the URL as the application configured it can
 * differ from what reached us in its port only, which Twilio's own helpers also accept either way).
 */
export function checkTwilioSignature(input: { authToken: string; signature: string | undefined; urls: readonly string[] }): boolean {
  const { authToken, signature } = input;
  if (!signature) return false;
  const given = Buffer.from(signature);
  for (const url of input.urls.flatMap(withAndWithoutPort)) {
    const expected = Buffer.from(twilioSignature(authToken, url));
    if (expected.length === given.length && timingSafeEqual(expected, given)) return true;
  }
  return false;
}

const DEFAULT_PORTS: Readonly<Record<string, string>> = { 'https:': '443', 'wss:': '443', 'http:': '80', 'ws:': '80' };

function withAndWithoutPort(url: string): string[] {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return [url];
  }
  const port = DEFAULT_PORTS[u.protocol];
  if (port === undefined) return [url];
  // WHATWG URLs drop a default port (`:443` parses as none), so both spellings are made from the parts.
  const tail = `${u.pathname}${u.search}`;
  if (u.port !== '' && u.port !== port) return [url];
  return [url, `${u.protocol}//${u.host}${tail}`, `${u.protocol}//${u.hostname}:${port}${tail}`];
}

/** DER prefix of an Ed25519 SubjectPublicKeyInfo: the raw 32-byte key follows it. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** Telnyx's public key (base64 of the raw 32 bytes, as Mission Control shows it); null when it is not one. */
export function telnyxPublicKey(base64: string): KeyObject | null {
  const raw = Buffer.from(base64, 'base64');
  if (raw.length !== 32) return null;
  try {
    return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
  } catch {
    return null;
  }
}

/** Telnyx's replay window: a timestamp further than this from now is refused. */
export const TELNYX_TOLERANCE_SECONDS = 300;

/**
 * Telnyx's documented scheme: an Ed25519 signature (base64, `telnyx-signature-ed25519`) of
 * `<telnyx-timestamp>|<raw body>` with the account's key, the timestamp (Unix seconds) within 5 minutes.
 */
export function checkTelnyxSignature(input: {
  publicKey: KeyObject;
  signature: string | undefined;
  timestamp: string | undefined;
  body?: string;
  nowMs: number;
}): boolean {
  const { signature, timestamp } = input;
  if (!signature || !timestamp || !/^\d{1,12}$/.test(timestamp)) return false;
  if (Math.abs(input.nowMs / 1000 - Number(timestamp)) > TELNYX_TOLERANCE_SECONDS) return false;
  const sig = Buffer.from(signature, 'base64');
  if (sig.length !== 64) return false;
  return verify(null, Buffer.from(`${timestamp}|${input.body ?? ''}`, 'utf8'), input.publicKey, sig);
}
