import { Router } from 'express';
import {
  CreateKeyRequest,
  CreditWalletRequest,
  ListKeysQuery,
  ListLedgerQuery,
  ListModelsQuery,
  ListSessionsQuery,
  UpdateKeyRequest,
  UpsertModelRequest,
} from '@s2s/contract';
import type { AppContext } from '../context.js';
import { requireAdmin } from '../http/auth.js';
import { readJsonBody } from '../http/body.js';
import { readQuery } from '../http/query.js';
import { listAdminModels, upsertModel } from '../domain/catalog.js';
import { createKey, getKey, listKeys, revokeKey, updateKey } from '../domain/keys.js';
import { listSessions } from '../domain/session-list.js';
import { creditWallet, getWallet, listLedger } from '../domain/wallets.js';

/** The operator API of decisions.md, mounted under /admin/v1; every route needs the admin token. */
export function adminRouter(ctx: AppContext): Router {
  const router = Router();
  router.use(requireAdmin(ctx.config.ADMIN_TOKEN));

  router.post('/keys', async (req, res) => {
    const input = readJsonBody(req, res, CreateKeyRequest);
    res.status(201).json(await createKey({ ctx, input }));
  });

  router.get('/keys', async (req, res) => {
    res.json(await listKeys({ ctx, input: readQuery(req, ListKeysQuery) }));
  });

  router.get('/keys/:id', async (req, res) => {
    res.json(await getKey({ ctx, input: { keyId: req.params.id } }));
  });

  router.patch('/keys/:id', async (req, res) => {
    const patch = readJsonBody(req, res, UpdateKeyRequest);
    res.json(await updateKey({ ctx, input: { keyId: req.params.id, patch } }));
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

  router.get('/wallets/:id/ledger', async (req, res) => {
    res.json(await listLedger({ ctx, input: { walletId: req.params.id, query: readQuery(req, ListLedgerQuery) } }));
  });

  router.get('/sessions', async (req, res) => {
    res.json(await listSessions({ ctx, input: readQuery(req, ListSessionsQuery) }));
  });

  router.get('/models', async (req, res) => {
    res.json(await listAdminModels({ ctx, input: readQuery(req, ListModelsQuery) }));
  });

  router.put('/models', async (req, res) => {
    const input = readJsonBody(req, res, UpsertModelRequest);
    res.json(await upsertModel({ ctx, input }));
  });

  return router;
}
