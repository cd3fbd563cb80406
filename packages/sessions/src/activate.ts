import type { SessionsDbContext } from './context.js';

/** ready → active on the first accepted input (decisions.md); a no-op for an active or ending session. */
export async function activateSession({ ctx, input }: { ctx: SessionsDbContext; input: { sessionId: string } }): Promise<boolean> {
  const { rowCount } = await ctx.db.pool.query(
    `UPDATE voice_sessions SET status = 'active', activated_at = now(), last_activity_at = now()
      WHERE id = $1 AND status = 'ready' AND end_requested_at IS NULL`,
    [input.sessionId],
  );
  return (rowCount ?? 0) > 0;
}
