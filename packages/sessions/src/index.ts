// The session lifecycle's I/O, one verb per file, each `fn({ ctx, input })` (docs/architecture.md).
export type { SessionsContext, SessionsDbContext, SessionsLog } from './context.js';
export { activateSession } from './activate.js';
export { attachmentsAudioAtSql, lockedSessionActivity, sessionActivitySql } from './activity.js';
export { authenticateClientSecret, type AuthenticatedClientSecret } from './authenticate-client-secret.js';
export { authenticateKey } from './authenticate-key.js';
export { createSession, createStatement, type CreatedSession, type CreateSessionInput, type SessionPolicy } from './create.js';
export { endAndWait } from './end-and-wait.js';
export { expireIfDue, type ExpiryCandidate, type ExpiryOutcome } from './expire-if-due.js';
export { getSession, loadOwnedSession, type OwnedSessionInput } from './get.js';
export { readHeldSessions, type HeldSessionState } from './held-sessions.js';
export { mintClientSecret, type MintedClientSecret } from './mint-client-secret.js';
export { recordAttachment, type RecordedAttachment } from './record-attachment.js';
export { announceEnd, requestEnd, type EndRequest } from './request-end.js';
