import type { Bus } from '@s2s/bus';
import type { SessionRecord, Usage } from '@s2s/core';
import type { DbHandle } from '@s2s/db';
import type { Logger } from '@s2s/telemetry';
import type { WebSocket } from 'ws';
import type { Checkpointer } from '../metering/checkpoints.js';
import type { ClientCodec, InternalClientEvent, Refusal } from '../codecs/events.js';
import type { Config } from '../config.js';
import type { Dialect } from '../codecs/index.js';
import type { AttachmentTelemetry, RelayTelemetry, UpgradeTelemetry } from '../telemetry.js';
import type { UpstreamOpener } from '../upstream/opener.js';

/** What every attachment of one relay process shares. */
/** `A` is the attachment type; a parameter, so this module need not import attachment.ts (no cycle). */
export interface AttachmentContext<A = unknown> {
  config: Config;
  db: DbHandle;
  bus: Bus;
  logger: Logger;
  providers: UpstreamOpener;
  checkpoints: Checkpointer;
  codec: ClientCodec;
  /** Spans and metrics (telemetry.ts). */
  telemetry: RelayTelemetry;
  /** Called once the attachment is fully finished (final checkpoint published, socket closed). */
  onFinished(a: A): void;
}

export interface AttachmentInit {
  ws: WebSocket;
  session: SessionRecord;
  attachmentId: string;
  startedAt: Date;
  prior: Usage;
  /** The session ends (client_closed) when this socket closes: the legacy alias, client-secret sessions. */
  legacy: boolean;
  /** The wire dialect negotiated before the upgrade; the client codec is chosen by it. */
  dialect: Dialect;
  /** A phone stream's id, from its start message. */
  streamId?: string;
  requestId: string;
  /**
   * The session's opening settings kept with its client secret (`initialSettings`), in the neutral model, or
   * the codec's refusal of them: staged at attach like a first session.update.
   */
  initial?: Extract<InternalClientEvent, { type: 'session.update' }> | Refusal | undefined;
  /** The upgrade request's span, which the attachment's span links to. */
  upgrade?: UpgradeTelemetry;
}

export type { AttachmentTelemetry };
