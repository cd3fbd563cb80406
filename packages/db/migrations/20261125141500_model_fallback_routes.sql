-- migrate:up

-- Failover routes (issue 11 item 6): further deployments of the same model, in order, as
-- [{"provider": "...", "provider_model": "..."}]. A session whose upstream cannot be re-established on its
-- route continues on the next one (docs/providers.md, "Failover routes"); [] = the primary route only.
ALTER TABLE catalog_models ADD COLUMN fallback_routes jsonb NOT NULL DEFAULT '[]'::jsonb;

-- migrate:down

ALTER TABLE catalog_models DROP COLUMN fallback_routes;
