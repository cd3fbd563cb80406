-- The experiment of docs/benchmarks.md ("Scale: the create statement under concurrency"): voice_sessions without
-- its foreign keys, so the create's insert runs no referential checks (each locks the referenced table and its
-- primary key FOR KEY SHARE). Never for a real database: run only by `--setup-sql` on the bench's own.
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT conname FROM pg_constraint WHERE conrelid = 'voice_sessions'::regclass AND contype = 'f' LOOP
    EXECUTE format('ALTER TABLE voice_sessions DROP CONSTRAINT %I', r.conname);
  END LOOP;
END $$;
