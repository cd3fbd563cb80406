// What bench/billing drives in-process (the package's "./bench" export): the consumer's decode, fold and store
// steps timed apart from NATS and HTTP. Not an API for other services; keep it to what a benchmark names.
export { loadConfig } from './config.js';
export { billingDecoder, DURABLE_NAME, ensureBillingConsumer } from './consumer.js';
export { foldCheckpoints } from './fold.js';
export { newCounters } from './handlers/context.js';
export { settleSession } from './settle.js';
export { sortedForStore, storeCheckpoints, UPSERT_ATTACHMENTS_SQL, upsertParameters } from './usage-store.js';
