import { writeFileSync } from 'node:fs';
import { encodeWav, S2SClient } from '@s2s/client';
import { BYTES_PER_MS } from '@s2s/core';
import { WEBRTC_CALLS_PATH, type WebRtcServerEvent } from '@s2s/contract';
import { WebRtcPeer } from '@s2s/webrtc';
import type { CallOptions, Connection } from './args.js';
import { printBill, readQuestion } from './call-session.js';
import type { Output } from './progress.js';

/** How long to wait for the answer to have played once the question has been sent. */
const ANSWER_WAIT_MS = 30_000;
/** How long to wait for `session.created` once the channel is open. */
const OPEN_WAIT_MS = 10_000;

/**
 * `s2s call --webrtc --wav FILE`: a WebRTC call as a browser places it (decisions.md, "WebRTC"), from a werift
 * peer: the offer posted to `/v1/realtime/calls` in OpenAI's multipart form with the API key (the session
 * created with input transcription on); the question spoken on the Opus track in real time; the transcripts
 * printed from the `oai-events` channel; the answer decoded from the remote track until
 * `output_audio_buffer.stopped`, saved as WAV (24 kHz); then the hangup and the settled bill.
 */
export async function webrtcCall(cmd: Connection & CallOptions, io: { stdout: Output }): Promise<void> {
  const client = new S2SClient({ baseUrl: cmd.baseUrl, apiKey: cmd.key });
  const question = readQuestion(cmd.wav);
  const peer = new WebRtcPeer();
  try {
    const heard: Buffer[] = [];
    let spoken = false;
    let hangingUp = false;
    let answered: () => void = () => {};
    const played = new Promise<void>((resolve) => (answered = resolve));
    let created: () => void = () => {};
    const opened = new Promise<void>((resolve) => (created = resolve));
    peer.setHandlers({
      audio: (pcm) => heard.push(pcm),
      closed: () => {
        if (!hangingUp) io.stdout.write('the call closed\n');
        answered();
      },
      message: (text) => {
        const e = JSON.parse(text) as WebRtcServerEvent;
        if (e.type === 'session.created') created();
        else if (e.type === 'conversation.item.input_audio_transcription.completed') io.stdout.write(`you said: ${e.transcript}\n`);
        else if (e.type === 'response.output_audio_transcript.done') io.stdout.write(`model said: ${e.transcript}\n`);
        else if (e.type === 'error') io.stdout.write(`error: ${e.error.code}: ${e.error.message}\n`);
        else if (e.type === 'output_audio_buffer.stopped' && spoken) answered();
      },
    });
    const session = { type: 'realtime' as const, model: cmd.model, audio: { input: { transcription: {} } } };
    const { sdp, callId } = await client.calls.create(await peer.offer(), {
      session: cmd.instructions ? { ...session, instructions: cmd.instructions } : session,
    });
    io.stdout.write(`session ${callId} (${cmd.model}): calling ${WEBRTC_CALLS_PATH} over WebRTC\n`);
    await peer.accept(sdp);
    await waitOrThrow(opened, OPEN_WAIT_MS, 'no session.created on the oai-events channel');
    await peer.speak(question);
    spoken = true;
    io.stdout.write(`spoke ${Math.round(question.length / BYTES_PER_MS)} ms of Opus; waiting for the answer\n`);
    const timer = setTimeout(answered, ANSWER_WAIT_MS);
    await played;
    clearTimeout(timer);

    const answer = Buffer.concat(heard);
    writeFileSync(cmd.out, encodeWav(answer));
    io.stdout.write(`heard ${Math.floor(answer.length / BYTES_PER_MS)} ms of answer, saved to ${cmd.out}\n`);
    hangingUp = true;
    await client.calls.hangup(callId);
    await peer.close();
    await printBill(client, callId, io.stdout);
  } finally {
    await peer.close();
  }
}

async function waitOrThrow(p: Promise<void>, ms: number, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms)));
  try {
    await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
