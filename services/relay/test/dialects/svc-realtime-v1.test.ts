// svc-realtime-v1 (codecs/svc-realtime-v1) runs the shared dialect suite.
import t from 'tap';
import { BYTES_PER_MS } from '@s2s/core';
import { createCodecs } from '../../src/codecs/index.js';
import { attach, attachUrl, newSession } from '../helpers.js';
import { DIALECT_MODEL, dialectSuite, socketLine } from './suite.js';

dialectSuite(t, {
  name: 'svc-realtime-v1',
  codec: {
    make: () => createCodecs()('svc-realtime-v1', { id: 'vs_dialect', modelId: DIALECT_MODEL }),
    appendOf: (pcm) => JSON.stringify({ type: 'input_audio_buffer.append', audio: pcm.toString('base64') }),
    audioMsOf: (frames) =>
      frames
        .map((f) => JSON.parse(f) as { type: string; audio?: string })
        .filter((e) => e.type === 'response.output_audio.delta')
        .reduce((ms, e) => ms + Buffer.from(e.audio ?? '', 'base64').length / BYTES_PER_MS, 0),
    unknown: '{"type":"no.such.event"}',
  },
  async open(t, env, key) {
    const s = await newSession(env.db, key, DIALECT_MODEL);
    const { client } = await attach(attachUrl(env.url, s.id), key.secret);
    t.teardown(() => client.close());
    return socketLine(s.id, client, 'audio');
  },
  errorShape: (code) => ({ type: 'error', event_id: String, error: { type: 'invalid_request_error', code, message: String } }),
  oversize: 'close_1009',
});
