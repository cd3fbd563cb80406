import type { CheckpointRoute } from '@s2s/contract';
import { backoffMs, sleep, type Usage } from '@s2s/core';
import type { Logger } from '@s2s/telemetry';
import { Audio, bytesOfPcm16, FormatConverter, type AudioFormat } from '../../audio.js';
import type { AudioFormats, NewItem, ResponseOptions, VoiceSettings } from '../../agent/types.js';
import { FORCE_BEFORE_DEADLINE_MS, historyOf, KeyMap, type ContinuityPolicy } from './continuity.js';
import type { UpstreamError } from './errors.js';
import type { MeteredUpstream, ReplayContext, UpstreamConnection, UpstreamEvent, UpstreamSessionConfig } from './types.js';
import type { UsageMeter } from '../../metering/usage-meter.js';
import { RetainedAudio } from './retained-audio.js';

/** What a connection able to move to a new upstream connection needs (ProviderBase supplies it). */
export interface ContinuitySetup {
  policy: ContinuityPolicy;
  /** The session's settings and conversation now (the relay's). */
  context: () => ReplayContext;
  /** The session's route first, then its failover routes, in order (docs/providers.md, "Failover routes"). */
  routes: ContinuityRoute[];
  /** Called before each attempt with the route's provider (the relay counts upstream reconnects by route). */
  onReconnect?: (provider: string) => void;
  /** Called when the session moved to another route, with its provider (the relay's metrics name it). */
  onRoute?: (provider: string) => void;
}

export interface ContinuityRoute {
  provider: string;
  providerModel: string;
  /** The formats its provider takes (ProviderCapabilities.audioFormats); absent: PCM16 24 kHz only. */
  audioFormats?: readonly AudioFormat[];
  /** One connection attempt whose events come to this connection under a new generation. */
  reopen(config: UpstreamSessionConfig, signal: AbortSignal): Promise<{ connection: UpstreamConnection } | { error: UpstreamError }>;
}

type Request = (c: UpstreamConnection) => void;

const PCM16_ONLY: readonly AudioFormat[] = ['pcm16'];

/**
 * The formats a connection to a provider taking `takes` speaks, for a client speaking `client`: the client's
 * where the provider takes it (its audio then passes through as is), else PCM16 24 kHz, which every provider
 * takes. Each direction on its own.
 */
export function connectionFormats(takes: readonly AudioFormat[], client: Partial<AudioFormats> | undefined): AudioFormats {
  const pick = (f: AudioFormat | undefined): AudioFormat => (f !== undefined && takes.includes(f) ? f : 'pcm16');
  return { input: pick(client?.input), output: pick(client?.output) };
}

/**
 * The adapter's connection with metering in front of it; what ProviderBase.open() returns. With continuity
 * it outlives its upstream connections: at a deadline (the provider's announcement, or `maxConnectionMs`)
 * it moves to a new one at the first quiet moment, and after a loss at once; the new connection gets the
 * settings and the conversation so far, the turn under way and everything asked for meanwhile. The meter
 * is one for all connections, so nothing is counted twice and nothing is lost.
 */
export class UpstreamSession implements MeteredUpstream {
  private connection: UpstreamConnection | null = null;
  /**
   * The connection's audio formats (fixed for its life) and the conversion of the client's input to them:
   * a client's audio passes as it came when it is in the connection's format, else it is converted here,
   * the one place (decisions.md, "Phone audio"). Output goes to the client in the connection's format; the
   * attachment converts it to the client's where they differ.
   */
  private formats: AudioFormats = { input: 'pcm16', output: 'pcm16' };
  private toUpstream = new FormatConverter();
  private generation = 0;
  private closed = false;
  private lastResponseId = '';
  // ---- continuity ----
  private readonly keys = new KeyMap();
  /** The route serving the session now (an index into `continuity.routes`). */
  private route = 0;
  private readonly stop = new AbortController();
  private moving = false;
  private held: Request[] = [];
  private heldBytes = 0;
  /** Input since the last commit (already metered), in the connection's input format: the next connection hears the turn under way again. */
  private readonly uncommitted = new RetainedAudio();
  /** Speech started since the last commit or clear: the whole turn is kept, not only the idle tail. */
  private turnUnderWay = false;
  /** Whether the provider detects turns (server or semantic VAD), read from the settings when they change. */
  private providerDetectsTurns: boolean | null = null;
  /** Session updates sent and not yet answered: sent again to a new connection. */
  private pendingUpdates: VoiceSettings[] = [];
  private responseOpen = false;
  private responseAsked = false;
  private speaking = false;
  /** The new connection hears the turn under way again: its start of speech is not news. */
  private speechRestarts = false;
  private deadline: number | null = null;
  private capTimer: NodeJS.Timeout | null = null;
  private forceTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly provider: string,
    readonly meter: UsageMeter,
    private readonly onEvent: (event: UpstreamEvent) => void,
    private readonly logger: Logger | undefined,
    private readonly continuity: ContinuitySetup | null = null,
  ) {}

  /** Each connect attempt gets a number; events of an abandoned attempt or a left connection are ignored. */
  nextGeneration(): number {
    return ++this.generation;
  }

  /** The first connection, opened with `formats` (connectionFormats). */
  attach(connection: UpstreamConnection, formats: AudioFormats = { input: 'pcm16', output: 'pcm16' }): void {
    this.connection = connection;
    this.formats = formats;
    this.armCap();
  }

  handle(event: UpstreamEvent, generation: number): void {
    if (generation !== this.generation || this.closed) return;
    event = this.keys.in(event);
    switch (event.type) {
      case 'expiring':
        return this.plan(Date.now() + event.timeLeftMs);
      case 'speech_started':
        this.speaking = true;
        this.turnUnderWay = true;
        if (this.speechRestarts) {
          this.speechRestarts = false;
          return;
        }
        break;
      case 'speech_stopped':
        this.speaking = false;
        this.responseAsked = true;
        break;
      case 'input_committed':
        this.uncommitted.clear();
        this.turnUnderWay = false;
        break;
      case 'session_updated':
        this.pendingUpdates.shift();
        this.providerDetectsTurns = null;
        break;
      case 'error':
        if (event.request === 'update_session') this.pendingUpdates.shift();
        if (event.request === 'create_response') this.responseAsked = false;
        // A fatal error comes with the close, which a continuing connection answers by moving.
        if (event.fatal && this.continuity) return this.logger?.warn({ provider: this.provider }, 'upstream failed, moving the session');
        break;
      case 'response_created':
        this.lastResponseId = event.responseId;
        this.meter.responseCreated();
        this.responseOpen = true;
        this.responseAsked = false;
        break;
      case 'audio_delta':
        this.lastResponseId = event.responseId;
        // Real milliseconds, whatever the connection's format (48 bytes of PCM16 or 8 of G.711 are 1 ms).
        this.meter.addOutput(event.audio.pcm16Bytes);
        break;
      case 'response_done':
        this.responseOpen = false;
        this.responseAsked = false;
        this.deliver({ ...event, metered: this.meter.responseDone(event.tokens) });
        return this.quietMoment();
      case 'closed':
        if (event.unexpected) {
          // The answer under way is lost: it is still accounted, and reported as failed.
          this.settleUnreported();
          if (this.continuity) return void this.move('lost');
        }
        this.closed = true;
        this.clearTimers();
        this.uncommitted.clear();
        break;
      default:
        break;
    }
    this.deliver(event);
  }

  appendAudio(audio: Audio): void {
    if (this.closed || !this.connection || audio.bytes === 0) return;
    if (!this.moving) return this.forwardAudio(this.connection, audio);
    if (this.heldBytes + audio.pcm16Bytes > (this.continuity?.policy.maxHeldBytes ?? 0)) {
      this.logger?.warn({ provider: this.provider }, 'input dropped while moving to a new upstream connection');
      return;
    }
    this.heldBytes += audio.pcm16Bytes;
    this.held.push((c) => this.forwardAudio(c, audio));
  }

  commit(): void {
    this.request((c) => c.commit());
  }

  clear(): void {
    this.request((c) => {
      this.uncommitted.clear();
      this.turnUnderWay = false;
      c.clear();
    });
  }

  createResponse(options?: ResponseOptions): void {
    this.request((c) => {
      this.responseAsked = true;
      c.createResponse(options);
    });
  }

  cancelResponse(responseId: string | null, playedMs: number): void {
    this.request((c) => c.cancelResponse(responseId === null ? null : this.keys.outResponse(responseId), playedMs));
  }

  updateSession(settings: VoiceSettings): void {
    // The client's formats are not the connection's business: it keeps those it opened with.
    const { formats: _client, ...upstream } = settings;
    this.request((c) => {
      if (this.continuity) this.pendingUpdates.push(upstream);
      c.updateSession(upstream);
    });
  }

  createItem(key: string, item: NewItem, previousKey: string | null): void {
    this.request((c) => {
      // Audio parts of a created item are input audio like appended audio: metered the same way.
      if (item.type === 'message') for (const part of item.content) if (part.type === 'input_audio') this.meter.addInput(part.pcm.length);
      this.keys.own(key);
      c.createItem(key, this.inConnectionFormat(item), previousKey === null ? null : this.keys.out(previousKey));
    });
  }

  deleteItem(key: string): void {
    this.request((c) => c.deleteItem(this.keys.out(key)));
  }

  truncateItem(key: string, contentIndex: number, audioEndMs: number): void {
    this.request((c) => c.truncateItem(this.keys.out(key), contentIndex, audioEndMs));
  }

  clearOutputAudio(): void {
    this.request((c) => c.clearOutputAudio());
  }

  /** Closes the upstream; an answer cut short is settled at the adapter's ratio before usage() is read. */
  async close(): Promise<void> {
    this.clearTimers();
    this.stop.abort();
    this.uncommitted.clear();
    if (!this.closed) {
      this.closed = true;
      this.meter.settleUnreported();
    }
    await this.connection?.close();
  }

  usage(): Usage {
    return this.meter.usage();
  }

  routes(): CheckpointRoute[] {
    return this.meter.routes();
  }

  // ---- continuity ----

  /** A request goes to the connection, or waits for the next one while the session moves. */
  private request(send: Request): void {
    if (this.closed || !this.connection) return;
    if (this.moving) this.held.push(send);
    else send(this.connection);
  }

  /** A created item's audio parts (PCM16 24 kHz) in the connection's input format. */
  private inConnectionFormat(item: NewItem): NewItem {
    const format = this.formats.input;
    if (format === 'pcm16' || item.type !== 'message' || !item.content.some((p) => p.type === 'input_audio')) return item;
    const content = item.content.map((p) =>
      p.type === 'input_audio' ? { ...p, pcm: new FormatConverter().to(Audio.ofPcm(p.pcm), format).pcm } : p,
    );
    return { ...item, content };
  }

  private forwardAudio(c: UpstreamConnection, audio: Audio): void {
    // What the client sent, in real milliseconds, before any conversion.
    this.meter.addInput(audio.pcm16Bytes);
    const sent = this.toUpstream.to(audio, this.formats.input);
    c.appendAudio(sent);
    if (!this.continuity) return;
    const policy = this.continuity.policy;
    this.providerDetectsTurns ??= this.continuity.context().settings.turnDetection !== null;
    const keep = this.turnUnderWay || !this.providerDetectsTurns ? policy.maxUncommittedBytes : policy.idleUncommittedBytes;
    this.uncommitted.append(sent, bytesOfPcm16(sent.format, keep));
  }

  private armCap(): void {
    const policy = this.continuity?.policy;
    if (!policy || policy.maxConnectionMs <= 0) return;
    if (this.capTimer) clearTimeout(this.capTimer);
    const lead = Math.min(policy.marginMs, policy.maxConnectionMs);
    this.capTimer = setTimeout(() => this.plan(Date.now() + lead), policy.maxConnectionMs - lead);
    this.capTimer.unref();
  }

  /** The connection ends at `deadline`: move at the first quiet moment, at the latest just before it. */
  private plan(deadline: number): void {
    if (!this.continuity || this.moving || this.closed) return;
    if (this.deadline !== null && this.deadline <= deadline) return;
    this.deadline = deadline;
    if (this.forceTimer) clearTimeout(this.forceTimer);
    this.forceTimer = setTimeout(() => void this.move('deadline'), Math.max(0, deadline - Date.now() - FORCE_BEFORE_DEADLINE_MS));
    this.forceTimer.unref();
    this.quietMoment();
  }

  private quietMoment(): void {
    if (this.deadline !== null && !this.responseOpen && !this.responseAsked) void this.move('deadline');
  }

  /** A response the provider will never report on: billed at the adapter's ratio, reported failed. */
  private settleUnreported(): void {
    const unreported = this.meter.settleUnreported();
    this.responseOpen = false;
    this.responseAsked = false;
    if (unreported)
      this.deliver({ type: 'response_done', responseId: this.lastResponseId, status: 'failed', tokens: null, metered: unreported });
  }

  /**
   * Moves the session to a new upstream connection: the settings and conversation as they are now, then
   * the updates still unanswered, the turn under way and the requests held meanwhile, in order. When no
   * attempt succeeds: a fatal error and an unexpected close, as for any lost upstream.
   */
  private async move(reason: 'deadline' | 'lost'): Promise<void> {
    const setup = this.continuity;
    if (!setup || this.moving || this.closed) return;
    this.moving = true;
    this.clearTimers();
    const old = this.connection!;
    // Forced at the deadline with an answer still under way: it is cut, billed by ratio.
    if (reason === 'deadline' && this.responseOpen) this.settleUnreported();
    const context = setup.context();
    const { history, keys } = historyOf(context);
    this.logger?.info(
      { provider: this.provider, reason, items: history.length, routes: setup.routes.map((r) => r.provider) },
      'moving the session to a new upstream connection',
    );
    let next: UpstreamConnection | null = null;
    let nextFormats = this.formats;
    let lastError: UpstreamError | undefined;
    // The session's route first; when it cannot be re-established, the next failover route, and so on.
    for (let r = this.route; r < setup.routes.length && !next && !this.closed; r++) {
      const route = setup.routes[r]!;
      const formats = connectionFormats(route.audioFormats ?? PCM16_ONLY, context.settings.formats);
      const config: UpstreamSessionConfig = { ...context.settings, formats, providerModel: route.providerModel, history };
      for (let attempt = 0; attempt < setup.policy.attempts && !this.closed; attempt++) {
        if (attempt > 0 && !(await sleep(backoffMs(attempt, setup.policy.backoffMs, 5000), { signal: this.stop.signal }))) break;
        setup.onReconnect?.(route.provider);
        const outcome = await route.reopen(config, this.stop.signal);
        if ('connection' in outcome) {
          next = outcome.connection;
          nextFormats = formats;
          if (r !== this.route) {
            this.logger?.warn({ from: setup.routes[this.route]!.provider, to: route.provider }, 'session failed over to the next route');
            // What the new connection serves is the next route's part (the old one's is closed here).
            this.meter.useRoute({ provider: route.provider, provider_model: route.providerModel });
            setup.onRoute?.(route.provider);
          }
          this.route = r;
          break;
        }
        lastError = outcome.error;
        this.logger?.warn({ provider: route.provider, attempt: attempt + 1, kind: lastError.kind }, 'upstream reconnect failed');
        if (lastError.permanent) break;
      }
    }
    // The old connection is no longer heard (its generation is past); at a deadline it is still open.
    if (reason === 'deadline') void old.close().catch(() => {});
    if (this.closed) {
      if (next) void next.close().catch(() => {});
      return;
    }
    if (!next) {
      this.logger?.warn({ provider: this.provider, kind: lastError?.kind ?? 'aborted' }, 'upstream could not be re-established');
      this.closed = true;
      this.moving = false;
      this.uncommitted.clear();
      this.deliver({ type: 'error', message: `provider ${this.provider} could not be reached again`, fatal: true });
      this.deliver({ type: 'closed', unexpected: true });
      return;
    }
    this.logger?.info({ provider: setup.routes[this.route]!.provider, reason }, 'session moved to a new upstream connection');
    this.keys.next(keys);
    this.connection = next;
    this.deadline = null;
    this.speechRestarts = this.speaking;
    this.speaking = false;
    for (const update of this.pendingUpdates) next.updateSession(update);
    this.replayUncommitted(next, nextFormats);
    const held = this.held;
    this.held = [];
    this.heldBytes = 0;
    this.moving = false;
    for (const send of held) send(next);
    this.armCap();
  }

  /**
   * The new connection hears the turn under way again, in its own input format: the retained audio is
   * converted when the formats differ (a failover from an OpenAI-protocol route taking G.711 to one taking
   * PCM16 only, or back), and kept in the new format; the client's audio from here on goes through the same
   * converter, so the stream stays continuous. Exact lengths: no millisecond gained or lost. Not metered again.
   */
  private replayUncommitted(next: UpstreamConnection, formats: AudioFormats): void {
    const converter = new FormatConverter();
    const retained = this.uncommitted.chunks();
    const changed = formats.input !== this.formats.input;
    if (changed) this.uncommitted.clear();
    for (const chunk of retained) {
      const audio = converter.to(chunk, formats.input);
      if (changed) this.uncommitted.append(audio, Number.MAX_SAFE_INTEGER);
      next.appendAudio(audio);
    }
    if (!changed) return;
    this.formats = formats;
    this.toUpstream = converter;
  }

  private clearTimers(): void {
    if (this.capTimer) clearTimeout(this.capTimer);
    if (this.forceTimer) clearTimeout(this.forceTimer);
    this.capTimer = null;
    this.forceTimer = null;
  }

  private deliver(event: UpstreamEvent): void {
    try {
      this.onEvent(event);
    } catch (err) {
      // A failing handler must not break the upstream socket's dispatch; without a logger it surfaces.
      if (!this.logger)
        queueMicrotask(() => {
          throw err;
        });
      else this.logger.error({ provider: this.provider, err, event_type: event.type }, 'upstream event handler failed');
    }
  }
}
