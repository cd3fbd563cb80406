-- migrate:up
-- Every checkpoint fold rewrites an attachment's counters (no indexed column changes): free space on each
-- page lets PostgreSQL keep the new version on the same page (a HOT update, no index writes).
ALTER TABLE session_attachments SET (fillfactor = 70);

-- migrate:down
ALTER TABLE session_attachments RESET (fillfactor);
