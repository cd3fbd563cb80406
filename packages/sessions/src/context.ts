import type { Bus } from '@s2s/bus';
import type { DbHandle } from '@s2s/db';

/** The part of a pino logger the session verbs use (warnings about work a sweeper will redo). */
export interface SessionsLog {
  warn(obj: object, msg: string): void;
}

/** The `ctx` of every session verb. */
export interface SessionsContext {
  db: DbHandle;
  bus: Bus;
  log?: SessionsLog;
  /** Wall clock of expiry decisions; absent, the verbs use the database's clock where it matters. */
  now?: () => Date;
}

/** A verb that only reads or writes the database. */
export type SessionsDbContext = Pick<SessionsContext, 'db'>;
