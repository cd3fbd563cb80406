-- migrate:up

-- Usage and price by modality (issue 9, decisions.md "Usage and price by modality"). Rates are milli-cents
-- (bigint like the others); a rate snapshot made before this migration priced none of these, so 0.
-- Adding a column with a default fires no trigger, so rate_snapshots stays immutable.
ALTER TABLE rate_snapshots
  ADD COLUMN text_in_token bigint NOT NULL DEFAULT 0,
  ADD COLUMN text_out_token bigint NOT NULL DEFAULT 0,
  ADD COLUMN cached_in_token bigint NOT NULL DEFAULT 0,
  ADD COLUMN transcription_per_minute bigint NOT NULL DEFAULT 0,
  ADD CONSTRAINT rate_snapshots_modality_nonnegative
    CHECK (text_in_token >= 0 AND text_out_token >= 0 AND cached_in_token >= 0 AND transcription_per_minute >= 0);

-- The usage counters beside the audio ones, wherever usage is kept.
ALTER TABLE voice_sessions
  ADD COLUMN input_text_tokens bigint NOT NULL DEFAULT 0,
  ADD COLUMN cached_input_tokens bigint NOT NULL DEFAULT 0,
  ADD COLUMN output_text_tokens bigint NOT NULL DEFAULT 0,
  ADD COLUMN transcribed_ms bigint NOT NULL DEFAULT 0;
ALTER TABLE session_attachments
  ADD COLUMN input_text_tokens bigint NOT NULL DEFAULT 0,
  ADD COLUMN cached_input_tokens bigint NOT NULL DEFAULT 0,
  ADD COLUMN output_text_tokens bigint NOT NULL DEFAULT 0,
  ADD COLUMN transcribed_ms bigint NOT NULL DEFAULT 0;
ALTER TABLE settlements
  ADD COLUMN input_text_tokens bigint NOT NULL DEFAULT 0,
  ADD COLUMN cached_input_tokens bigint NOT NULL DEFAULT 0,
  ADD COLUMN output_text_tokens bigint NOT NULL DEFAULT 0,
  ADD COLUMN transcribed_ms bigint NOT NULL DEFAULT 0;

-- migrate:down
ALTER TABLE settlements
  DROP COLUMN transcribed_ms,
  DROP COLUMN output_text_tokens,
  DROP COLUMN cached_input_tokens,
  DROP COLUMN input_text_tokens;
ALTER TABLE session_attachments
  DROP COLUMN transcribed_ms,
  DROP COLUMN output_text_tokens,
  DROP COLUMN cached_input_tokens,
  DROP COLUMN input_text_tokens;
ALTER TABLE voice_sessions
  DROP COLUMN transcribed_ms,
  DROP COLUMN output_text_tokens,
  DROP COLUMN cached_input_tokens,
  DROP COLUMN input_text_tokens;
ALTER TABLE rate_snapshots
  DROP CONSTRAINT rate_snapshots_modality_nonnegative,
  DROP COLUMN transcription_per_minute,
  DROP COLUMN cached_in_token,
  DROP COLUMN text_out_token,
  DROP COLUMN text_in_token;
