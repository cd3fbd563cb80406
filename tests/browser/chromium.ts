// Headless Chromium for the browser tests: Debian's `chromium` driven by playwright-core (no downloaded
// browsers). Without a Chromium the tests skip with a reason, except where S2S_BROWSER_TESTS=required
// (.ci/run sets it after installing one): there a missing browser fails the run.
import { existsSync, writeFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';

const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

export function chromiumPath(): string | null {
  return CANDIDATES.find((p): p is string => p !== undefined && p !== '' && existsSync(p)) ?? null;
}

/** tap's `skip` option: false when a Chromium is here (or required), else the reason. */
export function skipWithoutChromium(): false | string {
  if (chromiumPath() !== null || process.env.S2S_BROWSER_TESTS === 'required') return false;
  return "no Chromium on this machine (install Debian's `chromium`, or set CHROMIUM_PATH); .ci/run installs it";
}

export interface Teardown {
  teardown(fn: () => unknown): void;
}

/** A headless Chromium whose microphone plays `wav` once (then silence), closed at teardown. */
export async function launchChromium(t: Teardown, opts: { microphoneWav?: string } = {}): Promise<Browser> {
  const executablePath = chromiumPath();
  if (executablePath === null) throw new Error('S2S_BROWSER_TESTS=required but no Chromium was found (CHROMIUM_PATH, /usr/bin/chromium)');
  const browser = await chromium.launch({
    executablePath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--autoplay-policy=no-user-gesture-required',
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      ...(opts.microphoneWav ? [`--use-file-for-fake-audio-capture=${opts.microphoneWav}%noloop`] : []),
    ],
  });
  t.teardown(() => browser.close());
  return browser;
}

/**
 * A mono PCM16 WAV of "speech" for the fake microphone: `leadMs` of silence, `speechMs` of a voiced sound
 * (harmonics of 140 Hz under a syllable-rate envelope, loud enough for the simulator's energy VAD in every
 * 10 ms window), then `tailMs` of silence so that the turn ends (500 ms of silence) and the answer plays.
 */
export function speechWav(opts: { rate?: number; leadMs?: number; speechMs?: number; tailMs?: number } = {}): string {
  const { rate = 48_000, leadMs = 300, speechMs = 1000, tailMs = 3000 } = opts;
  const n = (ms: number) => Math.round((rate * ms) / 1000);
  const total = n(leadMs) + n(speechMs) + n(tailMs);
  const data = Buffer.alloc(total * 2);
  for (let i = 0; i < n(speechMs); i++) {
    const t = i / rate;
    const envelope = 0.6 + 0.4 * Math.sin(2 * Math.PI * 4 * t);
    let s = 0;
    for (let h = 1; h <= 8; h++) s += Math.sin(2 * Math.PI * 140 * h * t) / h;
    data.writeInt16LE(Math.round(Math.max(-1, Math.min(1, 0.25 * envelope * s)) * 32767), (n(leadMs) + i) * 2);
  }
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVE', 8);
  header.write('fmt ', 12);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE(rate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(data.length, 40);
  const file = join(mkdtempSync(join(tmpdir(), 's2s-mic-')), 'speech.wav');
  writeFileSync(file, Buffer.concat([header, data]));
  return file;
}
