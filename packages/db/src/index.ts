// Public surface of @s2s/db. Test helpers live in '@s2s/db/testing'.
export { createDb, type CreateDbOptions, type Db, type DbHandle, type DbOrTx, type DbTx, type PreparedStatements } from './client.js';
export { isRetryable, isRetryableDbError, isStoreUnavailableError } from './errors.js';
export { withTransaction, type DbContext, type Sql } from './sql.js';
export { rateColumns, rateFromRow, usageColumns, usageFromRow, usageSums } from './usage-sql.js';
export { databaseNameOf, ensureDatabase, migrate, MIGRATIONS_DIR } from './migrate.js';
// The Prisma namespace carries the error classes, `Prisma.sql` and the input/output types.
export { Prisma } from './generated/prisma/client.js';
export type {
  ApiKey,
  CatalogModel,
  IdempotencyKey,
  LedgerEntry,
  RateSnapshot,
  SessionAttachment,
  Settlement,
  VoiceSession,
  Wallet,
} from './generated/prisma/client.js';
