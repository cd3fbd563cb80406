-- migrate:up
-- One row per live relay, renewed every few seconds: billing reads it to tell a relay that still
-- holds unpublished usage (lease alive) from one that is gone (lease expired or row deleted).
CREATE TABLE relay_leases (
  relay_id   text PRIMARY KEY,
  expires_at timestamptz(3) NOT NULL,
  renewed_at timestamptz(3) NOT NULL DEFAULT now()
);

-- migrate:down
DROP TABLE relay_leases;
