import { z } from 'zod';
import { AdminModel, ApiKeyResource, VoiceSession } from './http.js';
import { SessionTransport } from './telephony.js';

/**
 * Listing endpoints of the operator API (decisions.md is silent; documented in docs/operator-api.md):
 * newest first (models by id), keyset-paged with an opaque cursor, filters as query parameters.
 * Unknown parameters are refused, so a misspelt filter never silently lists everything.
 */
export const LIST_DEFAULT_LIMIT = 20;
export const LIST_MAX_LIMIT = 100;

const Limit = z
  .string()
  .regex(/^[0-9]{1,3}$/, 'an integer from 1 to 100')
  .transform(Number)
  .pipe(z.int().min(1).max(LIST_MAX_LIMIT));
const Cursor = z.string().min(1).max(512);
const Bool = z.enum(['true', 'false']).transform((v) => v === 'true');
const Id = z.string().min(1).max(255);

const paging = { limit: Limit.optional(), after: Cursor.optional() };

export const ListKeysQuery = z.strictObject({ ...paging, wallet_id: Id.optional(), revoked: Bool.optional() });
export type ListKeysQuery = z.infer<typeof ListKeysQuery>;

export const ListModelsQuery = z.strictObject({
  ...paging,
  provider: Id.optional(),
  approved: Bool.optional(),
  enabled: Bool.optional(),
});
export type ListModelsQuery = z.infer<typeof ListModelsQuery>;

export const SessionStatusFilter = z.enum(['ready', 'active', 'completed', 'cancelled', 'failed', 'expired']);

export const ListSessionsQuery = z.strictObject({
  ...paging,
  key_id: Id.optional(),
  wallet_id: Id.optional(),
  model: Id.optional(),
  status: SessionStatusFilter.optional(),
});
export type ListSessionsQuery = z.infer<typeof ListSessionsQuery>;

export const ListLedgerQuery = z.strictObject({ ...paging, kind: z.enum(['credit', 'charge']).optional() });
export type ListLedgerQuery = z.infer<typeof ListLedgerQuery>;

/** One page: `next_cursor` is null on the last page; pass it as `after` for the next one. */
export function AdminList<T extends z.ZodType>(item: T) {
  return z.strictObject({
    object: z.literal('list'),
    data: z.array(item),
    has_more: z.boolean(),
    next_cursor: z.string().nullable(),
  });
}
export interface AdminListPage<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

export const AdminKeyList = AdminList(ApiKeyResource);
export const AdminModelList = AdminList(AdminModel);

/**
 * A session as the operator sees it: the voice session resource plus its owner and what carries it, as its newest
 * attachment recorded it: `transport` (a control socket is none) and the relay's wire `dialect` on it
 * (`svc-realtime-v1`, `openai`, `twilio`, `telnyx`); both null before the first attach (`dialect` also for an
 * attachment recorded before dialects were kept).
 */
export const AdminSession = VoiceSession.extend({
  key_id: z.string(),
  wallet_id: z.string(),
  transport: SessionTransport.nullable(),
  dialect: z.string().nullable(),
});
export type AdminSession = z.infer<typeof AdminSession>;
export const AdminSessionList = AdminList(AdminSession);

export const LedgerEntry = z.strictObject({
  id: z.string(),
  object: z.literal('ledger_entry'),
  wallet_id: z.string(),
  kind: z.enum(['credit', 'charge']),
  amount_cents: z.int().nonnegative(),
  session_id: z.string().nullable(),
  created_at: z.int(),
});
export type LedgerEntry = z.infer<typeof LedgerEntry>;
export const LedgerEntryList = AdminList(LedgerEntry);
