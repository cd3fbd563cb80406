import type {
  RealtimeConversationItemAssistantMessage,
  RealtimeConversationItemFunctionCall,
  RealtimeResponse,
  RealtimeResponseUsage,
  RealtimeSessionCreateRequest,
} from 'openai/resources/realtime/realtime';
import { formatObject, InputConverter, OutputConverter, pcmBytesOf, wireFormatOf } from './formats.js';
import { Conversation, contextUsage, type ContextUsage, type Segment, type StoredItem } from './conversation.js';
import { InputBuffer } from './input-buffer.js';
import {
  BYTES_PER_MS,
  DEFAULT_SILENCE_DURATION_MS,
  DEFAULT_VOICE,
  ECHO_STREAM_MODEL,
  REPLY_CHUNK_MS,
  SEMANTIC_VAD_SILENCE_MS,
  TEXT_DELTA_CHARS,
  localTokens,
  textTokens,
  type ClientEvent,
  type ConversationItem,
  type FunctionTool,
  type NewItem,
  type OutputModalities,
  type ResponseParams,
  type Sent,
  type ServerEventBody,
  type SessionUpdate,
  type ToolChoice,
  type TurnDetection,
} from './protocol.js';
import { decideReply, shapeReply, speechTranscript, withReasoning, type Output, type PendingEntry } from './reply.js';
import { EnergyVad } from './vad.js';

type ResponseStatus = 'completed' | 'cancelled' | 'incomplete';
type CancelReason = 'client_cancelled' | 'turn_detected';

/** The session's effective settings, as `session.updated` reports them. */
interface Settings {
  voice: string;
  instructions: string;
  tools: FunctionTool[];
  toolChoice: ToolChoice;
  outputModalities: OutputModalities;
  maxOutputTokens: number | 'inf';
  transcription: { model?: string; language?: string; prompt?: string } | null;
  noiseReduction: { type: 'near_field' | 'far_field' } | null;
  turnDetection: TurnDetection;
  /** Honoured (reasoning) or kept and reported as set (the rest): OpenAI's current session fields. */
  current: Pick<RealtimeSessionCreateRequest, 'reasoning' | 'truncation' | 'parallel_tool_calls' | 'prompt' | 'include'>;
}

interface ActiveResponse {
  id: string;
  itemId: string;
  output: Output;
  modalities: OutputModalities;
  maxOutputTokens: number | 'inf';
  /** Null for an out-of-band response (`conversation: "none"`), whose output stays out of the conversation. */
  stored: StoredItem | null;
  input: ContextUsage;
  chunks: Buffer[];
  next: number;
  sentBytes: number;
  timer: NodeJS.Timeout | NodeJS.Immediate | null;
  /** echo-stream responses stay open until commit / response.create / cancel; they bill their echoed input. */
  open: boolean;
  echoedInputBytes: number;
}

const REPLY_CHUNK_BYTES = REPLY_CHUNK_MS * BYTES_PER_MS;

/**
 * One simulated upstream session. Ids and event ids are per-connection counters, so the same sequence of
 * client events produces the same server events; only a cancel's position in a reply depends on timing.
 */
export class SimulatedSession {
  private seq = 0;
  private respSeq = 0;
  private itemSeq = 0;
  private readonly settings: Settings = {
    voice: DEFAULT_VOICE,
    instructions: '',
    tools: [],
    toolChoice: 'auto',
    outputModalities: ['audio'],
    maxOutputTokens: 'inf',
    transcription: null,
    noiseReduction: null,
    turnDetection: { type: 'server_vad', silence_duration_ms: DEFAULT_SILENCE_DURATION_MS },
    current: {},
  };
  private readonly vad = new EnergyVad(DEFAULT_SILENCE_DURATION_MS);
  private readonly echoStream: boolean;
  private readonly input = new InputBuffer();
  /** The input and output formats in force (OpenAI's: PCM16 24 kHz, G.711 μ-law or A-law), converted at the edge. */
  private inFormat = new InputConverter('pcm');
  private outFormat = new OutputConverter('pcm');
  private readonly conversation = new Conversation();
  /** The id of the last item the input buffer committed (echo-stream keeps no conversation). */
  private lastCommittedId: string | null = null;

  /** Added by the user side since the last response: what the next response answers. */
  private pending: PendingEntry[] = [];
  /** The context the previous response was billed for: its common prefix with the next one is cached. */
  private previousContext: Segment[] = [];
  private audioSent = false;
  private lastResponseId: string | null = null;

  private active: ActiveResponse | null = null;
  private closed = false;

  constructor(
    readonly id: string,
    readonly model: string,
    private readonly send: (event: ServerEventBody & { event_id: string }) => void,
    private readonly replyChunkIntervalMs: number,
  ) {
    this.echoStream = model === ECHO_STREAM_MODEL;
    if (this.echoStream) this.settings.turnDetection = null;
  }

  start(): void {
    this.emit({ type: 'session.created', session: this.sessionObject() } satisfies Sent<'session.created'>);
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
      case 'output_audio_buffer.clear':
        return this.clearOutput(event.event_id);
      case 'response.create':
        return this.createResponse(event.response ?? {}, event.event_id);
      case 'response.cancel':
        return this.cancel(event.event_id);
      case 'conversation.item.create':
        return this.createItem(event.item, event.previous_item_id, event.event_id);
      case 'conversation.item.delete':
        return this.deleteItem(event.item_id, event.event_id);
      case 'conversation.item.retrieve':
        return this.retrieveItem(event.item_id, event.event_id);
      case 'conversation.item.truncate':
        return this.truncate(event.item_id, event.content_index, event.audio_end_ms, event.event_id);
    }
  }

  /** Fast path for the hot event: the audio arrives as the base64 string the client sent. */
  append(base64: string): void {
    if (this.closed) return;
    const raw = Buffer.from(base64, 'base64');
    if (this.echoStream) return this.echoFrame(base64, raw);
    const pcm = this.inFormat.toPcm(raw);
    this.input.append(pcm);
    // The VAD clock runs even with turn detection off, so its positions stay on the input byte clock.
    const events = this.vad.push(pcm);
    const td = this.settings.turnDetection;
    if (!td) return this.vad.resetSpeech();
    for (const ev of events) {
      if (ev.type === 'speech_started') {
        this.emit({
          type: 'input_audio_buffer.speech_started',
          audio_start_ms: ev.startMs,
          item_id: this.peekItemId(),
        } satisfies Sent<'input_audio_buffer.speech_started'>);
        // Speech interrupts a reply, as the real API does unless `interrupt_response` is false.
        if (this.active && td.interrupt_response !== false) this.finishResponse('cancelled', 'turn_detected');
      } else {
        this.emit({
          type: 'input_audio_buffer.speech_stopped',
          audio_end_ms: ev.speechEndMs,
          item_id: this.peekItemId(),
        } satisfies Sent<'input_audio_buffer.speech_stopped'>);
        const turn = this.input.take(ev.turnEndMs * BYTES_PER_MS);
        const from = Math.max(0, ev.startMs * BYTES_PER_MS - turn.audioStart);
        const to = Math.max(from, ev.speechEndMs * BYTES_PER_MS - turn.audioStart);
        this.commitAudio(turn.inputBytes, turn.audio.subarray(from, to));
        if (td.create_response !== false) this.startResponse({});
      }
    }
    // With server VAD only speech is ever played back, so audio before the current segment is let go.
    const keepFrom = this.vad.speechStartMs ?? this.vad.processedMs;
    this.input.forget(keepFrom * BYTES_PER_MS);
  }

  /** Answers an event the server could not parse or does not support. */
  rejectEvent(code: string, message: string): void {
    this.error(code, message);
  }

  /** Sends an event from outside the conversation (the connection cap's notices). */
  notify(code: string, message: string): void {
    this.error(code, message);
  }

  close(): void {
    this.closed = true;
    if (this.active) this.stopTimer(this.active);
    this.active = null;
  }

  // ---- session.update -------------------------------------------------------------------------------

  private updateSession(event: SessionUpdate): void {
    const s = event.session;
    const input = s.audio?.input;
    const output = s.audio?.output;
    if (output?.voice !== undefined && output.voice !== this.settings.voice && this.audioSent) {
      return this.error(
        'cannot_update_voice',
        'Cannot update a conversation\u2019s voice if assistant audio is present.',
        event.event_id,
        'session.audio.output.voice',
      );
    }
    const tools = s.tools ?? this.settings.tools;
    const names = new Set<string>();
    for (const [i, tool] of tools.entries()) {
      if (names.has(tool.name))
        return this.error('invalid_value', `Duplicate tool name '${tool.name}'.`, event.event_id, `session.tools[${i}].name`);
      names.add(tool.name);
    }
    const settings = this.settings;
    // A format applies to audio sent or produced after this update (the converters' state starts afresh).
    if (input?.format !== undefined && wireFormatOf(input.format) !== this.inFormat.format)
      this.inFormat = new InputConverter(wireFormatOf(input.format));
    if (output?.format !== undefined && wireFormatOf(output.format) !== this.outFormat.format)
      this.outFormat = new OutputConverter(wireFormatOf(output.format));
    if (output?.voice !== undefined) settings.voice = output.voice;
    if (s.instructions !== undefined) settings.instructions = s.instructions;
    settings.tools = tools;
    if (s.tool_choice !== undefined) settings.toolChoice = s.tool_choice;
    if (s.output_modalities !== undefined) settings.outputModalities = s.output_modalities;
    if (s.max_output_tokens !== undefined) settings.maxOutputTokens = s.max_output_tokens;
    if (input?.transcription !== undefined) settings.transcription = input.transcription;
    if (input?.noise_reduction !== undefined) settings.noiseReduction = input.noise_reduction;
    for (const k of ['reasoning', 'truncation', 'parallel_tool_calls', 'prompt', 'include'] as const) {
      if (s[k] !== undefined) settings.current = { ...settings.current, [k]: s[k] };
    }
    if (input?.turn_detection !== undefined && !this.echoStream) {
      let td = input.turn_detection;
      if (td?.type === 'server_vad' && td.silence_duration_ms === undefined) {
        const previous = settings.turnDetection?.type === 'server_vad' ? settings.turnDetection.silence_duration_ms : undefined;
        td = { ...td, silence_duration_ms: previous ?? DEFAULT_SILENCE_DURATION_MS };
      }
      settings.turnDetection = td;
      if (td) this.vad.silenceDurationMs = silenceOf(td);
    }
    this.emit({ type: 'session.updated', session: this.sessionObject() } satisfies Sent<'session.updated'>);
  }

  // ---- input audio buffer ---------------------------------------------------------------------------

  private commit(clientEventId?: string): void {
    if (this.echoStream) {
      const itemId = this.nextItemId();
      this.emit({
        type: 'input_audio_buffer.committed',
        previous_item_id: this.lastCommittedId,
        item_id: itemId,
      } satisfies Sent<'input_audio_buffer.committed'>);
      this.lastCommittedId = itemId;
      if (this.active) this.finishResponse('completed');
      return;
    }
    if (this.input.uncommittedBytes === 0) {
      return this.error('input_audio_buffer_commit_empty', 'The input audio buffer is empty.', clientEventId);
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
    this.emit({ type: 'input_audio_buffer.cleared' } satisfies Sent<'input_audio_buffer.cleared'>);
  }

  /** A committed audio turn becomes a user item; its transcript follows when transcription is on. */
  private commitAudio(inputBytes: number, reply: Buffer): void {
    const itemId = this.nextItemId();
    const previous = this.conversation.lastId;
    this.emit({
      type: 'input_audio_buffer.committed',
      previous_item_id: previous,
      item_id: itemId,
    } satisfies Sent<'input_audio_buffer.committed'>);
    this.lastCommittedId = itemId;
    const stored: StoredItem = {
      id: itemId,
      item: { id: itemId, object: 'realtime.item', type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_audio' }] },
      audioMs: Math.floor(inputBytes / BYTES_PER_MS),
    };
    this.addItem(stored, undefined);
    this.userAudio(stored, reply);
  }

  /** Audio of a user item: pending for the next reply, and transcribed when the session asks for it. */
  private userAudio(stored: StoredItem, audio: Buffer): void {
    const speechMs = Math.floor(audio.length / BYTES_PER_MS);
    this.pending.push({ type: 'audio', audio, speechMs });
    if (!this.settings.transcription) return;
    const transcript = speechTranscript(speechMs);
    this.emit({
      type: 'conversation.item.input_audio_transcription.delta',
      item_id: stored.id,
      content_index: 0,
      delta: transcript,
    } satisfies Sent<'conversation.item.input_audio_transcription.delta'>);
    this.emit({
      type: 'conversation.item.input_audio_transcription.completed',
      item_id: stored.id,
      content_index: 0,
      transcript,
      usage: { type: 'duration', seconds: stored.audioMs / 1000 },
    } satisfies Sent<'conversation.item.input_audio_transcription.completed'>);
    if (stored.item.type === 'message' && stored.item.role === 'user') {
      const part = stored.item.content.find((p) => p.type === 'input_audio');
      if (part) part.transcript = transcript;
    }
  }

  // ---- conversation items ---------------------------------------------------------------------------

  private createItem(item: NewItem, previousId: string | undefined, clientEventId?: string): void {
    const id = item.id ?? this.nextItemId();
    if (this.conversation.has(id)) return this.error('item_already_exists', `Item '${id}' already exists.`, clientEventId, 'item.id');
    if (previousId !== undefined && previousId !== 'root' && !this.conversation.has(previousId)) {
      return this.error('item_not_found', `Item '${previousId}' does not exist.`, clientEventId, 'previous_item_id');
    }
    let audio: Buffer | null = null;
    let conversationItem: ConversationItem;
    if (item.type === 'message' && item.role === 'user') {
      const parts = item.content.map((p) => {
        if (p.type !== 'input_audio') return p;
        // In the session's input format, as OpenAI reads it.
        const pcm = new InputConverter(this.inFormat.format).toPcm(Buffer.from(p.audio, 'base64'));
        audio = Buffer.concat([audio ?? Buffer.alloc(0), pcm]);
        // Audio bytes are not kept: the item remembers its length and transcript only.
        return p.transcript === undefined ? { type: p.type } : { type: p.type, transcript: p.transcript };
      });
      conversationItem = { ...item, id, object: 'realtime.item', status: 'completed', content: parts };
    } else {
      conversationItem = { ...item, id, object: 'realtime.item', status: 'completed' };
    }
    const stored: StoredItem = { id, item: conversationItem, audioMs: audio ? Math.floor((audio as Buffer).length / BYTES_PER_MS) : 0 };
    this.addItem(stored, previousId);
    if (audio) return this.userAudio(stored, audio);
    if (item.type === 'function_call_output') this.pending.push({ type: 'function_output', output: item.output });
    else if (item.type === 'message' && item.role === 'user') {
      this.pending.push({ type: 'text', text: item.content.map((p) => (p.type === 'input_text' ? p.text : '')).join('') });
    }
  }

  private addItem(stored: StoredItem, previousId: string | undefined): void {
    const at = this.conversation.insert(stored, previousId)!;
    this.emit({
      type: 'conversation.item.added',
      previous_item_id: at.previousItemId,
      item: stored.item,
    } satisfies Sent<'conversation.item.added'>);
    this.emit({
      type: 'conversation.item.done',
      previous_item_id: at.previousItemId,
      item: stored.item,
    } satisfies Sent<'conversation.item.done'>);
  }

  private deleteItem(itemId: string, clientEventId?: string): void {
    if (this.active?.itemId === itemId || !this.conversation.delete(itemId)) {
      return this.error('item_not_found', `Item '${itemId}' does not exist.`, clientEventId, 'item_id');
    }
    this.emit({ type: 'conversation.item.deleted', item_id: itemId } satisfies Sent<'conversation.item.deleted'>);
  }

  private retrieveItem(itemId: string, clientEventId?: string): void {
    const stored = this.conversation.get(itemId);
    if (!stored) return this.error('item_not_found', `Item '${itemId}' does not exist.`, clientEventId, 'item_id');
    this.emit({ type: 'conversation.item.retrieved', item: stored.item } satisfies Sent<'conversation.item.retrieved'>);
  }

  private truncate(itemId: string, contentIndex: number, audioEndMs: number, clientEventId?: string): void {
    // Truncating the item being spoken stops its response first, so the item holds what was sent.
    if (this.active?.itemId === itemId && this.active.output.kind === 'audio') this.finishResponse('cancelled', 'client_cancelled');
    const stored = this.conversation.get(itemId);
    const item = stored?.item;
    if (!stored || !item || item.type !== 'message' || item.role !== 'assistant' || item.content[contentIndex]?.type !== 'output_audio') {
      return this.error('item_not_found', 'No assistant audio item with this id.', clientEventId, 'item_id');
    }
    if (audioEndMs > stored.audioMs) {
      return this.error('invalid_value', 'audio_end_ms is beyond the audio of this item.', clientEventId, 'audio_end_ms');
    }
    stored.audioMs = audioEndMs;
    // As the real API does, truncating audio drops the server-side transcript of that audio.
    item.content[contentIndex]!.transcript = '';
    this.emit({
      type: 'conversation.item.truncated',
      item_id: itemId,
      content_index: contentIndex,
      audio_end_ms: audioEndMs,
    } satisfies Sent<'conversation.item.truncated'>);
  }

  // ---- responses ------------------------------------------------------------------------------------

  private createResponse(params: ResponseParams, clientEventId?: string): void {
    if (this.echoStream) {
      if (this.active) return this.finishResponse('completed');
      this.startResponse({});
      return;
    }
    if (this.active) {
      return this.error('conversation_already_has_active_response', 'A response is already in progress.', clientEventId);
    }
    if (this.input.uncommittedBytes > 0) this.commitAll();
    this.startResponse(params);
  }

  private cancel(clientEventId?: string): void {
    if (!this.active) {
      return this.error('response_cancel_not_active', 'There is no active response to cancel.', clientEventId);
    }
    this.finishResponse('cancelled', 'client_cancelled');
  }

  /** Stops the audio of the reply in progress, as a WebRTC client's output buffer clear does. */
  private clearOutput(clientEventId?: string): void {
    const responseId = this.active?.id ?? this.lastResponseId;
    if (!responseId) return this.error('response_cancel_not_active', 'There is no response to clear.', clientEventId);
    if (this.active) this.finishResponse('cancelled', 'client_cancelled');
    this.emit({ type: 'output_audio_buffer.cleared', response_id: responseId } satisfies Sent<'output_audio_buffer.cleared'>);
  }

  private startResponse(params: ResponseParams): void {
    if (this.active) this.finishResponse('cancelled', 'turn_detected');
    const s = this.settings;
    const inConversation = params.conversation !== 'none';
    const instructions = params.instructions ?? s.instructions;
    const modalities = params.output_modalities ?? s.outputModalities;
    const maxOutputTokens = params.max_output_tokens ?? s.maxOutputTokens;
    // Like a real provider, every response is billed for its whole context; what repeats the previous one is cached.
    const context = inConversation ? this.conversation.segments(instructions) : new Conversation().segments(instructions);
    const input = contextUsage(context, this.previousContext);
    this.previousContext = context;
    const reply = this.echoStream
      ? ({ kind: 'audio', audio: Buffer.alloc(0), transcript: '', truncated: false } as const)
      : shapeReply(
          withReasoning(
            decideReply(this.pending, params.tools ?? s.tools, params.tool_choice ?? s.toolChoice),
            s.current.reasoning?.effort ?? undefined,
          ),
          modalities[0],
          maxOutputTokens,
        );
    if (inConversation) this.pending = [];
    const id = `resp_${++this.respSeq}`;
    const itemId = this.nextItemId();
    const response: ActiveResponse = {
      id,
      itemId,
      output: reply,
      modalities,
      maxOutputTokens,
      stored: null,
      input,
      chunks: [],
      next: 0,
      sentBytes: 0,
      timer: null,
      open: this.echoStream,
      echoedInputBytes: 0,
    };
    this.active = response;
    this.lastResponseId = id;
    this.emit({ type: 'response.created', response: this.responseObject(response, 'in_progress', []) } satisfies Sent<'response.created'>);
    const item = this.outputItem(response, 'in_progress');
    this.emit({ type: 'response.output_item.added', response_id: id, output_index: 0, item } satisfies Sent<'response.output_item.added'>);
    if (inConversation && !this.echoStream) {
      response.stored = { id: itemId, item, audioMs: 0 };
      this.addItemStarted(response.stored);
    }
    const where = { response_id: id, item_id: itemId, output_index: 0 };
    if (reply.kind === 'function_call') {
      for (const delta of slices(reply.arguments)) {
        this.emit({
          type: 'response.function_call_arguments.delta',
          ...where,
          call_id: callIdOf(item),
          delta,
        } satisfies Sent<'response.function_call_arguments.delta'>);
      }
      this.emit({
        type: 'response.function_call_arguments.done',
        ...where,
        call_id: callIdOf(item),
        name: reply.name,
        arguments: reply.arguments,
      } satisfies Sent<'response.function_call_arguments.done'>);
      return this.finishResponse('completed');
    }
    if (this.echoStream) return;
    if (reply.kind === 'text') {
      this.emit({
        type: 'response.content_part.added',
        ...where,
        content_index: 0,
        part: { type: 'text', text: '' },
      } satisfies Sent<'response.content_part.added'>);
      for (const delta of slices(reply.text)) {
        this.emit({ type: 'response.output_text.delta', ...where, content_index: 0, delta } satisfies Sent<'response.output_text.delta'>);
      }
      this.emit({
        type: 'response.output_text.done',
        ...where,
        content_index: 0,
        text: reply.text,
      } satisfies Sent<'response.output_text.done'>);
      this.emit({
        type: 'response.content_part.done',
        ...where,
        content_index: 0,
        part: { type: 'text', text: reply.text },
      } satisfies Sent<'response.content_part.done'>);
      return this.finishResponse(reply.truncated ? 'incomplete' : 'completed');
    }
    this.emit({
      type: 'response.content_part.added',
      ...where,
      content_index: 0,
      part: { type: 'audio', transcript: '' },
    } satisfies Sent<'response.content_part.added'>);
    if (reply.transcript.length > 0) {
      this.emit({
        type: 'response.output_audio_transcript.delta',
        ...where,
        content_index: 0,
        delta: reply.transcript,
      } satisfies Sent<'response.output_audio_transcript.delta'>);
    }
    for (let off = 0; off < reply.audio.length; off += REPLY_CHUNK_BYTES)
      response.chunks.push(reply.audio.subarray(off, off + REPLY_CHUNK_BYTES));
    this.scheduleChunk(response, true);
  }

  /** An output item enters the conversation when its response starts (`conversation.item.added`). */
  private addItemStarted(stored: StoredItem): void {
    const at = this.conversation.insert(stored)!;
    this.emit({
      type: 'conversation.item.added',
      previous_item_id: at.previousItemId,
      item: stored.item,
    } satisfies Sent<'conversation.item.added'>);
  }

  private scheduleChunk(response: ActiveResponse, first: boolean): void {
    const run = () => {
      response.timer = null;
      if (this.active !== response || this.closed) return;
      const chunk = response.chunks[response.next++];
      if (chunk) this.sendPcm(response, chunk);
      if (response.next < response.chunks.length) this.scheduleChunk(response, false);
      else this.finishResponse(response.output.truncated ? 'incomplete' : 'completed');
    };
    if (first || this.replyChunkIntervalMs <= 0) response.timer = setImmediate(run);
    else response.timer = setTimeout(run, this.replyChunkIntervalMs);
  }

  /** echo-stream: the frame back as it came when both formats are the same, else converted through PCM16. */
  private echoFrame(base64: string, raw: Buffer): void {
    if (!this.active) this.startResponse({});
    const response = this.active!;
    const pcmBytes = pcmBytesOf(this.inFormat.format, raw.length);
    response.echoedInputBytes += pcmBytes;
    if (raw.length === 0) return;
    if (this.inFormat.format === this.outFormat.format) this.sendDelta(response, base64, pcmBytes);
    else this.sendPcm(response, this.inFormat.toPcm(raw));
  }

  /** PCM16 24 kHz output, in the session's output format. */
  private sendPcm(response: ActiveResponse, pcm: Buffer): void {
    const out = this.outFormat.fromPcm(pcm);
    // A G.711 encoder completes a byte per 3 samples: a shorter chunk is carried to the next one.
    if (out.length > 0) this.sendDelta(response, out.toString('base64'), pcmBytesOf(this.outFormat.format, out.length));
  }

  /** `bytes`: the delta's length as PCM16 24 kHz (its duration on the output clock). */
  private sendDelta(response: ActiveResponse, base64: string, bytes: number): void {
    response.sentBytes += bytes;
    this.audioSent = true;
    if (response.stored) response.stored.audioMs = Math.floor(response.sentBytes / BYTES_PER_MS);
    this.emit({
      type: 'response.output_audio.delta',
      response_id: response.id,
      item_id: response.itemId,
      output_index: 0,
      content_index: 0,
      delta: base64,
    } satisfies Sent<'response.output_audio.delta'>);
  }

  private finishResponse(status: ResponseStatus, reason?: CancelReason): void {
    const response = this.active;
    if (!response) return;
    this.stopTimer(response);
    this.active = null;
    const where = { response_id: response.id, item_id: response.itemId, output_index: 0, content_index: 0 };
    const output = response.output;
    if (status !== 'cancelled' && output.kind === 'audio') {
      this.emit({ type: 'response.output_audio.done', ...where } satisfies Sent<'response.output_audio.done'>);
      if (!this.echoStream) {
        this.emit({
          type: 'response.output_audio_transcript.done',
          ...where,
          transcript: output.transcript,
        } satisfies Sent<'response.output_audio_transcript.done'>);
        this.emit({
          type: 'response.content_part.done',
          ...where,
          part: { type: 'audio', transcript: output.transcript },
        } satisfies Sent<'response.content_part.done'>);
      }
    }
    const item = this.outputItem(response, status === 'completed' ? 'completed' : 'incomplete');
    this.emit({
      type: 'response.output_item.done',
      response_id: response.id,
      output_index: 0,
      item,
    } satisfies Sent<'response.output_item.done'>);
    if (response.stored) {
      response.stored.item = item;
      this.emit({ type: 'conversation.item.done', previous_item_id: null, item } satisfies Sent<'conversation.item.done'>);
    }
    const done = this.responseObject(response, status, [item], this.usage(response));
    if (reason) done.status_details = { type: 'cancelled', reason };
    else if (status === 'incomplete') done.status_details = { type: 'incomplete', reason: 'max_output_tokens' };
    this.emit({ type: 'response.done', response: done } satisfies Sent<'response.done'>);
  }

  /** OpenAI's usage shape: input totals include the cached part, which the details break down. */
  private usage(response: ActiveResponse): RealtimeResponseUsage {
    const outAudioMs = Math.floor(response.sentBytes / BYTES_PER_MS);
    const output = response.output;
    const outText = output.kind === 'text' ? textTokens(output.text) : output.kind === 'function_call' ? textTokens(output.arguments) : 0;
    const outAudio = localTokens(0, outAudioMs).output;
    const input = response.open
      ? { text: 0, audio: localTokens(Math.floor(response.echoedInputBytes / BYTES_PER_MS), 0).input, cachedText: 0, cachedAudio: 0 }
      : response.input;
    const inputTokens = input.text + input.audio;
    return {
      total_tokens: inputTokens + outText + outAudio,
      input_tokens: inputTokens,
      output_tokens: outText + outAudio,
      input_token_details: {
        text_tokens: input.text,
        audio_tokens: input.audio,
        image_tokens: 0,
        cached_tokens: input.cachedText + input.cachedAudio,
        cached_tokens_details: { text_tokens: input.cachedText, audio_tokens: input.cachedAudio, image_tokens: 0 },
      },
      output_token_details: { text_tokens: outText, audio_tokens: outAudio },
    };
  }

  private stopTimer(response: ActiveResponse): void {
    if (response.timer) {
      clearTimeout(response.timer as NodeJS.Timeout);
      clearImmediate(response.timer as NodeJS.Immediate);
      response.timer = null;
    }
  }

  // ---- ids, events, shapes --------------------------------------------------------------------------

  /** The id the next committed input item will get (speech events name it before the commit). */
  private peekItemId(): string {
    return `item_${this.itemSeq + 1}`;
  }

  private nextItemId(): string {
    return `item_${++this.itemSeq}`;
  }

  private emit(body: ServerEventBody): void {
    this.send({ ...body, event_id: `event_${++this.seq}` });
  }

  private error(code: string, message: string, clientEventId?: string, param?: string): void {
    this.emit({
      type: 'error',
      error: { type: 'invalid_request_error', code, message, param: param ?? null, event_id: clientEventId ?? null },
    } satisfies Sent<'error'>);
  }

  private sessionObject(): RealtimeSessionCreateRequest {
    const s = this.settings;
    return {
      type: 'realtime',
      model: this.model,
      instructions: s.instructions,
      tools: s.tools,
      tool_choice: s.toolChoice,
      output_modalities: s.outputModalities,
      max_output_tokens: s.maxOutputTokens,
      ...s.current,
      audio: {
        input: {
          format: formatObject(this.inFormat.format),
          turn_detection: s.turnDetection,
          ...(s.transcription ? { transcription: s.transcription } : {}),
          ...(s.noiseReduction ? { noise_reduction: s.noiseReduction } : {}),
        },
        output: { format: formatObject(this.outFormat.format), voice: s.voice },
      },
    } satisfies RealtimeSessionCreateRequest;
  }

  private responseObject(
    response: ActiveResponse,
    status: RealtimeResponse['status'],
    output: ConversationItem[],
    usage?: RealtimeResponseUsage,
  ): RealtimeResponse {
    return {
      object: 'realtime.response',
      id: response.id,
      status,
      output,
      output_modalities: response.modalities,
      max_output_tokens: response.maxOutputTokens,
      audio: { output: { format: formatObject(this.outFormat.format), voice: this.settings.voice } },
      ...(usage ? { usage } : {}),
    } satisfies RealtimeResponse;
  }

  private outputItem(response: ActiveResponse, status: 'in_progress' | 'completed' | 'incomplete'): ConversationItem {
    const output = response.output;
    const base = { id: response.itemId, object: 'realtime.item', status } as const;
    if (output.kind === 'function_call') {
      const callId = `call_${response.id.slice('resp_'.length)}`;
      return {
        ...base,
        type: 'function_call',
        call_id: callId,
        name: output.name,
        arguments: status === 'in_progress' ? '' : output.arguments,
      } satisfies RealtimeConversationItemFunctionCall;
    }
    const content: RealtimeConversationItemAssistantMessage.Content[] =
      status === 'in_progress'
        ? []
        : output.kind === 'text'
          ? [{ type: 'output_text', text: output.text }]
          : [{ type: 'output_audio', transcript: output.transcript }];
    return { ...base, type: 'message', role: 'assistant', content } satisfies RealtimeConversationItemAssistantMessage;
  }
}

function silenceOf(td: NonNullable<TurnDetection>): number {
  return td.type === 'server_vad'
    ? (td.silence_duration_ms ?? DEFAULT_SILENCE_DURATION_MS)
    : SEMANTIC_VAD_SILENCE_MS[td.eagerness ?? 'auto'];
}

function callIdOf(item: ConversationItem): string {
  return item.type === 'function_call' ? (item.call_id ?? '') : '';
}

/** Cuts a text into the deltas it is streamed in. */
function slices(text: string): string[] {
  const out: string[] = [];
  for (let off = 0; off < text.length; off += TEXT_DELTA_CHARS) out.push(text.slice(off, off + TEXT_DELTA_CHARS));
  return out;
}
