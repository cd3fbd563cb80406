import type { Bus } from '@s2s/bus';
import type { DbHandle } from '@s2s/db';
import { disabledMetrics, type Logger, type Metrics } from '@s2s/telemetry';
import type { Config } from './config.js';
import { listModels } from './domain/catalog.js';
import { createCatalogCache, type CatalogCache } from './domain/catalog-cache.js';
import { ControlPlaneTelemetry } from './telemetry.js';

/** What buildApp is made from; main.ts builds the real ones, tests their own. */
export interface AppDeps {
  config: Config;
  db: DbHandle;
  bus: Bus;
  logger: Logger;
  /** Wall clock used for expiry decisions; tests move it forward. */
  now?: () => Date;
  /** The process's metrics (startTelemetry().metrics), served at /metrics; none recorded when absent. */
  metrics?: Metrics;
}

/** The `ctx` every domain function receives (a SessionsContext too). */
export interface AppContext {
  config: Config;
  db: DbHandle;
  bus: Bus;
  log: Logger;
  now: () => Date;
  metrics: Metrics;
  telemetry: ControlPlaneTelemetry;
  /** The public catalog served from memory (GET /v1/models), reloaded on every operator change. */
  catalog: CatalogCache;
}

export function createContext(deps: AppDeps): AppContext {
  const metrics = deps.metrics ?? disabledMetrics();
  const { db, bus } = deps;
  return {
    db,
    bus,
    log: deps.logger,
    config: deps.config,
    now: deps.now ?? (() => new Date()),
    metrics,
    telemetry: new ControlPlaneTelemetry(metrics.meter),
    catalog: createCatalogCache({ bus, log: deps.logger, load: () => listModels({ ctx: { db } }) }, deps.config.CATALOG_REFRESH_MS),
  };
}
