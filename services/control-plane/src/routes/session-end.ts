import { Router } from 'express';
import { EndSessionRequest } from '@s2s/contract';
import { AppError, isAppError, toVoiceSession } from '@s2s/core';
import { isStoreUnavailableError } from '@s2s/db';
import { authenticateKey, endAndWait, loadOwnedSession } from '@s2s/sessions';
import type { AppContext } from '../context.js';
import { readJsonBody } from '../http/body.js';

const storeUnavailable = (cause: unknown) =>
  new AppError('session_store_unavailable', 'The session store is unavailable; retry later.', { cause });

/** POST /v1/voice/sessions/{id}/end; mounted at /v1/voice/sessions. */
export function sessionEndRouter(ctx: AppContext): Router {
  const router = Router();
  router.post('/:id/end', async (req, res) => {
    try {
      // api-v1 order: the key, then ownership, then the body.
      const key = await authenticateKey({ ctx, input: { authorization: req.headers.authorization } });
      const session = await loadOwnedSession({ ctx, input: { sessionId: req.params.id, keyId: key.keyId } });
      const body = readJsonBody(req, res, EndSessionRequest, { optional: true });
      const settled = await endAndWait({ ctx, input: { session, reason: body.reason, waitMs: ctx.config.endWaitMs } });
      res.json(toVoiceSession(settled, ctx.config.realtimePublicUrl));
    } catch (err) {
      throw !isAppError(err) && isStoreUnavailableError(err) ? storeUnavailable(err) : err;
    }
  });
  return router;
}
