-- migrate:up
-- The wire dialect an attachment speaks (the relay's codec: svc-realtime-v1, openai, twilio, telnyx), beside
-- its transport, so the operator sees what carried each session (a WebSocket in svc-realtime-v1 or in the
-- OpenAI dialect, a Twilio or Telnyx stream, a WebRTC call). No CHECK: a new dialect is a codec folder and a
-- registration line in the relay, not a migration. NULL for attachments recorded before it.
ALTER TABLE session_attachments ADD COLUMN dialect text;

-- migrate:down
ALTER TABLE session_attachments DROP COLUMN dialect;
