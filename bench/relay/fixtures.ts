import type { DbHandle } from '@s2s/db';

/** The benchmarks' catalog model: the simulator's `echo-stream` as `local/echo-stream`, with its rate. */
export async function insertEchoStreamModel(db: DbHandle): Promise<void> {
  await db.pool.query(
    `INSERT INTO catalog_models (id, display_name, owned_by, provider, provider_model, enabled, approved, capabilities, audio, modalities)
     VALUES ('local/echo-stream', 'Echo stream', 'bench', 'local', 'echo-stream', true, true,
             '{"speech_to_speech":true,"server_vad":false,"barge_in":true,"input_transcription":"optional","output_transcription":"optional"}',
             '{"input":{"type":"audio/pcm","encoding":"pcm16le","sample_rate_hz":24000,"channels":1},"output":{"type":"audio/pcm","encoding":"pcm16le","sample_rate_hz":24000,"channels":1}}',
             '{"input":["audio"],"output":["audio"]}')`,
  );
  await db.pool.query(`INSERT INTO rate_snapshots (id, model_id, source, per_minute, audio_in_token, audio_out_token, relay_fee_milli_cents)
                       VALUES ('rate_bench', 'local/echo-stream', 'upstream_derived', 1000, 10, 20, 500)`);
  await db.pool.query(`UPDATE catalog_models SET current_rate_id = 'rate_bench' WHERE id = 'local/echo-stream'`);
}
