import {
  BYTES_PER_MS,
  DEFAULT_SILENCE_DURATION_MS,
  DEFAULT_VOICE,
  ECHO_STREAM_MODEL,
  REPLY_CHUNK_MS,
  SAMPLE_RATE_HZ,
  localTokens,
  type ClientEvent,
  type ServerEvent,
  type SessionUpdate,
} from './protocol.js';
import { InputBuffer } from './input-buffer.js';
import { EnergyVad } from './vad.js';

type ResponseStatus = 'completed' | 'cancelled';
type TurnDetection = { type: 'server_vad'; silence_duration_ms: number } | null;

interface ActiveResponse {
  id: string;
  itemId: string;
  chunks: Buffer[];
  next: number;
  inputBytes: number;
  sentBytes: number;
  timer: NodeJS.Timeout | NodeJS.Immediate | null;
  /** echo-stream responses stay open until commit / response.create / cancel. */
  open: boolean;
}

/** Audio of assistant items, kept so `conversation.item.truncate` can be validated like the real API. */
interface AssistantItem {
  sentBytes: number;
}

const REPLY_CHUNK_BYTES = REPLY_CHUNK_MS * BYTES_PER_MS;
const MAX_REMEMBERED_ITEMS = 64;

/**
 * One simulated upstream session. Ids and event ids are per-connection counters, so the same sequence of
 * client events produces the same server events; only a cancel's position in a reply depends on timing.
 */
export class SimulatedSession {
  private seq = 0;
  private respSeq = 0;
  private itemSeq = 0;
  private voice = DEFAULT_VOICE;
  private turnDetection: TurnDetection = { type: 'server_vad', silence_duration_ms: DEFAULT_SILENCE_DURATION_MS };
  private readonly vad = new EnergyVad(DEFAULT_SILENCE_DURATION_MS);
  private readonly echoStream: boolean;

  private readonly input = new InputBuffer();
  private lastItemId: string | null = null;

  /** Committed since the last response: the audio a response will play, and the input it bills. */
  private pendingReply: Buffer[] = [];
  private pendingInputBytes = 0;

  private active: ActiveResponse | null = null;
  private readonly items = new Map<string, AssistantItem>();
  private closed = false;

  constructor(
    readonly id: string,
    readonly model: string,
    private readonly send: (event: ServerEvent) => void,
    private readonly replyChunkIntervalMs: number,
  ) {
    this.echoStream = model === ECHO_STREAM_MODEL;
    if (this.echoStream) this.turnDetection = null;
  }

  start(): void {
    this.emit('session.created', { session: this.sessionObject() });
  }

  handle(event: ClientEvent): void {
    if (this.closed) return;
    switch (event.type) {
      case 'session.update':
        return this.updateSession(event);
      case 'input_audio_buffer.append':
        return this.append(event.audio);
      case 'input_audio_buffer.commit':
        return this.commit(event.event_id);
      case 'input_audio_buffer.clear':
        return this.clear();
      case 'response.create':
        return this.createResponse();
      case 'response.cancel':
        return this.cancel(event.event_id);
      case 'conversation.item.truncate':
        return this.truncate(event.item_id, event.content_index, event.audio_end_ms, event.event_id);
    }
  }

  /** Fast path for the hot event: the audio arrives as the base64 string the client sent. */
  append(base64: string): void {
    if (this.closed) return;
    const pcm = Buffer.from(base64, 'base64');
    if (this.echoStream) return this.echoFrame(base64, pcm);
    this.input.append(pcm);
    // The VAD clock runs even with turn detection off, so its positions stay on the input byte clock.
    const events = this.vad.push(pcm);
    if (!this.turnDetection) return this.vad.resetSpeech();
    for (const ev of events) {
      if (ev.type === 'speech_started') {
        this.emit('input_audio_buffer.speech_started', { audio_start_ms: ev.startMs, item_id: this.peekItemId() });
        // server_vad interrupts a reply when the user starts speaking, as the real API does by default.
        if (this.active) this.finishResponse('cancelled', 'turn_detected');
      } else {
        this.emit('input_audio_buffer.speech_stopped', { audio_end_ms: ev.speechEndMs, item_id: this.peekItemId() });
        const turn = this.input.take(ev.turnEndMs * BYTES_PER_MS);
        const from = Math.max(0, ev.startMs * BYTES_PER_MS - turn.audioStart);
        const to = Math.max(from, ev.speechEndMs * BYTES_PER_MS - turn.audioStart);
        this.commitAudio(turn.inputBytes, turn.audio.subarray(from, to));
        this.startResponse();
      }
    }
    // With server VAD only speech is ever played back, so audio before the current segment is let go.
    const keepFrom = this.vad.speechStartMs ?? this.vad.processedMs;
    this.input.forget(keepFrom * BYTES_PER_MS);
  }

  /** Answers an event the server could not parse or does not support. */
  rejectEvent(code: string, message: string): void {
    this.error('invalid_request_error', code, message);
  }

  close(): void {
    this.closed = true;
    if (this.active) this.stopTimer(this.active);
    this.active = null;
  }

  private updateSession(event: SessionUpdate): void {
    const input = event.session.audio?.input;
    const output = event.session.audio?.output;
    for (const [param, format] of [
      ['session.audio.input.format', input?.format],
      ['session.audio.output.format', output?.format],
    ] as const) {
      if (format && (format.type !== 'audio/pcm' || (format.rate !== undefined && format.rate !== SAMPLE_RATE_HZ))) {
        return this.error('invalid_request_error', 'invalid_value', 'Only audio/pcm at 24000 Hz is supported.', event.event_id, param);
      }
    }
    const td = input?.turn_detection;
    if (td && td.type !== 'server_vad') {
      return this.error(
        'invalid_request_error',
        'invalid_value',
        'Only server_vad turn detection is supported.',
        event.event_id,
        'session.audio.input.turn_detection.type',
      );
    }
    if (output?.voice) this.voice = output.voice;
    if (td === null) this.turnDetection = null;
    else if (td && !this.echoStream) {
      const silence = td.silence_duration_ms ?? this.turnDetection?.silence_duration_ms ?? DEFAULT_SILENCE_DURATION_MS;
      this.turnDetection = { type: 'server_vad', silence_duration_ms: silence };
      this.vad.silenceDurationMs = silence;
    }
    this.emit('session.updated', { session: this.sessionObject() });
  }

  private commit(clientEventId?: string): void {
    if (this.echoStream) {
      const itemId = this.nextItemId();
      this.emit('input_audio_buffer.committed', { previous_item_id: this.lastItemId, item_id: itemId });
      this.lastItemId = itemId;
      if (this.active) this.finishResponse('completed');
      return;
    }
    if (this.input.uncommittedBytes === 0) {
      return this.error('invalid_request_error', 'input_audio_buffer_commit_empty', 'The input audio buffer is empty.', clientEventId);
    }
    this.commitAll();
  }

  /** Manual commit of everything buffered: played back as held (from the speech start under server VAD). */
  private commitAll(): void {
    const all = this.input.take(this.input.totalBytes);
    this.commitAudio(all.inputBytes, all.audio);
    this.vad.resetSpeech();
  }

  private clear(): void {
    this.input.clear();
    this.vad.resetSpeech();
    this.emit('input_audio_buffer.cleared', {});
  }

  private createResponse(): void {
    if (this.echoStream) {
      if (this.active) return this.finishResponse('completed');
      this.startResponse();
      return;
    }
    if (this.active) {
      return this.error('invalid_request_error', 'conversation_already_has_active_response', 'A response is already in progress.');
    }
    if (this.input.uncommittedBytes > 0) this.commitAll();
    this.startResponse();
  }

  private cancel(clientEventId?: string): void {
    if (!this.active) {
      return this.error('invalid_request_error', 'response_cancel_not_active', 'There is no active response to cancel.', clientEventId);
    }
    this.finishResponse('cancelled', 'client_cancelled');
  }

  private truncate(itemId: string, contentIndex: number, audioEndMs: number, clientEventId?: string): void {
    const item = this.items.get(itemId);
    if (!item || contentIndex !== 0) {
      return this.error('invalid_request_error', 'item_not_found', 'No assistant audio item with this id.', clientEventId, 'item_id');
    }
    if (audioEndMs > Math.floor(item.sentBytes / BYTES_PER_MS)) {
      return this.error(
        'invalid_request_error',
        'invalid_value',
        'audio_end_ms is beyond the audio of this item.',
        clientEventId,
        'audio_end_ms',
      );
    }
    item.sentBytes = Math.min(item.sentBytes, audioEndMs * BYTES_PER_MS);
    this.emit('conversation.item.truncated', { item_id: itemId, content_index: contentIndex, audio_end_ms: audioEndMs });
  }

  private commitAudio(inputBytes: number, reply: Buffer): void {
    const itemId = this.nextItemId();
    this.emit('input_audio_buffer.committed', { previous_item_id: this.lastItemId, item_id: itemId });
    this.lastItemId = itemId;
    this.pendingInputBytes += inputBytes;
    if (reply.length > 0) this.pendingReply.push(reply);
  }

  private startResponse(): void {
    if (this.active) this.finishResponse('cancelled', 'turn_detected');
    const audio = Buffer.concat(this.pendingReply);
    const chunks: Buffer[] = [];
    for (let off = 0; off < audio.length; off += REPLY_CHUNK_BYTES) chunks.push(audio.subarray(off, off + REPLY_CHUNK_BYTES));
    const response: ActiveResponse = {
      id: `resp_${++this.respSeq}`,
      itemId: this.nextItemId(),
      chunks,
      next: 0,
      inputBytes: this.pendingInputBytes,
      sentBytes: 0,
      timer: null,
      open: this.echoStream,
    };
    this.pendingReply = [];
    this.pendingInputBytes = 0;
    this.active = response;
    this.rememberItem(response.itemId);
    this.lastItemId = response.itemId;
    this.emit('response.created', { response: this.responseObject(response, 'in_progress', null) });
    this.emit('response.output_item.added', {
      response_id: response.id,
      output_index: 0,
      item: this.itemObject(response.itemId, 'in_progress'),
    });
    if (!response.open) this.scheduleChunk(response, true);
  }

  private scheduleChunk(response: ActiveResponse, first: boolean): void {
    const run = () => {
      response.timer = null;
      if (this.active !== response || this.closed) return;
      const chunk = response.chunks[response.next++];
      if (chunk) this.sendDelta(response, chunk.toString('base64'), chunk.length);
      if (response.next < response.chunks.length) this.scheduleChunk(response, false);
      else this.finishResponse('completed');
    };
    if (first || this.replyChunkIntervalMs <= 0) response.timer = setImmediate(run);
    else response.timer = setTimeout(run, this.replyChunkIntervalMs);
  }

  private echoFrame(base64: string, pcm: Buffer): void {
    if (!this.active) this.startResponse();
    const response = this.active!;
    response.inputBytes += pcm.length;
    if (pcm.length > 0) this.sendDelta(response, base64, pcm.length);
  }

  private sendDelta(response: ActiveResponse, base64: string, bytes: number): void {
    response.sentBytes += bytes;
    const item = this.items.get(response.itemId);
    if (item) item.sentBytes += bytes;
    this.emit('response.output_audio.delta', {
      response_id: response.id,
      item_id: response.itemId,
      output_index: 0,
      content_index: 0,
      delta: base64,
    });
  }

  private finishResponse(status: ResponseStatus, reason?: 'client_cancelled' | 'turn_detected'): void {
    const response = this.active;
    if (!response) return;
    this.stopTimer(response);
    this.active = null;
    if (status === 'completed') {
      this.emit('response.output_audio.done', { response_id: response.id, item_id: response.itemId, output_index: 0, content_index: 0 });
    }
    this.emit('response.output_item.done', {
      response_id: response.id,
      output_index: 0,
      item: this.itemObject(response.itemId, status === 'completed' ? 'completed' : 'incomplete'),
    });
    const tokens = localTokens(Math.floor(response.inputBytes / BYTES_PER_MS), Math.floor(response.sentBytes / BYTES_PER_MS));
    const usage = {
      total_tokens: tokens.input + tokens.output,
      input_tokens: tokens.input,
      output_tokens: tokens.output,
      input_token_details: { text_tokens: 0, audio_tokens: tokens.input, cached_tokens: 0 },
      output_token_details: { text_tokens: 0, audio_tokens: tokens.output },
    };
    const done = this.responseObject(response, status, usage);
    if (reason) done.status_details = { type: 'cancelled', reason };
    this.emit('response.done', { response: done });
  }

  private stopTimer(response: ActiveResponse): void {
    if (response.timer) {
      clearTimeout(response.timer as NodeJS.Timeout);
      clearImmediate(response.timer as NodeJS.Immediate);
      response.timer = null;
    }
  }

  private rememberItem(itemId: string): void {
    this.items.set(itemId, { sentBytes: 0 });
    if (this.items.size > MAX_REMEMBERED_ITEMS) this.items.delete(this.items.keys().next().value!);
  }

  /** The id the next committed input item will get (speech events name it before the commit). */
  private peekItemId(): string {
    return `item_${this.itemSeq + 1}`;
  }

  private nextItemId(): string {
    return `item_${++this.itemSeq}`;
  }

  private emit(type: string, body: Record<string, unknown>): void {
    this.send({ type, event_id: `event_${++this.seq}`, ...body });
  }

  private error(type: string, code: string, message: string, clientEventId?: string, param?: string): void {
    this.emit('error', { error: { type, code, message, param: param ?? null, event_id: clientEventId ?? null } });
  }

  private sessionObject(): Record<string, unknown> {
    return {
      type: 'realtime',
      object: 'realtime.session',
      id: `sess_${this.id}`,
      model: this.model,
      output_modalities: ['audio'],
      audio: {
        input: { format: { type: 'audio/pcm', rate: SAMPLE_RATE_HZ }, turn_detection: this.turnDetection },
        output: { format: { type: 'audio/pcm', rate: SAMPLE_RATE_HZ }, voice: this.voice },
      },
    };
  }

  private responseObject(response: ActiveResponse, status: string, usage: Record<string, unknown> | null): Record<string, unknown> {
    return {
      object: 'realtime.response',
      id: response.id,
      status,
      status_details: null,
      output: [
        this.itemObject(response.itemId, status === 'in_progress' ? 'in_progress' : status === 'completed' ? 'completed' : 'incomplete'),
      ],
      output_modalities: ['audio'],
      audio: { output: { format: { type: 'audio/pcm', rate: SAMPLE_RATE_HZ }, voice: this.voice } },
      usage,
    };
  }

  private itemObject(itemId: string, status: string): Record<string, unknown> {
    return { id: itemId, object: 'realtime.item', type: 'message', role: 'assistant', status, content: [{ type: 'output_audio' }] };
  }
}
