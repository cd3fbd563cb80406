// An unmodified `openai` (7.59) realtime client, run by openai-session-fields.test.ts as its own process
// (the certificate trusted through NODE_EXTRA_CA_CERTS, as in openai-ws-client.ts): it sets the current
// session fields `reasoning` and `truncation` on S2S_MODEL and prints one JSON line with what the gateway
// answered (session.updated or the error) and, when accepted, the model's answer to a text turn.
import OpenAI from 'openai';
import type { RealtimeSessionCreateRequest } from 'openai/resources/realtime/realtime';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';

const client = new OpenAI({ apiKey: process.env.S2S_API_KEY, baseURL: process.env.S2S_BASE_URL });
const rt = new OpenAIRealtimeWS({ model: process.env.S2S_MODEL! }, client);
const report = {
  errors: [] as { code: string | null | undefined; param: string | null | undefined }[],
  updated: [] as unknown[],
  text: '',
};
let finished = false;
// Closed cleanly before exiting (a process that exits with its socket open resets the connection).
const print = () => {
  finished = true;
  rt.socket.once('close', () => process.stdout.write(JSON.stringify(report) + '\n', () => process.exit(0)));
  rt.close();
};
setTimeout(() => {
  process.stderr.write(`timed out: ${JSON.stringify(report)}\n`);
  process.exit(1);
}, 30_000).unref();

const fields = {
  type: 'realtime',
  output_modalities: ['text'],
  reasoning: { effort: 'high' },
  truncation: { type: 'retention_ratio', retention_ratio: 0.8 },
} satisfies RealtimeSessionCreateRequest;

let step = 0;
rt.on('error', (err) => {
  if (!err.error) process.stderr.write(`client error: ${err.message}\n`);
  report.errors.push({ code: err.error?.code, param: err.error?.param });
  // Refused: the hint alone, which every model accepts, then the report.
  if (step === 0) {
    step = 1;
    rt.send({ type: 'session.update', session: { type: 'realtime', truncation: fields.truncation } });
  }
});
rt.on('session.updated', (e) => {
  report.updated.push(e.session);
  if (step === 1) return print();
  step = 2;
  rt.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello' }] } });
  rt.send({ type: 'response.create' });
});
rt.on('response.output_text.delta', (e) => (report.text += e.delta));
rt.on('response.done', () => print());
rt.socket.on('open', () => rt.send({ type: 'session.update', session: fields }));
rt.socket.on('close', (code) => {
  if (finished) return;
  process.stderr.write(`closed (${code}) before the end: ${JSON.stringify(report)}\n`);
  process.exit(1);
});
