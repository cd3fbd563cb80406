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
-- KEY_MAX_CREATES_PER_MINUTE). Live sessions = sessions_created - key_session_ends.sessions_ended: creates
-- lock the key row and read sessions_created fresh; settlements count ends on another row, so a settlement
-- (which holds the wallet row) never waits for a key row that a create holds while it waits for the wallet.
ALTER TABLE api_keys
  ADD COLUMN max_live_sessions integer,
  ADD COLUMN max_creates_per_minute integer,
  ADD COLUMN sessions_created bigint NOT NULL DEFAULT 0,
  ADD COLUMN create_rate_tat timestamptz(6),
  ADD CONSTRAINT api_keys_max_live_sessions_positive CHECK (max_live_sessions >= 1),
  ADD CONSTRAINT api_keys_max_creates_per_minute_positive CHECK (max_creates_per_minute >= 1);

CREATE TABLE key_session_ends (
  key_id         text PRIMARY KEY REFERENCES api_keys (id) ON UPDATE CASCADE ON DELETE RESTRICT,
  sessions_ended bigint NOT NULL DEFAULT 0
);

-- Every path that inserts, settles or deletes a session keeps the two counters exact.
CREATE FUNCTION voice_sessions_count_live() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ended integer := 0;
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE api_keys SET sessions_created = sessions_created + 1 WHERE id = NEW.key_id;
    IF NEW.settled_at IS NOT NULL THEN ended := 1; END IF;
  ELSIF TG_OP = 'UPDATE' THEN
    ended := CASE WHEN NEW.settled_at IS NULL THEN -1 ELSE 1 END;
  ELSE
    UPDATE api_keys SET sessions_created = sessions_created - 1 WHERE id = OLD.key_id;
    IF OLD.settled_at IS NOT NULL THEN ended := -1; END IF;
  END IF;
  IF ended <> 0 THEN
    INSERT INTO key_session_ends AS e (key_id, sessions_ended) VALUES (coalesce(NEW.key_id, OLD.key_id), ended)
      ON CONFLICT (key_id) DO UPDATE SET sessions_ended = e.sessions_ended + excluded.sessions_ended;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER voice_sessions_live_insert AFTER INSERT ON voice_sessions
  FOR EACH ROW EXECUTE FUNCTION voice_sessions_count_live();
CREATE TRIGGER voice_sessions_live_settle AFTER UPDATE OF settled_at ON voice_sessions
  FOR EACH ROW WHEN ((OLD.settled_at IS NULL) <> (NEW.settled_at IS NULL)) EXECUTE FUNCTION voice_sessions_count_live();
CREATE TRIGGER voice_sessions_live_delete AFTER DELETE ON voice_sessions
  FOR EACH ROW EXECUTE FUNCTION voice_sessions_count_live();

UPDATE api_keys k SET sessions_created = c.n
  FROM (SELECT key_id, count(*) AS n FROM voice_sessions GROUP BY key_id) c WHERE c.key_id = k.id;
INSERT INTO key_session_ends (key_id, sessions_ended)
  SELECT key_id, count(*) FROM voice_sessions WHERE settled_at IS NOT NULL GROUP BY key_id;

-- migrate:down
DROP TRIGGER voice_sessions_live_delete ON voice_sessions;
DROP TRIGGER voice_sessions_live_settle ON voice_sessions;
DROP TRIGGER voice_sessions_live_insert ON voice_sessions;
DROP FUNCTION voice_sessions_count_live();
DROP TABLE key_session_ends;
ALTER TABLE api_keys
  DROP COLUMN create_rate_tat,
  DROP COLUMN sessions_created,
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
