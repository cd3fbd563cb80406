-- migrate:up
CREATE TABLE wallets (
  id             text PRIMARY KEY,
  balance_cents  bigint NOT NULL,
  reserved_cents bigint NOT NULL DEFAULT 0,
  created_at     timestamptz(3) NOT NULL DEFAULT now(),
  updated_at     timestamptz(3) NOT NULL DEFAULT now(),
  CONSTRAINT wallets_balance_nonnegative CHECK (balance_cents >= 0),
  CONSTRAINT wallets_reserved_nonnegative CHECK (reserved_cents >= 0),
  CONSTRAINT wallets_reserved_covered CHECK (reserved_cents <= balance_cents)
);

CREATE TABLE ledger_entries (
  id           bigserial PRIMARY KEY,
  wallet_id    text NOT NULL REFERENCES wallets (id) ON UPDATE CASCADE ON DELETE RESTRICT,
  kind         text NOT NULL,
  amount_cents bigint NOT NULL,
  session_id   text,
  created_at   timestamptz(3) NOT NULL DEFAULT now(),
  CONSTRAINT ledger_entries_kind CHECK (kind IN ('credit', 'charge')),
  CONSTRAINT ledger_entries_amount_nonnegative CHECK (amount_cents >= 0),
  CONSTRAINT ledger_entries_charge_has_session CHECK ((kind = 'charge') = (session_id IS NOT NULL))
);
CREATE UNIQUE INDEX ledger_entries_session_id_key ON ledger_entries (session_id);
CREATE INDEX ledger_entries_wallet_id_idx ON ledger_entries (wallet_id);

CREATE TABLE api_keys (
  id          text PRIMARY KEY,
  secret_hash text NOT NULL,
  prefix      text NOT NULL,
  label       text,
  wallet_id   text NOT NULL REFERENCES wallets (id) ON UPDATE CASCADE ON DELETE RESTRICT,
  revoked_at  timestamptz(3),
  created_at  timestamptz(3) NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX api_keys_secret_hash_key ON api_keys (secret_hash);
CREATE INDEX api_keys_wallet_id_idx ON api_keys (wallet_id);

CREATE TABLE catalog_models (
  id              text PRIMARY KEY,
  display_name    text NOT NULL,
  owned_by        text NOT NULL,
  provider        text NOT NULL,
  provider_model  text NOT NULL,
  enabled         boolean NOT NULL DEFAULT true,
  approved        boolean NOT NULL DEFAULT false,
  capabilities    jsonb NOT NULL,
  audio           jsonb NOT NULL,
  modalities      jsonb NOT NULL,
  current_rate_id text,
  created_at      timestamptz(3) NOT NULL DEFAULT now(),
  updated_at      timestamptz(3) NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX catalog_models_current_rate_id_key ON catalog_models (current_rate_id);

CREATE TABLE rate_snapshots (
  id                    text PRIMARY KEY,
  model_id              text NOT NULL REFERENCES catalog_models (id) ON UPDATE CASCADE ON DELETE RESTRICT,
  source                text NOT NULL,
  per_minute            integer NOT NULL,
  audio_in_token        integer NOT NULL,
  audio_out_token       integer NOT NULL,
  relay_fee_milli_cents integer NOT NULL,
  created_at            timestamptz(3) NOT NULL DEFAULT now(),
  CONSTRAINT rate_snapshots_nonnegative CHECK (per_minute >= 0 AND audio_in_token >= 0 AND audio_out_token >= 0 AND relay_fee_milli_cents >= 0)
);
CREATE INDEX rate_snapshots_model_id_idx ON rate_snapshots (model_id);
ALTER TABLE catalog_models ADD CONSTRAINT catalog_models_current_rate_id_fkey
  FOREIGN KEY (current_rate_id) REFERENCES rate_snapshots (id) ON UPDATE CASCADE ON DELETE SET NULL;

-- Snapshots are immutable: a pricing change inserts a new row.
CREATE FUNCTION rate_snapshots_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'rate snapshots are immutable';
END $$;
CREATE TRIGGER rate_snapshots_no_update BEFORE UPDATE OR DELETE ON rate_snapshots
  FOR EACH ROW EXECUTE FUNCTION rate_snapshots_immutable();

CREATE TABLE voice_sessions (
  id                   text PRIMARY KEY,
  key_id               text NOT NULL REFERENCES api_keys (id) ON UPDATE CASCADE ON DELETE RESTRICT,
  wallet_id            text NOT NULL REFERENCES wallets (id) ON UPDATE CASCADE ON DELETE RESTRICT,
  model_id             text NOT NULL REFERENCES catalog_models (id) ON UPDATE CASCADE ON DELETE RESTRICT,
  rate_snapshot_id     text NOT NULL REFERENCES rate_snapshots (id) ON UPDATE CASCADE ON DELETE RESTRICT,
  status               text NOT NULL,
  preauthorized_cents  integer NOT NULL,
  reserved_cents       integer NOT NULL,
  trace_id             text NOT NULL,
  created_at           timestamptz(3) NOT NULL DEFAULT now(),
  last_activity_at     timestamptz(3) NOT NULL DEFAULT now(),
  idle_timeout_seconds integer NOT NULL,
  max_ends_at          timestamptz(3) NOT NULL,
  activated_at         timestamptz(3),
  end_requested_at     timestamptz(3),
  end_cause            text,
  terminal_status      text,
  settled_at           timestamptz(3),
  audio_in_ms          bigint NOT NULL DEFAULT 0,
  audio_out_ms         bigint NOT NULL DEFAULT 0,
  input_audio_tokens   bigint NOT NULL DEFAULT 0,
  output_audio_tokens  bigint NOT NULL DEFAULT 0,
  billed_cents         integer NOT NULL DEFAULT 0,
  legacy               boolean NOT NULL DEFAULT false,
  CONSTRAINT voice_sessions_status CHECK (status IN ('ready', 'active', 'completed', 'cancelled', 'failed', 'expired')),
  CONSTRAINT voice_sessions_terminal_status CHECK (terminal_status IS NULL OR terminal_status IN ('completed', 'cancelled', 'failed', 'expired')),
  CONSTRAINT voice_sessions_billed_within_preauth CHECK (billed_cents >= 0 AND billed_cents <= preauthorized_cents),
  CONSTRAINT voice_sessions_reserved_range CHECK (reserved_cents >= 0 AND reserved_cents <= preauthorized_cents),
  CONSTRAINT voice_sessions_settled_releases CHECK (settled_at IS NULL OR reserved_cents = 0)
);
CREATE INDEX voice_sessions_key_id_idx ON voice_sessions (key_id);
CREATE INDEX voice_sessions_wallet_id_idx ON voice_sessions (wallet_id);
CREATE INDEX voice_sessions_settled_at_max_ends_at_idx ON voice_sessions (settled_at, max_ends_at);
CREATE INDEX voice_sessions_settled_at_last_activity_at_idx ON voice_sessions (settled_at, last_activity_at);

CREATE TABLE session_attachments (
  id                  text PRIMARY KEY,
  session_id          text NOT NULL REFERENCES voice_sessions (id) ON UPDATE CASCADE ON DELETE RESTRICT,
  relay_id            text NOT NULL,
  seq                 integer NOT NULL DEFAULT 0,
  audio_in_ms         bigint NOT NULL DEFAULT 0,
  audio_out_ms        bigint NOT NULL DEFAULT 0,
  input_audio_tokens  bigint NOT NULL DEFAULT 0,
  output_audio_tokens bigint NOT NULL DEFAULT 0,
  final               boolean NOT NULL DEFAULT false,
  started_at          timestamptz(3) NOT NULL DEFAULT now(),
  updated_at          timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX session_attachments_session_id_idx ON session_attachments (session_id);

CREATE TABLE settlements (
  session_id          text PRIMARY KEY REFERENCES voice_sessions (id) ON UPDATE CASCADE ON DELETE RESTRICT,
  status              text NOT NULL,
  billed_cents        integer NOT NULL,
  audio_in_ms         bigint NOT NULL,
  audio_out_ms        bigint NOT NULL,
  input_audio_tokens  bigint NOT NULL,
  output_audio_tokens bigint NOT NULL,
  created_at          timestamptz(3) NOT NULL DEFAULT now()
);

CREATE TABLE idempotency_keys (
  key_id          text NOT NULL REFERENCES api_keys (id) ON UPDATE CASCADE ON DELETE RESTRICT,
  idempotency_key text NOT NULL,
  fingerprint     text NOT NULL,
  session_id      text NOT NULL,
  created_at      timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (key_id, idempotency_key)
);
CREATE INDEX idempotency_keys_created_at_idx ON idempotency_keys (created_at);

-- migrate:down
DROP TABLE idempotency_keys;
DROP TABLE settlements;
DROP TABLE session_attachments;
DROP TABLE voice_sessions;
ALTER TABLE catalog_models DROP CONSTRAINT catalog_models_current_rate_id_fkey;
DROP TABLE rate_snapshots;
DROP FUNCTION rate_snapshots_immutable();
DROP TABLE catalog_models;
DROP TABLE api_keys;
DROP TABLE ledger_entries;
DROP TABLE wallets;
