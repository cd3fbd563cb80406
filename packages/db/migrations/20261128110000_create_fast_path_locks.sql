-- migrate:up

-- The create statement (packages/sessions/src/create.ts) must lock few enough relations to stay on PostgreSQL's
-- per-backend fast path: 16 relations on PostgreSQL 15, a new lock mode only while a slot is free (issue 28,
-- item 5; docs/architecture.md, "The create statement"). Beyond that every create takes the shared lock table's
-- partition locks for the same few relations, and concurrent creates queue on them. A create locked 17 relations
-- (21 while its plan is made), and its referential checks went to the shared table; after this migration it
-- locks 11 to 15 (packages/sessions/test/create-locks.test.ts).

-- voice_sessions names its model and rate snapshot without foreign keys. Their checks locked the catalog and
-- rate tables and their indexes, and FOR KEY SHARE locked the one model row and the one rate row that every
-- create of the model shares (a new multixact per concurrent create, on one page). The references stay sound
-- without them: the create inserts the model's current rate, read in the same statement; a model's current
-- rate is one of its own (the foreign key below); a rate snapshot is never updated or deleted (trigger
-- rate_snapshots_no_update), and a model with a rate snapshot cannot be deleted (rate_snapshots_model_id_fkey).
-- checkLedgerInvariants checks it (session_rate_of_model).
ALTER TABLE voice_sessions
  DROP CONSTRAINT voice_sessions_model_id_fkey,
  DROP CONSTRAINT voice_sessions_rate_snapshot_id_fkey;

-- A model's current rate is one of its own rates: (current_rate_id, id) references (id, model_id). This also
-- makes a rate the current rate of at most one model, what the unique index on current_rate_id did, so that
-- index goes (the create plans with every index of catalog_models). (model_id, id) serves the lookups by model
-- that rate_snapshots_model_id_idx served.
CREATE UNIQUE INDEX rate_snapshots_model_id_id_key ON rate_snapshots (model_id, id);
DROP INDEX rate_snapshots_model_id_idx;
ALTER TABLE catalog_models DROP CONSTRAINT catalog_models_current_rate_id_fkey;
DROP INDEX catalog_models_current_rate_id_key;
ALTER TABLE catalog_models ADD CONSTRAINT catalog_models_current_rate_id_id_fkey
  FOREIGN KEY (current_rate_id, id) REFERENCES rate_snapshots (id, model_id) ON UPDATE RESTRICT ON DELETE RESTRICT;

-- Two fewer indexes for every create to write. The sweeper finds unsettled sessions through
-- (settled_at, max_ends_at) alone: its idle test (last_activity_at + idle_timeout_seconds, and the attachments'
-- last_audio_at) is no index range anyway. The operator's list by wallet goes through the wallet's keys
-- (voice_sessions_key_id_idx); a key never changes wallet, and wallets are never deleted.
DROP INDEX voice_sessions_settled_at_last_activity_at_idx;
DROP INDEX voice_sessions_wallet_id_idx;

-- migrate:down
CREATE INDEX voice_sessions_wallet_id_idx ON voice_sessions (wallet_id);
CREATE INDEX voice_sessions_settled_at_last_activity_at_idx ON voice_sessions (settled_at, last_activity_at);
ALTER TABLE catalog_models DROP CONSTRAINT catalog_models_current_rate_id_id_fkey;
CREATE UNIQUE INDEX catalog_models_current_rate_id_key ON catalog_models (current_rate_id);
ALTER TABLE catalog_models ADD CONSTRAINT catalog_models_current_rate_id_fkey
  FOREIGN KEY (current_rate_id) REFERENCES rate_snapshots (id) ON UPDATE CASCADE ON DELETE SET NULL;
CREATE INDEX rate_snapshots_model_id_idx ON rate_snapshots (model_id);
DROP INDEX rate_snapshots_model_id_id_key;
ALTER TABLE voice_sessions
  ADD CONSTRAINT voice_sessions_model_id_fkey FOREIGN KEY (model_id) REFERENCES catalog_models (id) ON UPDATE CASCADE ON DELETE RESTRICT,
  ADD CONSTRAINT voice_sessions_rate_snapshot_id_fkey FOREIGN KEY (rate_snapshot_id) REFERENCES rate_snapshots (id) ON UPDATE CASCADE ON DELETE RESTRICT;
