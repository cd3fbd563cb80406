// Rows for tests: one catalog model with a rate, and wallets with a key, written through Prisma.
import type { DbOrTx } from '../src/index.js';

export const MODEL_ID = 'local/echo';
export const RATE_ID = 'rate_test';

export async function seedCatalog(db: DbOrTx): Promise<void> {
  await db.catalogModel.create({
    data: {
      id: MODEL_ID,
      displayName: 'Echo',
      ownedBy: 'local',
      provider: 'local',
      providerModel: 'echo',
      capabilities: { speech_to_speech: true },
      audio: { input: ['pcm16'], output: ['pcm16'] },
      modalities: ['audio'],
    },
  });
  await db.rateSnapshot.create({
    data: { id: RATE_ID, modelId: MODEL_ID, source: 'test', perMinute: 6, audioInToken: 1, audioOutToken: 2, relayFeeMilliCents: 100 },
  });
  await db.catalogModel.update({ where: { id: MODEL_ID }, data: { currentRateId: RATE_ID } });
}

/** A wallet credited with `creditCents` (balance and ledger agree) and one API key `key_<walletId>`. */
export async function seedWallet(db: DbOrTx, walletId: string, creditCents: bigint): Promise<string> {
  await db.wallet.create({ data: { id: walletId, balanceCents: creditCents } });
  await db.ledgerEntry.create({ data: { walletId, kind: 'credit', amountCents: creditCents } });
  const keyId = `key_${walletId}`;
  await db.apiKey.create({ data: { id: keyId, secretHash: `hash_${walletId}`, prefix: 'vr_sk_test', walletId } });
  return keyId;
}

export interface SessionSeed {
  id: string;
  walletId: string;
  keyId: string;
  preauthorizedCents: number;
  reservedCents: number;
}

export async function seedSession(db: DbOrTx, s: SessionSeed): Promise<void> {
  await db.voiceSession.create({
    data: {
      ...s,
      modelId: MODEL_ID,
      rateSnapshotId: RATE_ID,
      status: 'ready',
      traceId: '0'.repeat(32),
      idleTimeoutSeconds: 300,
      maxEndsAt: new Date(Date.now() + 3_600_000),
    },
  });
}
