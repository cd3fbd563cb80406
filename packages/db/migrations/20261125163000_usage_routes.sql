-- migrate:up

-- The usage split by the route that served it (issue 11 item 6, docs/providers.md "Failover routes"):
-- [{"provider", "provider_model", "audio_in_ms", ...every usage counter}], the parts adding up to the row's
-- counters. NULL: the split is unknown (a checkpoint of version 1 or 2, or a row older than this column).
ALTER TABLE session_attachments ADD COLUMN routes jsonb;
ALTER TABLE settlements ADD COLUMN routes jsonb;

-- migrate:down

ALTER TABLE settlements DROP COLUMN routes;
ALTER TABLE session_attachments DROP COLUMN routes;
