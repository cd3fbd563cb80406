import type { NatsConnection } from '@s2s/bus';
import type { DbHandle } from '@s2s/db';

/**
 * Since when a dependency has been reachable without a break, as this process saw it (undefined: down
 * now). The lease rule and the live-relay wait bound never count an outage billing saw against a relay.
 */
export interface Availability {
  upSince(): Date | undefined;
  stop(): void;
}

/** Up for how long at `now` (0 while down). */
export function upForMs(a: Availability, now: Date): number {
  const since = a.upSince();
  return since === undefined ? 0 : Math.max(0, now.getTime() - since.getTime());
}

/**
 * Probes the store every `intervalMs` (`SELECT 1`, bounded by the interval). A failed probe, or a gap of
 * more than two intervals between answers (a hung connection), starts a new up period at the next answer.
 */
export function watchStore(db: DbHandle, intervalMs: number, clock: () => Date = () => new Date()): Availability {
  let since: Date | undefined = clock();
  let lastOk = clock().getTime();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const probe = async () => {
    const started = clock().getTime();
    try {
      await withTimeout(db.pool.query('SELECT 1'), intervalMs);
      const now = clock();
      if (since === undefined || now.getTime() - lastOk > 2 * intervalMs) since = new Date(started);
      lastOk = now.getTime();
    } catch {
      since = undefined;
    }
    if (!stopped) timer = setTimeout(() => void probe(), intervalMs);
  };
  timer = setTimeout(() => void probe(), intervalMs);
  return {
    upSince: () => (since !== undefined && clock().getTime() - lastOk > 2 * intervalMs ? undefined : since),
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/** Follows the bus connection's status: a disconnect ends the up period, a reconnect starts one. */
export function watchBus(nc: NatsConnection, clock: () => Date = () => new Date()): Availability {
  let since: Date | undefined = clock();
  let stopped = false;
  void (async () => {
    for await (const s of nc.status()) {
      if (stopped) return;
      if (s.type === 'disconnect') since = undefined;
      else if (s.type === 'reconnect') since = clock();
    }
  })().catch(() => undefined);
  return {
    upSince: () => (nc.isClosed() ? undefined : since),
    stop() {
      stopped = true;
    },
  };
}

/** Always up since `at`: for tests and for a process that cannot see outages any other way. */
export function upSince(at: Date): Availability {
  return { upSince: () => at, stop: () => undefined };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('probe timed out')), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
