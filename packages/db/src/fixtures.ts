import { issueApiKey, newId } from '@s2s/core';
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
