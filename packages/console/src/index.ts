import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The built console (index.html, app.js, app.css, audio-worklet.js): `node build-web.mjs`, run by bootstrap and build. */
export const CONSOLE_ASSETS_DIR = fileURLToPath(new URL('../web-dist/', import.meta.url));

/** Whether the console has been built (a fresh clone builds it in `npm start` / `npm test`'s bootstrap). */
export function consoleBuilt(): boolean {
  return existsSync(join(CONSOLE_ASSETS_DIR, 'index.html'));
}

/**
 * The console's Content-Security-Policy: only its own scripts, styles and worklet; WebSockets to the realtime
 * origin the playground's secrets name (REALTIME_PUBLIC_URL, possibly another host), and HTTP to that same
 * host (the playground's WebRTC offer, `POST /v1/realtime/calls`), and nowhere else; no framing, no inline
 * script, nothing from elsewhere.
 */
export function consoleCsp(realtimeUrl: string): string {
  const realtime = new URL(realtimeUrl);
  const http = new URL(realtime.href);
  http.protocol = realtime.protocol === 'wss:' ? 'https:' : 'http:';
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self' ${realtime.origin} ${http.origin}`,
    "media-src 'self' blob:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}
