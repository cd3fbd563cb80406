-- migrate:up

-- The sweeper's index of unsettled sessions orders them by id instead of max_ends_at (issue 28, item 5). Every
-- create inserts max_ends_at = now() + max seconds, the largest yet, so every create wrote the same rightmost
-- page of (settled_at, max_ends_at) while it held its wallet row: under load the creates queued on that page
-- (LWLock:BufferContent) and, behind them, on the wallet rows (docs/benchmarks.md, "Scale: the create
-- statement under concurrency"). Session ids are random, so inserts into (settled_at, id) spread over the
-- unsettled range. The sweeper reads the unsettled sessions by the settled_at IS NULL prefix alone (its
-- max_ends_at and idle tests are filters either way), so it loses nothing.
CREATE INDEX voice_sessions_settled_at_id_idx ON voice_sessions (settled_at, id);
DROP INDEX voice_sessions_settled_at_max_ends_at_idx;

-- migrate:down
CREATE INDEX voice_sessions_settled_at_max_ends_at_idx ON voice_sessions (settled_at, max_ends_at);
DROP INDEX voice_sessions_settled_at_id_idx;
