import { LIST_DEFAULT_LIMIT, type AdminListPage, type AdminSession, type ListSessionsQuery } from '@s2s/contract';
import { toVoiceSession } from '@s2s/core';
import { selectSessions } from '@s2s/sessions';
import type { AppContext } from '../context.js';
import { decodeTimeCursor, toPage } from './paging.js';

/**
 * GET /admin/v1/sessions: newest first, filtered by key, wallet, model and status; each entry is the voice
 * session resource (usage by modality and bill included) plus its owner. Statuses are as stored: an idle
 * session past its expiry shows `expired` once the sweeper or a read by its owner has expired it.
 */
export async function listSessions({
  ctx,
  input,
}: {
  ctx: Pick<AppContext, 'db' | 'config'>;
  input: ListSessionsQuery;
}): Promise<AdminListPage<AdminSession>> {
  const limit = input.limit ?? LIST_DEFAULT_LIMIT;
  const after = decodeTimeCursor(input.after);
  const rows = await selectSessions(ctx.db.pool, {
    keyId: input.key_id,
    walletId: input.wallet_id,
    modelId: input.model,
    status: input.status,
    after,
    limit: limit + 1,
  });
  return toPage(
    rows,
    limit,
    ({ record }) => ({ ...toVoiceSession(record, ctx.config.REALTIME_PUBLIC_URL), key_id: record.keyId, wallet_id: record.walletId }),
    (r) => r.position,
  );
}
