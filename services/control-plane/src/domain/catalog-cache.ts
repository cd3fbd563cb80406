import { createHash } from 'node:crypto';
import type { Bus, Subscription } from '@s2s/bus';
import { CatalogChanged } from '@s2s/contract';
import type { Logger } from '@s2s/telemetry';

/** What the cache needs: the bus it announces and hears changes on, and the read of the public catalog. */
export interface CatalogCacheDeps {
  bus: Bus;
  log: Logger;
  /** The listed models as GET /v1/models answers them (`listModels`). */
  load: () => Promise<unknown>;
}

/** The public catalog as served: the JSON body once serialized, and its ETag. */
export interface CatalogBody {
  body: Buffer;
  etag: string;
}

export interface CatalogCache {
  /** The catalog to serve: from memory, or loaded once when nothing valid is held. */
  get(): Promise<CatalogBody>;
  /** The catalog held in memory and still valid, if any (no load). */
  peek(): CatalogBody | undefined;
  /** This process changed the catalog: forget what is held, and tell every other control plane. */
  changed(modelId: string): void;
  /** Stops the periodic refresh and the bus subscription. */
  close(): void;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * GET /v1/models from memory (docs/architecture.md, "The catalog cache"). Every change an operator makes goes
 * through `changed`, which drops the held body here and publishes `catalog.changed`; other control planes drop
 * theirs on receipt. A periodic reload every CATALOG_REFRESH_MS bounds staleness when that message is lost.
 * A generation counter makes a load that began before a change unable to install its (older) result.
 */
export function createCatalogCache(ctx: CatalogCacheDeps, refreshMs: number): CatalogCache {
  let generation = 0;
  let held: (CatalogBody & { generation: number }) | undefined;
  let loading: { generation: number; promise: Promise<CatalogBody> } | undefined;

  function load(): Promise<CatalogBody> {
    const gen = generation;
    if (loading?.generation === gen) return loading.promise;
    const promise = ctx.load().then((list) => {
      const body = Buffer.from(JSON.stringify(list));
      const loaded = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`, generation: gen };
      if (gen === generation) held = loaded;
      return loaded;
    });
    const entry = { generation: gen, promise };
    loading = entry;
    const clear = () => {
      if (loading === entry) loading = undefined;
    };
    promise.then(clear, clear);
    return promise;
  }

  function invalidate(): void {
    generation++;
    held = undefined;
  }

  // Started on first use, so a context made only to seed the catalog holds no timer; ends with the bus.
  let started: { subscription: Subscription | undefined; timer: NodeJS.Timeout } | undefined;
  function start(): void {
    if (started || ctx.bus.nc.isClosed()) return;
    // A background reload serves the held body meanwhile; a failed one keeps it (the store is down).
    const timer = setInterval(() => {
      load().catch((err: unknown) => ctx.log.warn({ err }, 'catalog refresh failed; serving the catalog held'));
    }, refreshMs);
    timer.unref();
    started = { subscription: subscribeChanges(ctx.bus, ctx.log, invalidate), timer };
    void ctx.bus.nc.closed().then(close);
  }
  function close(): void {
    if (!started) return;
    clearInterval(started.timer);
    started.subscription?.unsubscribe();
  }

  return {
    get() {
      start();
      return held !== undefined && held.generation === generation ? Promise.resolve(held) : load();
    },
    peek() {
      start();
      return held !== undefined && held.generation === generation ? held : undefined;
    },
    changed(modelId) {
      start();
      invalidate();
      const message: CatalogChanged = { type: 'catalog.changed', version: 1, model_id: modelId, changed_at: Date.now() };
      try {
        ctx.bus.nc.publish(ctx.bus.subjects.catalogChanged, encoder.encode(JSON.stringify(message)));
      } catch (err) {
        // The bus is closed or down: the other control planes see the change at their next periodic reload.
        ctx.log.warn({ err, model_id: modelId }, 'catalog change not announced on the bus');
      }
    },
    close,
  };
}

function subscribeChanges(bus: Bus, log: Logger, invalidate: () => void): Subscription | undefined {
  try {
    return bus.nc.subscribe(bus.subjects.catalogChanged, {
      callback: (err, msg) => {
        if (err) return;
        let parsed;
        try {
          parsed = CatalogChanged.safeParse(JSON.parse(decoder.decode(msg.data)));
        } catch {
          parsed = undefined;
        }
        // Even a message this version cannot read says the catalog changed.
        if (!parsed?.success) log.warn({ subject: msg.subject }, 'unreadable catalog.changed message; reloading anyway');
        invalidate();
      },
    });
  } catch (err) {
    log.warn({ err }, 'catalog changes from other control planes arrive only by the periodic reload');
    return undefined;
  }
}
