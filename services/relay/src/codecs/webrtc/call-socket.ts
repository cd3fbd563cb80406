import { randomBytes } from 'node:crypto';
import { BYTES_PER_MS } from '@s2s/core';
import type { WebRtcCall } from '@s2s/webrtc';
import type { WebSocket } from 'ws';

/** What the attachment uses of its client socket (attachment.ts, end.ts, client-socket.ts): these, nothing else. */
export type UsedOfSocket = 'readyState' | 'send' | 'close' | 'terminate' | 'on';

const OPEN = 1 as const;
const CLOSED = 3 as const;
const AUDIO_DELTA = '{"type":"response.output_audio.delta"';
const HEAD_BYTES = 256;

type MessageListener = (data: Buffer, isBinary: boolean) => void;

/**
 * A WebRTC call presented to the attachment as a client socket of the OpenAI dialect (decisions.md,
 * "WebRTC"): the `oai-events` channel's messages are its frames, the track's decoded input arrives as
 * `input_audio_buffer.append` frames (so metering counts exactly what was decoded), and the dialect's
 * output audio goes to the track instead of the channel. Like OpenAI, it sends `output_audio_buffer.started`,
 * `.stopped` and `.cleared`, and on a barge-in truncates the assistant's item at what was played.
 */
export class CallSocket {
  readyState: WebSocket['readyState'] = OPEN;
  private readonly messageListeners: MessageListener[] = [];
  private readonly closeListeners: (() => void)[] = [];
  /** The item and response whose audio is on the track, and where its audio began in the played count. */
  private playing: { itemId: string; responseId: string; startBytes: number } | undefined;
  /** Output bytes handed to the track so far (played or queued; after a cut, what was played). */
  private queuedTotal = 0;

  constructor(
    private readonly call: WebRtcCall,
    private readonly maxEventBytes: number,
  ) {
    call.setHandlers({
      audio: (pcm) => this.input(pcm),
      message: (data) => this.channelMessage(data),
      oversize: (bytes) =>
        this.error('invalid_event', `The event is ${bytes} bytes, over the limit of ${this.maxEventBytes} bytes.`, undefined),
      state: (state) => {
        if (state === 'failed' || state === 'closed') this.closed();
      },
      outputStarted: () => this.serverEvent('output_audio_buffer.started', { response_id: this.playing?.responseId ?? null }),
      outputStopped: () => this.serverEvent('output_audio_buffer.stopped', { response_id: this.playing?.responseId ?? null }),
    });
  }

  on(event: string, listener: (...args: never[]) => void): this {
    if (event === 'message') this.messageListeners.push(listener as unknown as MessageListener);
    else if (event === 'close') this.closeListeners.push(listener as unknown as () => void);
    return this;
  }

  send(frame: unknown): void {
    if (this.readyState !== OPEN) return;
    const bytes = typeof frame === 'string' ? Buffer.from(frame) : (frame as Buffer);
    if (bytes.length === 0) return;
    if (startsWith(bytes, AUDIO_DELTA)) return this.outputAudio(bytes);
    const text = bytes.toString('utf8');
    this.call.send(text);
    this.watch(text);
  }

  close(): void {
    this.terminate();
  }

  terminate(): void {
    if (this.readyState === CLOSED) return;
    void this.call.close();
    this.closed();
  }

  // ---- track and channel → attachment ----

  private input(pcm: Buffer): void {
    if (this.readyState !== OPEN) return;
    const frame = `{"type":"input_audio_buffer.append","audio":"${pcm.toString('base64')}"}`;
    this.deliver(Buffer.from(frame), false);
  }

  private channelMessage(data: string | Buffer): void {
    if (this.readyState !== OPEN) return;
    if (typeof data !== 'string') return this.deliver(data, true);
    const parsed = parse(data);
    const type = typeof parsed?.type === 'string' ? parsed.type : undefined;
    if (type === 'session.update') {
      const format = trackFormatRefusal(parsed?.session);
      if (format !== undefined) {
        return this.error(
          'invalid_audio_format',
          'In a WebRTC call the audio is Opus on the tracks: the only format is audio/pcm.',
          eventIdOf(data),
          format,
        );
      }
    }
    if (type === 'input_audio_buffer.append') {
      return this.error('invalid_event', 'In a WebRTC call input audio travels on the audio track, not in events.', eventIdOf(data));
    }
    if (type === 'output_audio_buffer.clear') return this.cut();
    this.deliver(Buffer.from(data), false);
  }

  private deliver(data: Buffer, isBinary: boolean): void {
    for (const l of this.messageListeners) l(data, isBinary);
  }

  // ---- attachment → track ----

  private outputAudio(frame: Buffer): void {
    const head = frame.subarray(0, HEAD_BYTES).toString('latin1');
    const itemId = /"item_id":"([^"]+)"/.exec(head)?.[1] ?? '';
    const responseId = /"response_id":"([^"]+)"/.exec(head)?.[1] ?? '';
    const start = frame.indexOf('"delta":"');
    if (start < 0) return;
    const end = frame.indexOf(0x22, start + 9);
    const pcm = Buffer.from(frame.subarray(start + 9, end < 0 ? frame.length : end).toString('latin1'), 'base64');
    if (this.playing?.itemId !== itemId) this.playing = { itemId, responseId, startBytes: this.queuedTotal };
    this.queuedTotal += pcm.length;
    this.call.playAudio(pcm);
  }

  /** Events the track must follow: the end of a response's audio, and the caller starting to speak. */
  private watch(text: string): void {
    if (text.startsWith('{"type":"response.output_audio.done"')) this.call.endAudio();
    else if (text.startsWith('{"type":"input_audio_buffer.speech_started"') && this.call.outputPlaying) this.cut();
  }

  /**
   * Barge-in (or the client's output_audio_buffer.clear): stop the track, truncate at what was played. An item
   * whose audio has all played (after output_audio_buffer.stopped) is left whole: there is nothing to cut.
   */
  private cut(): void {
    const playing = this.call.outputPlaying ? this.playing : undefined;
    const before = this.call.playedBytes;
    this.call.clearAudio();
    this.queuedTotal = this.call.playedBytes;
    this.playing = undefined;
    this.serverEvent('output_audio_buffer.cleared', { response_id: playing?.responseId ?? null });
    if (playing === undefined || playing.itemId === '') return;
    const audioEndMs = Math.max(0, Math.floor((before - playing.startBytes) / BYTES_PER_MS));
    const truncate = { type: 'conversation.item.truncate', item_id: playing.itemId, content_index: 0, audio_end_ms: audioEndMs };
    this.deliver(Buffer.from(JSON.stringify(truncate)), false);
  }

  private serverEvent(type: string, fields: Record<string, unknown>): void {
    if (this.readyState !== OPEN) return;
    this.call.send(JSON.stringify({ type, event_id: eventId(), ...fields }));
  }

  private error(code: string, message: string, clientEventId: string | undefined, param?: string): void {
    this.serverEvent('error', {
      error: { type: 'invalid_request_error', code, message, param: param ?? null, event_id: clientEventId ?? null },
    });
  }

  private closed(): void {
    if (this.readyState === CLOSED) return;
    this.readyState = CLOSED;
    for (const l of this.closeListeners) l();
  }
}

function startsWith(bytes: Buffer, prefix: string): boolean {
  return bytes.length >= prefix.length && bytes.toString('latin1', 0, prefix.length) === prefix;
}

function parse(text: string): Record<string, unknown> | undefined {
  try {
    const parsed = JSON.parse(text) as unknown;
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The param of a session.update format other than audio/pcm (G.711 is for phone streams, not the tracks). */
function trackFormatRefusal(session: unknown): string | undefined {
  const audio = (session as { audio?: Record<string, { format?: { type?: unknown } } | undefined> } | undefined)?.audio;
  for (const side of ['input', 'output'] as const) {
    const type = audio?.[side]?.format?.type;
    if (type !== undefined && type !== 'audio/pcm') return `session.audio.${side}.format`;
  }
  return undefined;
}

function eventIdOf(text: string): string | undefined {
  try {
    const id = (JSON.parse(text) as { event_id?: unknown }).event_id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

function eventId(): string {
  return `event_${randomBytes(12).toString('base64url')}`;
}
