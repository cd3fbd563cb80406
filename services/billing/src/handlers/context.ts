import type { Bus } from '@s2s/bus';
import type { DbHandle } from '@s2s/db';
import type { Logger } from '@s2s/telemetry';
import type { Availability } from '../availability.js';
import type { BillingTelemetry } from '../telemetry.js';

/** Counters of billing's handlers; logged, and read by tests and the benchmark. */
export interface BillingCounters {
  checkpoints: number;
  /** Attachments whose stored counters moved forward. */
  advanced: number;
  settled: number;
  /** Settlements on the bound of the wait for a live relay's final checkpoint (its usage may be short). */
  settledOnLiveBound: number;
  /** Checkpoints of already-settled sessions: usage that can no longer be billed. */
  lateCheckpoints: number;
  lateAudioMs: number;
  unknownSession: number;
  unknownVersion: number;
  /** Attachments advanced by reading the stream before a settlement on an end request. */
  recovered: number;
}

export function newCounters(): BillingCounters {
  return {
    checkpoints: 0,
    advanced: 0,
    settled: 0,
    settledOnLiveBound: 0,
    lateCheckpoints: 0,
    lateAudioMs: 0,
    unknownSession: 0,
    unknownVersion: 0,
    recovered: 0,
  };
}

/**
 * Crash points for the fault tests, passed in by a test's own entry point (never read from config):
 * each runs right after its commit, before anything is published or acknowledged.
 */
export interface BillingFaults {
  afterFoldCommit?(): void;
  afterSettleCommit?(): void;
}

/** What the end-request wait needs to know (config values, named once in config.ts). */
export interface EndWaitSettings {
  graceMs: number;
  liveMaxWaitMs: number;
  leaseTtlMs: number;
  maxDeliver: number;
  /** Backoff of a settlement announcement that could not be published. */
  retryBaseMs: number;
  retryMaxMs: number;
}

/** The `ctx` of billing's handlers. */
export interface BillingContext {
  db: DbHandle;
  bus: Bus;
  log: Logger;
  now: () => Date;
  counters: BillingCounters;
  endWait: EndWaitSettings;
  /** This process's view of the store's and the bus's outages (the lease rule and the live wait bound). */
  store: Availability;
  busLink: Availability;
  telemetry: BillingTelemetry;
  faults?: BillingFaults;
}
