// An unmodified `openai` (7.59) realtime client, run by openai-sdk.test.ts as its own process: the base URL
// and the key come from the environment, the certificate is trusted through NODE_EXTRA_CA_CERTS. It speaks
// one turn, reads the answer's audio, the transcript and the usage, and prints one JSON line.
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { pcmFrames, pcmSilence, pcmTone } from '@s2s/local-provider';

const client = new OpenAI({ apiKey: process.env.S2S_API_KEY, baseURL: process.env.S2S_BASE_URL });
const rt = new OpenAIRealtimeWS({ model: process.env.S2S_MODEL! }, client);
const report = {
  url: rt.socket.url,
  sessionId: '',
  model: '',
  sentBytes: 0,
  audioBytes: 0,
  errors: [] as unknown[],
  transcripts: [] as string[],
  usages: [] as unknown[],
};
let done = false;
const finish = () => {
  if (!done || report.transcripts.length === 0) return;
  rt.close();
  process.stdout.write(JSON.stringify(report) + '\n');
  process.exit(0);
};
setTimeout(() => {
  process.stderr.write(`timed out: ${JSON.stringify(report)}\n`);
  process.exit(1);
}, 30_000).unref();

rt.on('error', (err) => report.errors.push(String(err)));
rt.on('session.created', (e) => {
  report.sessionId = (e.session as { id?: string }).id ?? '';
  report.model = 'model' in e.session ? (e.session.model ?? '') : '';
});
rt.on('response.output_audio.delta', (e) => (report.audioBytes += Buffer.from(e.delta, 'base64').length));
rt.on('conversation.item.input_audio_transcription.completed', (e) => {
  report.transcripts.push(e.transcript);
  finish();
});
rt.on('response.done', (e) => {
  report.usages.push(e.response.usage);
  done = true;
  finish();
});
rt.socket.on('open', () => {
  rt.send({
    type: 'session.update',
    session: {
      type: 'realtime',
      instructions: 'Repeat after me.',
      audio: { input: { transcription: { model: 'gpt-4o-mini-transcribe' } }, output: { voice: 'marin' } },
    },
  });
  for (const frame of pcmFrames(Buffer.concat([pcmTone(600), pcmSilence(700)]))) {
    rt.send({ type: 'input_audio_buffer.append', audio: frame.toString('base64') });
    report.sentBytes += frame.length;
  }
});
