// The OpenAI dialect (codecs/openai) runs the shared dialect suite.
import t from 'tap';
import { BYTES_PER_MS } from '@s2s/core';
import { mintClientSecret } from '@s2s/sessions';
import WebSocket from 'ws';
import { createCodecs } from '../../src/codecs/index.js';
import { browserSession, Client } from '../helpers.js';
import { DIALECT_MODEL, dialectSuite, socketLine } from './suite.js';

dialectSuite(t, {
  name: 'openai',
  codec: {
    make: () => createCodecs()('openai', { id: 'vs_dialect', modelId: DIALECT_MODEL }),
    appendOf: (pcm) => JSON.stringify({ type: 'input_audio_buffer.append', audio: pcm.toString('base64') }),
    audioMsOf: (frames) =>
      frames
        .map((f) => JSON.parse(f) as { type: string; delta?: string })
        .filter((e) => e.type === 'response.output_audio.delta')
        .reduce((ms, e) => ms + Buffer.from(e.delta ?? '', 'base64').length / BYTES_PER_MS, 0),
    unknown: '{"type":"no.such.event"}',
  },
  async open(t, env, key) {
    const session = await browserSession(env.db, key, DIALECT_MODEL);
    const { value } = await mintClientSecret({ ctx: { db: env.db }, input: { sessionId: session.id, ttlSeconds: 60, now: new Date() } });
    const ws = new WebSocket(`${env.url}?model=${DIALECT_MODEL}`, [], {
      headers: { Authorization: `Bearer ${value}` },
      perMessageDeflate: false,
    });
    const client = new Client(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res) => reject(new Error(`refused ${res.statusCode}`)));
    });
    t.teardown(() => client.close());
    await client.next('session.created');
    return socketLine(session.id, client, 'delta');
  },
  errorShape: (code) => ({ type: 'error', event_id: String, error: { type: 'invalid_request_error', code, message: String } }),
  oversize: 'close_1009',
});
