// Prisma Client over a process's pool, for the statements it fits (the operator API's reads and writes, the
// console's listings); the hot statements stay hand-written SQL on the pool. A separate entry point, so a
// process that never uses Prisma (relay, billing, edge) never loads it.
import { PrismaPg } from '@prisma/adapter-pg';
import { RATE_FIELDS, USAGE_COUNTERS, type Usage, type UsageCounter } from '@s2s/core';
import type { DbHandle } from './client.js';
import { PrismaClient, type Prisma } from './generated/prisma/client.js';

/** The Prisma client of the gateway's database. */
export type Db = PrismaClient;
/** The client handed to an interactive `$transaction` callback. */
export type DbTx = Prisma.TransactionClient;
/** What a domain function that can run inside or outside a transaction accepts. */
export type DbOrTx = Db | DbTx;

const clients = new WeakMap<DbHandle, Db>();

/**
 * The Prisma client of `db`, made on first use: it runs over `db.pool` (PrismaPg given the pool itself opens
 * no connection of its own and leaves the pool open on $disconnect), so `db.close()` ends both.
 */
export function prismaOf(db: DbHandle): Db {
  let prisma = clients.get(db);
  if (!prisma) {
    prisma = new PrismaClient({ adapter: new PrismaPg(db.pool) });
    clients.set(db, prisma);
  }
  return prisma;
}

/**
 * A bigint column as a number: every amount the gateway stores is at most 2^53 - 1 (docs/architecture.md
 * "Amounts"), so this is exact; a larger one throws instead of rounding silently (as `parseInt8` keeps it a BigInt).
 */
export function exactNumber(v: bigint): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new RangeError(`${v} is beyond the exact range of a number`);
  return n;
}

type Camel<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;
/** A usage counter's Prisma field (`audio_in_ms` → `audioInMs`), the same on every model that keeps usage. */
export type UsageField = Camel<UsageCounter>;
const usageFieldOf = (c: UsageCounter) => c.replace(/_([a-z])/g, (_, x: string) => x.toUpperCase()) as UsageField;

/** `select` of every usage counter (voice_sessions, session_attachments, settlements). */
export const USAGE_SELECT = Object.freeze(Object.fromEntries(USAGE_COUNTERS.map((c) => [usageFieldOf(c), true]))) as Readonly<
  Record<UsageField, true>
>;

/** The counters of a row selected with USAGE_SELECT, as numbers. */
export function usageOfRow(row: Record<UsageField, bigint>): Usage {
  return Object.fromEntries(USAGE_COUNTERS.map((c) => [c, exactNumber(row[usageFieldOf(c)])])) as Record<UsageCounter, number>;
}

type RateField = (typeof RATE_FIELDS)[number];
/** A rate's Prisma field (`per_minute` → `perMinute`) on rate_snapshots. */
export type RateColumn = Camel<RateField>;
const rateColumnOf = (f: RateField) => f.replace(/_([a-z])/g, (_, x: string) => x.toUpperCase()) as RateColumn;

/** The rate of a rate snapshot row, as numbers. */
export function rateOfRow(row: Record<RateColumn, bigint>): Record<RateField, number> {
  return Object.fromEntries(RATE_FIELDS.map((f) => [f, exactNumber(row[rateColumnOf(f)])])) as Record<RateField, number>;
}

/** A rate as rate snapshot columns, to write. */
export function rateData(rate: Record<RateField, number>): Record<RateColumn, bigint> {
  return Object.fromEntries(RATE_FIELDS.map((f) => [rateColumnOf(f), BigInt(rate[f])])) as Record<RateColumn, bigint>;
}

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
