import { Router, type Request, type Response } from 'express';
import { CreateSessionRequest } from '@s2s/contract';
import { bearerToken, errors, hashApiKey, isApiKeyShaped, sessionPolicyOf, toVoiceSession } from '@s2s/core';
import { isStoreUnavailableError } from '@s2s/db';
import { toAppError } from '@s2s/http-errors';
import { authenticateKey, createSession, getSession } from '@s2s/sessions';
import { serverRequestOf } from '@s2s/telemetry';
import type { AppContext } from '../context.js';
import { readJsonBody } from '../http/body.js';
import { storeUnavailableAnswers } from '../http/errors.js';
import { parseIdempotencyKey } from '../http/idempotency.js';
import { traceIdOf } from '../http/request-context.js';
import { sessionClientSecretRoute } from './client-secrets.js';
import { sessionEndRoute } from './session-end.js';

/** POST /v1/voice/sessions: what the route does once the request's body has been read (or failed to be). */
function createSessionRoute(ctx: AppContext): (req: Request, res: Response) => Promise<void> {
  const { config } = ctx;
  const policy = sessionPolicyOf(config);

  // Checks, in order: key (401), Idempotency-Key replay or conflict (replay / 409), model (404), wallet (402).
  async function create(req: Request, res: Response): Promise<void> {
    const authorization = req.headers.authorization;
    const secret = bearerToken(authorization);
    if (secret === null || !isApiKeyShaped(secret)) throw errors.invalidKey();
    let body: CreateSessionRequest;
    let idempotencyKey: string | undefined;
    try {
      body = readJsonBody(req, res, CreateSessionRequest);
      idempotencyKey = parseIdempotencyKey(req.headers['idempotency-key']);
    } catch (bodyError) {
      // The key is checked before the body complaint; the valid-body path checks it inside its one statement.
      await authenticateKey({ ctx, input: { authorization } });
      throw bodyError;
    }
    const traceId = traceIdOf(req);
    const { session, replayed } = await createSession({
      ctx,
      input: { key: { secretHash: hashApiKey(secret) }, request: body, idempotencyKey, traceId, policy },
    });
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    else ctx.telemetry.created(session, serverRequestOf(req)?.span);
    res.status(201).json(toVoiceSession(session, config.REALTIME_PUBLIC_URL));
  }

  return async (req, res) => {
    try {
      await create(req, res);
    } catch (err) {
      ctx.telemetry.refused(toAppError(err, isStoreUnavailableError).code);
      throw err;
    }
  };
}

/**
 * Everything under /v1/voice/sessions, mounted there once: the create, GET /{id}, POST /{id}/client_secrets and
 * POST /{id}/end.
 */
export function sessionsRouter(ctx: AppContext): Router {
  const router = Router();
  const { config } = ctx;

  router.post('/', createSessionRoute(ctx));
  router.get('/:id', async (req, res) => {
    const key = await authenticateKey({ ctx, input: { authorization: req.headers.authorization } });
    const session = await getSession({ ctx, input: { sessionId: req.params.id, keyId: key.keyId } });
    res.json(toVoiceSession(session, config.REALTIME_PUBLIC_URL));
  });
  router.post('/:id/client_secrets', sessionClientSecretRoute(ctx));
  router.post('/:id/end', storeUnavailableAnswers('session_store_unavailable'), sessionEndRoute(ctx));
  return router;
}
