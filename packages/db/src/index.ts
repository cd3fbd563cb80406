// Public surface of @s2s/db. Prisma Client lives in '@s2s/db/prisma', test helpers in '@s2s/db/testing'.
export { createDb, type CreateDbOptions, type DbHandle, type PreparedStatements } from './client.js';
export { isRetryable, isRetryableDbError, isStoreUnavailableError } from './errors.js';
export { withTransaction, type DbContext, type Sql } from './sql.js';
export { sqlStatement, type Statement, type StatementSpec } from './statement.js';
export { rateColumns, rateFromRow, rateRowShape, usageColumns, usageFromRow, usageRowShape, usageSums } from './usage-sql.js';
export { databaseNameOf, ensureDatabase, migrate, MIGRATIONS_DIR } from './migrate.js';
