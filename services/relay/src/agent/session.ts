import type { RealtimeErrorCode } from '@s2s/contract';
import { checkNewItem, checkResponseOptions, checkSessionUpdate, resolveHints } from './checks.js';
import { applySettings, DEFAULT_SETTINGS, type AgentLimits, type EffectiveSettings, type ItemBody, type VoiceSettings } from './types.js';
import type { InternalClientEvent, InternalServerEvent, OutputPlace, Refusal } from '../codecs/events.js';
import { Conversation } from './conversation.js';
import type { ProviderCapabilities, ReplayContext, UpstreamConnection, UpstreamEvent } from '../providers/shared/types.js';

type AgentClientEvent = Extract<
  InternalClientEvent,
  { type: 'session.update' | 'response.create' | 'item.create' | 'item.delete' | 'item.retrieve' | 'item.truncate' | 'output.clear' }
>;
type AgentUpstreamEvent = Exclude<
  UpstreamEvent,
  {
    type:
      | 'speech_started'
      | 'speech_stopped'
      | 'response_created'
      | 'audio_delta'
      | 'audio_done'
      | 'response_done'
      | 'error'
      | 'expiring'
      | 'closed';
  }
>;

export interface AgentSessionDeps {
  send(e: InternalServerEvent): void;
  refuse(code: RealtimeErrorCode, message: string, clientEventId: string | undefined, param?: string): void;
  /** Our response id for an upstream one (the response tracker's). */
  responseId(upstreamId: string): string;
}

/**
 * The voice-agent half of an attachment, without I/O: the session's settings (effective and requested),
 * its conversation, and the routing of settings, items and output events between the client's internal
 * events and the upstream interface. Every check happens before anything is forwarded: a refused event
 * reaches neither the provider nor the bill. Audio, turns and budget stay with the attachment.
 */
export class AgentSession {
  readonly conversation: Conversation;
  private effective: EffectiveSettings = { ...DEFAULT_SETTINGS };
  /** What the client asked for so far: a new upstream opens with it. */
  private requested: VoiceSettings = {};
  /** Updates sent upstream, oldest first, waiting for session_updated or a refusal. */
  private pendingUpdates: { update: VoiceSettings; eventId: string | undefined }[] = [];
  /** Client items sent upstream and not yet confirmed, oldest first. */
  private pendingCreates: { id: string; eventId: string | undefined }[] = [];
  private audioOutSeen = false;
  /** Audio deltas come in runs: the last key and its place. */
  private lastAudio: { upstreamResponse: string; key: string; place: OutputPlace } | null = null;

  constructor(
    private readonly can: Readonly<ProviderCapabilities>,
    private readonly limits: AgentLimits,
    private readonly deps: AgentSessionDeps,
  ) {
    this.conversation = new Conversation(limits.maxItems);
  }

  /** The settings a new upstream opens with. */
  opening(): VoiceSettings {
    return this.requested;
  }

  settings(): Readonly<EffectiveSettings> {
    return this.effective;
  }

  /** What a new upstream connection of this session is seeded with (continuity): settings in force, the conversation. */
  replayContext(): ReplayContext {
    const { voice, parallelToolCalls, ...rest } = this.effective;
    return {
      settings: { ...rest, ...(voice !== null ? { voice } : {}), ...(parallelToolCalls !== null ? { parallelToolCalls } : {}) },
      items: this.conversation.entries(),
    };
  }

  /**
   * A session.update before the upstream opened: checked, then part of the opening configuration
   * (session.updated follows once the upstream accepted it: `opened()`). False when refused.
   */
  stageOpening(e: Extract<InternalClientEvent, { type: 'session.update' }>): boolean {
    const bad = this.stage(e.update);
    if (bad) this.deps.refuse(bad.code, bad.message, e.eventId, bad.param);
    return bad === null;
  }

  /** Checks and stages opening settings without answering; the problem or null. */
  private stage(update: VoiceSettings): { code: RealtimeErrorCode; message: string; param: string } | null {
    const bad = checkSessionUpdate(update, this.limits, this.can);
    if (bad) return bad;
    const { upstream, effective } = resolveHints(update, this.can);
    this.requested = { ...this.requested, ...upstream };
    this.effective = applySettings(this.effective, effective);
    return null;
  }

  /**
   * A client secret's settings (or the codec's refusal of them) open the session like a first session.update,
   * before session.created shows them (no session.updated); the error event when refused, the defaults staying.
   */
  stageInitial(initial: Extract<InternalClientEvent, { type: 'session.update' }> | Refusal | undefined): InternalServerEvent | null {
    if (initial === undefined) return null;
    if (initial.type === 'refusal') return { type: 'error', code: initial.code, message: initial.message, wireParam: initial.wireParam };
    const bad = this.stage(initial.update);
    return bad && { type: 'error', code: bad.code, message: bad.message, param: bad.param };
  }

  /** The upstream opened with `opening()`: the staged settings are in force. */
  opened(hadStagedUpdate: boolean): void {
    if (hadStagedUpdate) this.deps.send({ type: 'session.updated', settings: this.effective });
  }

  isAgentEvent(e: InternalClientEvent): e is AgentClientEvent {
    return (
      e.type === 'session.update' ||
      e.type === 'response.create' ||
      e.type === 'item.create' ||
      e.type === 'item.delete' ||
      e.type === 'item.retrieve' ||
      e.type === 'item.truncate' ||
      e.type === 'output.clear'
    );
  }

  /** Routes one client event; false when it was refused (no response is to be expected from it). */
  handle(e: AgentClientEvent, up: UpstreamConnection): boolean {
    const { deps } = this;
    switch (e.type) {
      case 'session.update': {
        if (onlyFormats(e.update)) {
          // The client's audio formats are the codec's alone: confirmed here, the provider is not asked.
          this.requested = { ...this.requested, ...e.update };
          this.effective = applySettings(this.effective, e.update);
          deps.send({ type: 'session.updated', settings: this.effective });
          return true;
        }
        const bad = checkSessionUpdate(e.update, this.limits, this.can) ?? this.lockedField(e.update);
        if (bad) return this.refused(bad, e.eventId);
        const { upstream, effective } = resolveHints(e.update, this.can);
        this.requested = { ...this.requested, ...upstream };
        this.pendingUpdates.push({ update: effective, eventId: e.eventId });
        up.updateSession(upstream);
        return true;
      }
      case 'response.create': {
        if (e.options) {
          const bad = checkResponseOptions(e.options, this.limits, this.can);
          if (bad) return this.refused(bad, e.eventId);
        }
        up.createResponse(e.options);
        return true;
      }
      case 'item.create': {
        const bad = checkNewItem(e.item, this.limits, this.can);
        if (bad) return this.refused(bad, e.eventId);
        const r = this.conversation.create(e.item, e.previousItemId);
        if (!r.ok) return this.refused(r, e.eventId);
        this.pendingCreates.push({ id: r.id, eventId: e.eventId });
        up.createItem(r.key, e.item, r.previousKey);
        return true;
      }
      case 'item.delete': {
        if (!this.can.itemDelete) return this.refused(unsupported('itemId', 'Deleting items'), e.eventId);
        const r = this.conversation.keyFor(e.itemId);
        if (!r.ok) return this.refused(r, e.eventId);
        up.deleteItem(r.key);
        return true;
      }
      case 'item.truncate': {
        if (!this.can.itemTruncate) return this.refused(unsupported('itemId', 'Truncating items'), e.eventId);
        const r = this.conversation.checkTruncate(e.itemId, e.contentIndex);
        if (!r.ok) return this.refused(r, e.eventId);
        up.truncateItem(r.key, e.contentIndex, e.audioEndMs);
        return true;
      }
      case 'item.retrieve': {
        const item = this.conversation.retrieve(e.itemId);
        if (!item)
          return this.refused({ code: 'item_not_found', param: 'itemId', message: `No item ${e.itemId} in this conversation.` }, e.eventId);
        deps.send({ type: 'item.retrieved', item });
        return true;
      }
      case 'output.clear':
        up.clearOutputAudio();
        return true;
    }
  }

  /** A setting the provider cannot change now. */
  private lockedField(update: VoiceSettings): { code: 'unsupported_parameter'; param: string; message: string } | null {
    if (!this.can.sessionUpdate) {
      return {
        code: 'unsupported_parameter',
        param: 'session',
        message: "This session's model takes its settings only before the first input: send session.update first.",
      };
    }
    if (update.voice !== undefined && update.voice !== this.effective.voice && this.audioOutSeen && !this.can.voiceChangeAfterAudio) {
      return {
        code: 'unsupported_parameter',
        param: 'session.voice',
        message: "The voice cannot change after the model's first audio output in this session.",
      };
    }
    return null;
  }

  private refused(r: { code: RealtimeErrorCode; param: string; message: string }, eventId: string | undefined): false {
    this.deps.refuse(r.code, r.message, eventId, r.param);
    return false;
  }

  /**
   * An upstream refusal of one of our requests: the request it answers fails with an error that names
   * the client's event. True when it was such a refusal.
   */
  upstreamRefused(e: Extract<UpstreamEvent, { type: 'error' }>): boolean {
    if (e.request === 'update_session') {
      const p = this.pendingUpdates.shift();
      const param = e.param !== undefined ? `session.${e.param}` : 'session';
      this.deps.refuse('upstream_refused', 'The model refused this session update; the settings are unchanged.', p?.eventId, param);
      return true;
    }
    if (e.request === 'create_item') {
      const p = this.pendingCreates.shift();
      if (p) this.conversation.refused(p.id);
      this.deps.refuse('upstream_refused', 'The model refused this item.', p?.eventId, 'item');
      return true;
    }
    if (e.request === 'delete_item' || e.request === 'truncate_item') {
      this.deps.refuse('upstream_refused', 'The model refused this item request.', undefined, 'itemId');
      return true;
    }
    return false;
  }

  /** Where an output audio delta goes (its item made on first sight when the adapter names none). */
  audioPlace(e: Extract<UpstreamEvent, { type: 'audio_delta' | 'audio_done' }>): OutputPlace {
    this.audioOutSeen = true;
    const key = e.itemKey ?? `${e.responseId}/audio`;
    const last = this.lastAudio;
    if (last !== null && last.key === key && last.upstreamResponse === e.responseId) return last.place;
    let itemId = this.conversation.idOf(key);
    if (itemId === undefined) {
      itemId = this.conversation.upsert(key, null, {
        type: 'message',
        role: 'assistant',
        status: 'in_progress',
        content: [{ type: 'output_audio', transcript: null }],
      }).item.id;
    }
    const place: OutputPlace = {
      responseId: this.deps.responseId(e.responseId),
      itemId,
      outputIndex: e.outputIndex ?? 0,
      contentIndex: e.contentIndex ?? 0,
    };
    this.lastAudio = { upstreamResponse: e.responseId, key, place };
    return place;
  }

  isAgentUpstreamEvent(e: UpstreamEvent): e is AgentUpstreamEvent {
    return !NOT_AGENT.has(e.type);
  }

  /** Routes one upstream event of the voice-agent model to the client, with gateway ids. */
  upstream(e: AgentUpstreamEvent): void {
    const { deps, conversation: c } = this;
    switch (e.type) {
      case 'session_updated': {
        const p = this.pendingUpdates.shift();
        if (p) this.effective = applySettings(this.effective, p.update);
        return deps.send({ type: 'session.updated', settings: this.effective });
      }
      case 'input_committed': {
        const r = c.committed(e.itemKey, e.previousKey);
        return deps.send({ type: 'input.committed', itemId: r.itemId, previousItemId: r.previousItemId });
      }
      case 'item_added':
      case 'item_done': {
        const r = c.upsert(e.itemKey, e.type === 'item_added' ? e.previousKey : null, e.item);
        this.pendingCreates = this.pendingCreates.filter((p) => p.id !== r.item.id);
        return deps.send({ type: e.type === 'item_added' ? 'item.added' : 'item.done', item: r.item, previousItemId: r.previousItemId });
      }
      case 'item_deleted': {
        const id = c.deleted(e.itemKey);
        if (id !== undefined) deps.send({ type: 'item.deleted', itemId: id });
        return;
      }
      case 'item_truncated': {
        const id = c.truncated(e.itemKey, e.contentIndex);
        if (id !== undefined) deps.send({ type: 'item.truncated', itemId: id, contentIndex: e.contentIndex, audioEndMs: e.audioEndMs });
        return;
      }
      case 'input_transcript_delta': {
        const id = c.setText(e.itemKey, e.contentIndex, e.delta, true);
        if (id !== undefined) deps.send({ type: 'transcript.delta', itemId: id, contentIndex: e.contentIndex, delta: e.delta });
        return;
      }
      case 'input_transcript_completed': {
        const id = c.setText(e.itemKey, e.contentIndex, e.transcript, false);
        if (id !== undefined)
          deps.send({ type: 'transcript.completed', itemId: id, contentIndex: e.contentIndex, transcript: e.transcript });
        return;
      }
      case 'input_transcript_failed': {
        const id = c.idOf(e.itemKey);
        if (id !== undefined) deps.send({ type: 'transcript.failed', itemId: id, contentIndex: e.contentIndex, message: e.message });
        return;
      }
      case 'output_item_added':
      case 'output_item_done': {
        const r = c.upsert(e.itemKey, null, e.item);
        return deps.send({
          type: e.type === 'output_item_added' ? 'output_item.added' : 'output_item.done',
          responseId: deps.responseId(e.responseId),
          outputIndex: e.outputIndex,
          item: r.item,
        });
      }
      default:
        return this.outputContent(e);
    }
  }

  private outputContent(
    e: Extract<
      AgentUpstreamEvent,
      {
        type:
          | 'content_part_added'
          | 'content_part_done'
          | 'text_delta'
          | 'text_done'
          | 'audio_transcript_delta'
          | 'audio_transcript_done'
          | 'function_call_arguments_delta'
          | 'function_call_arguments_done';
      }
    >,
  ): void {
    const { deps, conversation: c } = this;
    const responseId = deps.responseId(e.responseId);
    const itemId = c.idOf(e.itemKey) ?? this.unseenOutput(e.itemKey, e.type);
    const base = { responseId, itemId, outputIndex: e.outputIndex };
    switch (e.type) {
      case 'content_part_added':
      case 'content_part_done':
        c.addPart(e.itemKey, e.contentIndex, e.part);
        return deps.send({
          type: e.type === 'content_part_added' ? 'content_part.added' : 'content_part.done',
          ...base,
          contentIndex: e.contentIndex,
          part: e.part,
        });
      case 'text_delta':
        c.setText(e.itemKey, e.contentIndex, e.delta, true);
        return deps.send({ type: 'text.delta', ...base, contentIndex: e.contentIndex, delta: e.delta });
      case 'text_done':
        c.setText(e.itemKey, e.contentIndex, e.text, false);
        return deps.send({ type: 'text.done', ...base, contentIndex: e.contentIndex, text: e.text });
      case 'audio_transcript_delta':
        c.setText(e.itemKey, e.contentIndex, e.delta, true);
        return deps.send({ type: 'audio_transcript.delta', ...base, contentIndex: e.contentIndex, delta: e.delta });
      case 'audio_transcript_done':
        c.setText(e.itemKey, e.contentIndex, e.transcript, false);
        return deps.send({ type: 'audio_transcript.done', ...base, contentIndex: e.contentIndex, transcript: e.transcript });
      case 'function_call_arguments_delta':
        c.callArguments(e.itemKey, e.callId, e.delta, true);
        return deps.send({ type: 'call_arguments.delta', ...base, callId: e.callId, delta: e.delta });
      case 'function_call_arguments_done':
        c.callArguments(e.itemKey, e.callId, e.arguments, false, e.name);
        return deps.send({ type: 'call_arguments.done', ...base, callId: e.callId, name: e.name, arguments: e.arguments });
    }
  }

  /** Output content of an item the adapter never announced: the item is made here. */
  private unseenOutput(key: string, type: string): string {
    const body: ItemBody = type.startsWith('function_call')
      ? { type: 'function_call', status: 'in_progress', callId: '', name: '', arguments: '' }
      : { type: 'message', role: 'assistant', status: 'in_progress', content: [] };
    return this.conversation.upsert(key, null, body).item.id;
  }
}

const NOT_AGENT: ReadonlySet<string> = new Set([
  'speech_started',
  'speech_stopped',
  'response_created',
  'audio_delta',
  'audio_done',
  'response_done',
  'error',
  'expiring',
  'closed',
]);

/** An update that changes nothing but the client's audio formats. */
function onlyFormats(update: VoiceSettings): boolean {
  for (const k in update) if (k !== 'formats' && update[k as keyof VoiceSettings] !== undefined) return false;
  return update.formats !== undefined;
}

function unsupported(param: string, what: string): { code: 'unsupported_parameter'; param: string; message: string } {
  return { code: 'unsupported_parameter', param, message: `${what} is not supported by this session's model.` };
}
