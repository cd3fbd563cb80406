import { FrameChunker, G711_FRAME_BYTES } from '@s2s/audio';
import { Audio, checkBase64 } from '../../audio.js';
import type { ClientCodec, ClientFrames, InternalClientEvent, InternalServerEvent, Refusal, TransportSignal } from '../events.js';
import { refuse } from '../svc-realtime-v1/codec.js';
import { Playback } from './playback.js';
import type { PhoneWire } from './wire.js';

/**
 * A phone stream as a client dialect (decisions.md, "Phone calls: media streams"): the caller's μ-law in as
 * appends of μ-law, its base64 carried as it came (to an upstream that takes μ-law as is; converted on the
 * upstream side for one that does not), the answer out as μ-law `media` messages of 20 ms (160 bytes) with a `mark` named
 * after the response after its last chunk, `clear` and a truncation of what the caller did not hear at
 * barge-in, DTMF and the hangup reported to the attachment. The provider hears audio only: every other server
 * event encodes to nothing here (control sockets see them). One per stream; the provider's field names are
 * its wire's (codecs/twilio, codecs/telnyx).
 */
export class PhoneCodec implements ClientCodec {
  readonly protocol = null;
  private readonly chunker = new FrameChunker(G711_FRAME_BYTES);
  private readonly playback = new Playback();
  /** The response whose audio the chunker holds. */
  private current: { responseId: string; itemId: string; contentIndex: number } | null = null;
  private sink: ((e: InternalClientEvent) => void) | null = null;

  constructor(
    private readonly wire: PhoneWire,
    private readonly streamId: string,
    private readonly now: () => number = Date.now,
  ) {}

  bind(sink: (e: InternalClientEvent) => void): void {
    this.sink = sink;
  }

  outputFormat(): 'pcmu' {
    return 'pcmu';
  }

  decode(data: Buffer, isBinary: boolean): InternalClientEvent | Refusal | TransportSignal | null {
    if (isBinary) return refuse('invalid_event', 'Media-stream messages are JSON text frames.', undefined);
    const m = this.wire.parse(data.toString());
    switch (m.kind) {
      case 'media': {
        // Both tracks streamed: the outbound one is our own audio coming back, not the caller.
        if (m.track !== 'inbound' && m.track !== 'inbound_track') return null;
        const bytes = checkBase64(m.payload);
        if (bytes < 0) return refuse('invalid_audio_format', 'The media payload is not valid base64.', undefined, 'media.payload');
        if (bytes === 0) return refuse('invalid_audio_format', 'The media payload is empty.', undefined, 'media.payload');
        return { type: 'audio.append', audio: Audio.ofCheckedBase64(m.payload, bytes, 'pcmu'), eventId: undefined };
      }
      case 'mark':
        this.playback.markEchoed(m.name, this.now());
        return null;
      case 'dtmf':
        return { type: 'dtmf', digit: m.digit };
      case 'stop':
        return { type: 'hangup' };
      case 'start':
        return refuse('invalid_event', 'The stream has already started: a second start is ignored.', undefined);
      case 'connected':
      case 'error':
        return null;
      case 'invalid':
        return refuse('invalid_event', m.reason, undefined);
    }
  }

  encode(e: InternalServerEvent): ClientFrames {
    switch (e.type) {
      case 'response.audio.delta': {
        const { place } = e;
        if (this.playback.isCleared(place.responseId)) return null;
        if (this.current?.itemId !== place.itemId)
          this.current = { responseId: place.responseId, itemId: place.itemId, contentIndex: place.contentIndex };
        // μ-law already (outputFormat): the attachment converted it if the upstream speaks another format.
        const frames = this.chunker.push(e.audio.pcm);
        return frames.length === 0 ? null : frames.map((f) => this.media(f));
      }
      case 'response.done': {
        const out: string[] = [];
        if (this.current?.responseId === e.responseId) {
          const last = this.chunker.flush();
          if (last) out.push(this.media(last));
          this.current = null;
        }
        if (this.playback.hasSent(e.responseId) && !this.playback.isCleared(e.responseId)) {
          this.playback.markSent(e.responseId);
          out.push(this.wire.mark(this.streamId, e.responseId));
        }
        return out.length === 0 ? null : out;
      }
      case 'speech.started': {
        const cut = this.playback.bargeIn(this.now());
        if (cut === null) return null;
        this.chunker.clear();
        this.current = null;
        this.sink?.({
          type: 'item.truncate',
          itemId: cut.itemId,
          contentIndex: cut.contentIndex,
          audioEndMs: cut.audioEndMs,
          eventId: undefined,
        });
        return this.wire.clear(this.streamId);
      }
      default:
        return null;
    }
  }

  private media(frame: Buffer): string {
    const c = this.current;
    if (c) this.playback.sent(c, frame.length, this.now());
    return this.wire.media(this.streamId, frame.toString('base64'));
  }
}
