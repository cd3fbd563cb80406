import { checkpointRoutes, compactRoutes, type CheckpointRoute, type UsageCheckpoint } from './bus.js';
import type { USAGE_COUNTER_NAMES } from './http.js';

/** The counters a checkpoint carries as its totals. */
export type CheckpointCounters = Pick<UsageCheckpoint, (typeof USAGE_COUNTER_NAMES)[number]>;

/**
 * The one encoder of usage checkpoints (version 4): the JSON that JSON.stringify of the message gives, key for
 * key, built from an attachment's ids (encoded once) and each checkpoint's counters, with no message object;
 * a single route's JSON is reused while the route stays (the relay publishes several a second per attachment).
 * Its decoder is `fastUsageCheckpoint`; both are property-tested against the `UsageCheckpoint` schema.
 */
export class UsageCheckpointEncoder {
  /** `{"type":…,"version":4,"session_id":…,"attachment_id":…,"relay_id":…,"seq":` */
  private readonly head: string;
  private routeJson = '';
  private routeProvider = '';
  private routeModel = '';

  constructor(ids: Pick<UsageCheckpoint, 'session_id' | 'attachment_id' | 'relay_id'>) {
    this.head =
      `{"type":"usage.checkpoint","version":4,"session_id":${JSON.stringify(ids.session_id)},` +
      `"attachment_id":${JSON.stringify(ids.attachment_id)},"relay_id":${JSON.stringify(ids.relay_id)},"seq":`;
  }

  /** Checkpoint `seq` with totals `u`, split by `routes` (null: unknown). */
  encode(seq: number, u: CheckpointCounters, routes: readonly CheckpointRoute[] | null, final: boolean, emittedAt: number): string {
    return (
      `${this.head}${seq},"audio_in_ms":${u.audio_in_ms},"audio_out_ms":${u.audio_out_ms},` +
      `"input_audio_tokens":${u.input_audio_tokens},"input_text_tokens":${u.input_text_tokens},` +
      `"cached_input_tokens":${u.cached_input_tokens},"output_audio_tokens":${u.output_audio_tokens},` +
      `"output_text_tokens":${u.output_text_tokens},"transcribed_ms":${u.transcribed_ms},` +
      `"routes":${this.routesJson(routes)},"final":${final},"emitted_at":${emittedAt}}`
    );
  }

  private routesJson(routes: readonly CheckpointRoute[] | null): string {
    if (routes === null) return 'null';
    const only = routes.length === 1 ? routes[0] : undefined;
    if (!only) return JSON.stringify(compactRoutes(routes));
    if (only.provider !== this.routeProvider || only.provider_model !== this.routeModel || this.routeJson === '') {
      this.routeProvider = only.provider;
      this.routeModel = only.provider_model;
      this.routeJson = JSON.stringify(compactRoutes([only]));
    }
    return this.routeJson;
  }
}

/** One checkpoint message as its JSON (UsageCheckpointEncoder, for a checkpoint already made as a message). */
export function encodeUsageCheckpoint(c: UsageCheckpoint): string {
  return new UsageCheckpointEncoder(c).encode(c.seq, c, checkpointRoutes(c), c.final, c.emitted_at);
}
