import { writeFileSync } from 'node:fs';
import { decodeG711, FrameChunker, G711_BYTES_PER_MS, G711_FRAME_BYTES, G711_FRAME_MS, G711Encoder } from '@s2s/audio';
import { encodeWav, S2SClient } from '@s2s/client';
import { TELEPHONY_PATHS, type TwilioInboundMessage } from '@s2s/contract';
import WebSocket from 'ws';
import type { CallOptions, Connection } from './args.js';
import { printBill, readQuestion } from './call-session.js';
import { webrtcCall } from './call-webrtc.js';
import type { Output } from './progress.js';

/** How long to wait for the answer once the question has been sent. */
const ANSWER_WAIT_MS = 30_000;
const STREAM_SID = 'MZs2scli0000000000000000000000000';

/** `s2s call (--twilio | --webrtc) --wav FILE`: a call with the question in FILE, then the bill. */
export function call(cmd: Connection & CallOptions, io: { stdout: Output }): Promise<void> {
  return cmd.via === 'webrtc' ? webrtcCall(cmd, io) : twilioCall(cmd, io);
}

/**
 * `s2s call --twilio --wav FILE`: a simulated phone call, speaking Twilio's Media Streams protocol to the
 * gateway's `/v1/telephony/twilio` as Twilio would (docs/telephony.md): a client secret minted with the API
 * key, passed as the stream's custom parameter; the question in 20 ms μ-law frames in real time; the answer
 * collected until its mark, saved as WAV (8 kHz); then `stop`, and the settled bill printed.
 */
async function twilioCall(cmd: Connection & CallOptions, io: { stdout: Output }): Promise<void> {
  const client = new S2SClient({ baseUrl: cmd.baseUrl, apiKey: cmd.key });
  const question = muLawFrames(readQuestion(cmd.wav));
  const minted = await client.clientSecrets.create({
    session: { type: 'realtime', model: cmd.model, ...(cmd.instructions ? { instructions: cmd.instructions } : {}) },
  });
  const sessionId = minted.session.id;
  io.stdout.write(`session ${sessionId} (${cmd.model}): calling ${TELEPHONY_PATHS.twilio}\n`);

  const url = `${cmd.baseUrl.replace(/^http/, 'ws').replace(/\/+$/, '')}${TELEPHONY_PATHS.twilio}`;
  const ws = new WebSocket(url, { perMessageDeflate: false });
  const answer: Buffer[] = [];
  let marked: () => void = () => {};
  const answered = new Promise<void>((resolve) => (marked = resolve));
  ws.on('message', (data) => {
    const m = JSON.parse(data.toString()) as { event: string; media?: { payload: string }; mark?: { name: string } };
    if (m.event === 'media' && m.media) answer.push(Buffer.from(m.media.payload, 'base64'));
    if (m.event === 'mark' && answer.length > 0) marked();
  });
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', (err) => reject(new Error(`cannot open ${url}: ${err.message}`, { cause: err })));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`${url} answered ${res.statusCode}`)));
  });
  let seq = 0;
  const send = (m: TwilioInboundMessage) => ws.send(JSON.stringify(m));
  send({ event: 'connected', protocol: 'Call', version: '1.0.0' });
  send({
    event: 'start',
    sequenceNumber: String(++seq),
    streamSid: STREAM_SID,
    start: {
      streamSid: STREAM_SID,
      accountSid: 'ACs2scli',
      callSid: 'CAs2scli',
      tracks: ['inbound'],
      customParameters: { client_secret: minted.value },
      mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
    },
  });
  for (const [i, frame] of question.entries()) {
    if (ws.readyState !== WebSocket.OPEN) break;
    const media = { track: 'inbound', chunk: String(i + 1), timestamp: String(i * G711_FRAME_MS), payload: frame.toString('base64') };
    send({ event: 'media', sequenceNumber: String(++seq), streamSid: STREAM_SID, media });
    await new Promise((r) => setTimeout(r, G711_FRAME_MS));
  }
  io.stdout.write(`spoke ${question.length * G711_FRAME_MS} ms of μ-law; waiting for the answer\n`);
  const timer = setTimeout(() => marked(), ANSWER_WAIT_MS);
  await Promise.race([answered, closed]);
  clearTimeout(timer);
  if (ws.readyState === WebSocket.OPEN) {
    send({ event: 'stop', sequenceNumber: String(seq + 1), streamSid: STREAM_SID, stop: { accountSid: 'ACs2scli', callSid: 'CAs2scli' } });
  }
  await closed;

  const heard = Buffer.concat(answer);
  writeFileSync(cmd.out, encodeWav(decodeG711('pcmu', heard), { sampleRate: 8000 }));
  io.stdout.write(`heard ${Math.floor(heard.length / G711_BYTES_PER_MS)} ms of answer, saved to ${cmd.out}\n`);
  await printBill(client, sessionId, io.stdout);
}

/** The question as 160-byte μ-law frames, as Twilio sends it. */
function muLawFrames(pcm: Buffer): Buffer[] {
  const chunker = new FrameChunker(G711_FRAME_BYTES);
  const frames = chunker.push(new G711Encoder('pcmu').push(pcm));
  const last = chunker.flush();
  return last ? [...frames, last] : frames;
}
