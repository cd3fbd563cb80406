-- migrate:up
-- Activity shown by usage checkpoints is kept on the attachment row that the fold rewrites anyway (a HOT
-- update), not on voice_sessions: moving voice_sessions.last_activity_at for every live session on every fold
-- wrote a new session tuple and five index entries per session, most of the fold's cost at 250 ms
-- checkpoints. A session's activity is the later of voice_sessions.last_activity_at (create, attach, first
-- input) and the newest last_audio_at of its attachments.
ALTER TABLE session_attachments ADD COLUMN last_audio_at timestamptz(3);

-- migrate:down
ALTER TABLE session_attachments DROP COLUMN last_audio_at;
