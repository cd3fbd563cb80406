import { Router } from 'express';
import { CreateSessionRequest } from '@s2s/contract';
import { bearerToken, errors, isApiKeyShaped, newTraceId } from '@s2s/core';
import { activeTraceId } from '@s2s/telemetry';
import type { AppContext } from '../context.js';
import { readJsonBody } from '../http/body.js';
import { parseIdempotencyKey } from '../domain/idempotency.js';
import { checkApiKey, createSession, getSession } from '../domain/sessions.js';

/** POST /v1/voice/sessions and GET /v1/voice/sessions/{id}; mounted at /v1/voice/sessions. */
export function sessionsRouter(ctx: AppContext): Router {
  const router = Router();

  router.post('/', async (req, res) => {
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
      await checkApiKey({ ctx, input: { authorization } });
      throw bodyError;
    }
    const traceId = activeTraceId() ?? newTraceId();
    const { session, replayed } = await createSession({ ctx, input: { authorization, body, idempotencyKey, traceId } });
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    res.status(201).json(session);
  });

  router.get('/:id', async (req, res) => {
    res.json(await getSession({ ctx, input: { authorization: req.headers.authorization, sessionId: req.params.id } }));
  });

  return router;
}
