import type { Request, Response } from 'express';
import { EndSessionRequest } from '@s2s/contract';
import { toVoiceSession } from '@s2s/core';
import { authenticateKey, endAndWait, loadOwnedSession } from '@s2s/sessions';
import type { AppContext } from '../context.js';
import { readJsonBody } from '../http/body.js';

/** POST /v1/voice/sessions/{id}/end (sessionsRouter; a store outage answers `session_store_unavailable`). */
export function sessionEndRoute(ctx: AppContext): (req: Request<{ id: string }>, res: Response) => Promise<void> {
  return async (req, res) => {
    // api-v1 order: the key, then ownership, then the body.
    const key = await authenticateKey({ ctx, input: { authorization: req.headers.authorization } });
    const session = await loadOwnedSession({ ctx, input: { sessionId: req.params.id, keyId: key.keyId } });
    const body = readJsonBody(req, res, EndSessionRequest, { optional: true });
    const settled = await endAndWait({ ctx, input: { session, reason: body.reason, waitMs: ctx.config.END_WAIT_MS } });
    res.json(toVoiceSession(settled, ctx.config.REALTIME_PUBLIC_URL));
  };
}
