import { Router } from 'express';
import { CreateKeyRequest, CreditWalletRequest, UpsertModelRequest } from '@s2s/contract';
import type { AppContext } from '../context.js';
import { requireAdmin } from '../http/auth.js';
import { readJsonBody } from '../http/body.js';
import { upsertModel } from '../domain/catalog.js';
import { createKey, revokeKey } from '../domain/keys.js';
import { creditWallet, getWallet } from '../domain/wallets.js';

/** The operator API of decisions.md, mounted under /admin/v1; every route needs the admin token. */
export function adminRouter(ctx: AppContext): Router {
  const router = Router();
  router.use(requireAdmin(ctx.config.ADMIN_TOKEN));

  router.post('/keys', async (req, res) => {
    const input = readJsonBody(req, res, CreateKeyRequest);
    res.status(201).json(await createKey({ ctx, input }));
  });

  router.post('/keys/:id/revoke', async (req, res) => {
    res.json(await revokeKey({ ctx, input: { keyId: req.params.id } }));
  });

  router.post('/wallets/:id/credit', async (req, res) => {
    const input = readJsonBody(req, res, CreditWalletRequest);
    res.json(await creditWallet({ ctx, input: { walletId: req.params.id, amountCents: input.amount_cents } }));
  });

  router.get('/wallets/:id', async (req, res) => {
    res.json(await getWallet({ ctx, input: { walletId: req.params.id } }));
  });

  router.put('/models', async (req, res) => {
    const input = readJsonBody(req, res, UpsertModelRequest);
    res.json(await upsertModel({ ctx, input }));
  });

  return router;
}
