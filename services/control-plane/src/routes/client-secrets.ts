import { Router, type Request, type Response } from 'express';
import { CreateRealtimeClientSecretRequest, CreateSessionClientSecretRequest } from '@s2s/contract';
import { bearerToken, errors, hashApiKey, isApiKeyShaped } from '@s2s/core';
import { authenticateKey } from '@s2s/sessions';
import type { AppContext } from '../context.js';
import { createRealtimeClientSecret, mintSessionClientSecret } from '../domain/client-secrets.js';
import { readJsonBody } from '../http/body.js';
import { traceIdOf } from '../http/request-context.js';

/**
 * POST /v1/realtime/client_secrets; mounted at /v1/realtime. Only an API key mints: an `ek_` secret opens no
 * HTTP route (401 invalid_vr_sk). Checks, in order: key (401), body (400), then those of a session create.
 */
export function realtimeClientSecretsRouter(ctx: AppContext): Router {
  const router = Router();
  router.post('/client_secrets', async (req, res) => {
    const authorization = req.headers.authorization;
    const secret = bearerToken(authorization);
    if (secret === null || !isApiKeyShaped(secret)) throw errors.invalidKey();
    let request: CreateRealtimeClientSecretRequest;
    try {
      request = readJsonBody(req, res, CreateRealtimeClientSecretRequest);
    } catch (bodyError) {
      await authenticateKey({ ctx, input: { authorization } });
      throw bodyError;
    }
    const traceId = traceIdOf(req);
    res.json(await createRealtimeClientSecret({ ctx, input: { keySecretHash: hashApiKey(secret), request, traceId } }));
  });
  return router;
}

/** POST /v1/voice/sessions/{id}/client_secrets (sessionsRouter). */
export function sessionClientSecretRoute(ctx: AppContext): (req: Request<{ id: string }>, res: Response) => Promise<void> {
  return async (req, res) => {
    const key = await authenticateKey({ ctx, input: { authorization: req.headers.authorization } });
    const body = readJsonBody(req, res, CreateSessionClientSecretRequest, { optional: true });
    const minted = await mintSessionClientSecret({ ctx, input: { key, sessionId: req.params.id, expiresAfter: body.expires_after } });
    res.status(201).json(minted);
  };
}
