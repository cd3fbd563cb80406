import { readFileSync } from 'node:fs';
import { billOf, decodeWav, toGatewayPcm, type S2SClient, type VoiceSession } from '@s2s/client';
import type { Output } from './progress.js';

/** Silence after the question, so that the gateway's turn detection ends the caller's turn. */
const TRAILING_SILENCE_MS = 800;

/** The question of `--wav` as PCM16 24 kHz mono (any 16-bit WAV converted), then silence to end the turn. */
export function readQuestion(path: string): Buffer {
  let file: Buffer;
  try {
    file = readFileSync(path);
  } catch (err) {
    throw new Error(`cannot read --wav ${path}: ${(err as Error).message}`, { cause: err });
  }
  let pcm: Uint8Array;
  try {
    pcm = toGatewayPcm(decodeWav(file));
  } catch (err) {
    throw new Error(`--wav ${path}: ${(err as Error).message}`, { cause: err });
  }
  return Buffer.concat([pcm, Buffer.alloc(TRAILING_SILENCE_MS * 48)]);
}

/** Waits for the ended session to be settled and prints its status, usage and bill. */
export async function printBill(client: S2SClient, id: string, out: Output): Promise<void> {
  const settled = await settledSession(client, id);
  const bill = billOf(settled);
  out.write(
    `session ${settled.id}: ${settled.status}; audio in ${bill.usage.audio_in_ms} ms, out ${bill.usage.audio_out_ms} ms; ` +
      `billed ${bill.billedCents} cents${bill.settled ? ' (settled)' : ''}\n`,
  );
}

/** The session once settled (the call ended it), read a few times while billing settles it. */
async function settledSession(client: S2SClient, id: string): Promise<VoiceSession> {
  let s = await client.sessions.get(id).catch(() => null);
  for (let i = 0; i < 40 && (s === null || s.billing.reserved_cents !== 0); i++) {
    await new Promise((r) => setTimeout(r, 250));
    s = await client.sessions.get(id).catch(() => s);
  }
  if (s === null) throw new Error(`cannot read session ${id}`);
  return s;
}
