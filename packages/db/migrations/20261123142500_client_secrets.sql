-- migrate:up

-- Ephemeral client secrets (decisions.md, "Ephemeral client secrets (browsers)"). Only the SHA-256 of the
-- `ek_…` value is stored; a secret attaches its one session until expires_at.
CREATE TABLE client_secrets (
  secret_hash text PRIMARY KEY,
  session_id  text NOT NULL REFERENCES voice_sessions (id) ON UPDATE CASCADE ON DELETE CASCADE,
  created_at  timestamptz(3) NOT NULL DEFAULT now(),
  expires_at  timestamptz(3) NOT NULL,
  CONSTRAINT client_secrets_expires_after_creation CHECK (expires_at > created_at)
);
CREATE INDEX client_secrets_session_id_idx ON client_secrets (session_id);
CREATE INDEX client_secrets_expires_at_idx ON client_secrets (expires_at);

-- initial_settings: the `session` object of `POST /v1/realtime/client_secrets` (OpenAI's GA session shape,
-- without `type` and `model`), validated there; the relay applies it at the first attach as the session's
-- initial settings. ends_with_socket: the session ends (client_closed) when its socket closes (the legacy
-- alias and sessions minted by `POST /v1/realtime/client_secrets`).
ALTER TABLE voice_sessions
  ADD COLUMN initial_settings jsonb,
  ADD COLUMN ends_with_socket boolean NOT NULL DEFAULT false;
UPDATE voice_sessions SET ends_with_socket = legacy WHERE legacy;

-- migrate:down
ALTER TABLE voice_sessions DROP COLUMN ends_with_socket, DROP COLUMN initial_settings;
DROP TABLE client_secrets;
