-- migrate:up
-- What carries an attachment's media (SessionTransport in @s2s/contract). A phone stream or a WebRTC call
-- never reattaches, so billing's sweeper ends the session when the relay holding such an attachment is gone
-- (docs/billing.md, "Calls whose relay is gone"); a WebSocket client may attach again, so its session waits.
ALTER TABLE session_attachments
  ADD COLUMN transport text NOT NULL DEFAULT 'websocket'
  CHECK (transport IN ('websocket', 'twilio', 'telnyx', 'webrtc'));

-- migrate:down
ALTER TABLE session_attachments DROP COLUMN transport;
