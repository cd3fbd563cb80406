import { issueApiKey, newId, RATE_FIELDS, type RateField } from '@s2s/core';
import type { Sql } from './sql.js';

export interface WalletKeyFixture {
  /** The key's one-time secret (`vr_sk_...`), for an Authorization header. */
  secret: string;
  keyId: string;
  walletId: string;
}

/**
 * A wallet credited as the operator API does (the balance plus one `credit` ledger row, so the ledger
 * invariants hold) and a live API key on it: the one wallet+key fixture of every test and benchmark.
 */
export async function createWalletAndKey(sql: Sql, opts: { balanceCents?: number; revoked?: boolean } = {}): Promise<WalletKeyFixture> {
  const balanceCents = opts.balanceCents ?? 10_000;
  const walletId = newId('wal');
  const keyId = newId('key');
  const key = issueApiKey();
  await sql.query('INSERT INTO wallets (id, balance_cents) VALUES ($1, $2)', [walletId, balanceCents]);
  if (balanceCents > 0) {
    await sql.query(`INSERT INTO ledger_entries (wallet_id, kind, amount_cents) VALUES ($1, 'credit', $2)`, [walletId, balanceCents]);
  }
  await sql.query('INSERT INTO api_keys (id, secret_hash, prefix, wallet_id, revoked_at) VALUES ($1, $2, $3, $4, $5)', [
    keyId,
    key.hash,
    key.displayPrefix,
    walletId,
    opts.revoked ? new Date() : null,
  ]);
  return { secret: key.secret, keyId, walletId };
}

/** Inserts a rate snapshot of `modelId` with every rate of `rate` and makes it the model's current rate. */
export async function insertCurrentRate(
  sql: Sql,
  opts: { rateId: string; modelId: string; rate: Record<RateField, number>; source?: string },
): Promise<void> {
  await sql.query(
    `INSERT INTO rate_snapshots (id, model_id, source, ${RATE_FIELDS.join(', ')})
     VALUES ($1, $2, $3, ${RATE_FIELDS.map((_, i) => `$${i + 4}`).join(', ')})`,
    [opts.rateId, opts.modelId, opts.source ?? 'upstream_derived', ...RATE_FIELDS.map((f) => opts.rate[f])],
  );
  await sql.query('UPDATE catalog_models SET current_rate_id = $1 WHERE id = $2', [opts.rateId, opts.modelId]);
}
