import type { Bus } from '@s2s/bus';
import type { DbHandle } from '@s2s/db';
import type { Logger } from '@s2s/telemetry';
import type { Config } from './config.js';

/** What buildApp is made from; main.ts builds the real ones, tests their own. */
export interface AppDeps {
  config: Config;
  db: DbHandle;
  bus: Bus;
  logger: Logger;
  /** Wall clock used for expiry decisions; tests move it forward. */
  now?: () => Date;
}

/** The `ctx` every domain function receives (a SessionsContext too). */
export interface AppContext {
  config: Config;
  db: DbHandle;
  bus: Bus;
  log: Logger;
  now: () => Date;
}

export function createContext(deps: AppDeps): AppContext {
  return {
    config: deps.config,
    db: deps.db,
    bus: deps.bus,
    log: deps.logger,
    now: deps.now ?? (() => new Date()),
  };
}
