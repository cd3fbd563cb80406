-- migrate:up

-- Amounts (issue 8, defect 5). The API accepts rates up to 2^53 - 1 milli-cents, so the rates and the cents
-- derived from them (preauthorization, reservation, bill) need bigint; a wallet holds at most 2^53 - 1 cents,
-- the largest integer every JSON reader keeps exactly.
ALTER TABLE rate_snapshots
  ALTER COLUMN per_minute TYPE bigint,
  ALTER COLUMN audio_in_token TYPE bigint,
  ALTER COLUMN audio_out_token TYPE bigint,
  ALTER COLUMN relay_fee_milli_cents TYPE bigint;
ALTER TABLE voice_sessions
  ALTER COLUMN preauthorized_cents TYPE bigint,
  ALTER COLUMN reserved_cents TYPE bigint,
  ALTER COLUMN billed_cents TYPE bigint;
ALTER TABLE settlements ALTER COLUMN billed_cents TYPE bigint;
ALTER TABLE wallets ADD CONSTRAINT wallets_balance_exact CHECK (balance_cents <= 9007199254740991);

-- Per-key limits (decisions.md, "Limits"). NULL means the gateway's default (KEY_MAX_LIVE_SESSIONS,
-- KEY_MAX_CREATES_PER_MINUTE).
ALTER TABLE api_keys
  ADD COLUMN max_live_sessions integer,
  ADD COLUMN max_creates_per_minute integer,
  ADD CONSTRAINT api_keys_max_live_sessions_positive CHECK (max_live_sessions >= 1),
  ADD CONSTRAINT api_keys_max_creates_per_minute_positive CHECK (max_creates_per_minute >= 1);

-- The limiter state sits on the wallet row, which every create already locks and updates (one wallet per
-- key): live sessions = sessions_created - sessions_ended, create_rate_tat is the create rate's GCRA state.
-- The create statement counts creations; this trigger counts endings for every path that settles.
ALTER TABLE wallets
  ADD COLUMN sessions_created bigint NOT NULL DEFAULT 0,
  ADD COLUMN sessions_ended bigint NOT NULL DEFAULT 0,
  ADD COLUMN create_rate_tat timestamptz(6);

CREATE FUNCTION voice_sessions_count_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    UPDATE wallets SET sessions_ended = sessions_ended + 1 WHERE id = OLD.wallet_id;
  ELSE
    UPDATE wallets SET sessions_ended = sessions_ended + CASE WHEN NEW.settled_at IS NULL THEN -1 ELSE 1 END
     WHERE id = NEW.wallet_id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER voice_sessions_count_settled AFTER UPDATE OF settled_at ON voice_sessions
  FOR EACH ROW WHEN ((OLD.settled_at IS NULL) <> (NEW.settled_at IS NULL)) EXECUTE FUNCTION voice_sessions_count_ended();
CREATE TRIGGER voice_sessions_count_deleted AFTER DELETE ON voice_sessions
  FOR EACH ROW WHEN (OLD.settled_at IS NULL) EXECUTE FUNCTION voice_sessions_count_ended();

UPDATE wallets w SET sessions_created = c.created, sessions_ended = c.ended
  FROM (SELECT wallet_id, count(*) AS created, count(settled_at) AS ended FROM voice_sessions GROUP BY wallet_id) c
 WHERE c.wallet_id = w.id;

-- migrate:down
DROP TRIGGER voice_sessions_count_deleted ON voice_sessions;
DROP TRIGGER voice_sessions_count_settled ON voice_sessions;
DROP FUNCTION voice_sessions_count_ended();
ALTER TABLE wallets
  DROP COLUMN create_rate_tat,
  DROP COLUMN sessions_ended,
  DROP COLUMN sessions_created;
ALTER TABLE api_keys
  DROP COLUMN max_creates_per_minute,
  DROP COLUMN max_live_sessions;
ALTER TABLE wallets DROP CONSTRAINT wallets_balance_exact;
ALTER TABLE settlements ALTER COLUMN billed_cents TYPE integer;
ALTER TABLE voice_sessions
  ALTER COLUMN billed_cents TYPE integer,
  ALTER COLUMN reserved_cents TYPE integer,
  ALTER COLUMN preauthorized_cents TYPE integer;
ALTER TABLE rate_snapshots
  ALTER COLUMN relay_fee_milli_cents TYPE integer,
  ALTER COLUMN audio_out_token TYPE integer,
  ALTER COLUMN audio_in_token TYPE integer,
  ALTER COLUMN per_minute TYPE integer;
