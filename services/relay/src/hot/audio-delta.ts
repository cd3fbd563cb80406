import type { Audio } from '../audio.js';
import type { OutputPlace } from '../codecs/events.js';
import type { EventIds } from './event-ids.js';
import { asciiBytes, frameBuffer, writeAscii } from './frame-bytes.js';

// An output delta, the hot frame out, as bytes for ws in one Buffer (a string would be encoded by ws's writev
// on every frame): its constant head made once per place, then the id, the base64 and `"}` written into slab
// bytes. Plain code: Buffer.from(audioDeltaPrefix(place) + '"event_id":"' + id + member + base64 + '"}', 'latin1').

/** The constant head of one audio item's deltas: made once per run of deltas (they come in runs). */
export function audioDeltaPrefix(p: OutputPlace): string {
  return (
    '{"type":"response.output_audio.delta","response_id":' +
    JSON.stringify(p.responseId) +
    ',"item_id":' +
    JSON.stringify(p.itemId) +
    ',"output_index":' +
    p.outputIndex +
    ',"content_index":' +
    p.contentIndex +
    ','
  );
}

/**
 * The constant JSON head of each place's deltas, as bytes up to the event id's opening quote. One codec serves
 * every socket of the relay and their deltas interleave, but each attachment hands the same place object for
 * a run of deltas of one item.
 */
export class AudioDeltaHeads {
  private readonly heads = new WeakMap<OutputPlace, Buffer>();

  of(place: OutputPlace): Buffer {
    let head = this.heads.get(place);
    if (head === undefined) this.heads.set(place, (head = asciiBytes(audioDeltaPrefix(place) + '"event_id":"')));
    return head;
  }
}

/**
 * One output delta as bytes: `head` (up to the event id's quote), the event id, `member` (closing the id and
 * opening the audio's string), the base64 and `"}`. Ids are the gateway's (EventIds: ASCII, no escaping).
 */
export function audioDeltaFrame(head: Buffer, eventId: string | EventIds, member: Buffer, audio: Audio): Buffer {
  const idLength = typeof eventId === 'string' ? eventId.length : eventId.nextLength();
  const out = frameBuffer(head.length + idLength + member.length + audio.base64.length + 2);
  out.set(head, 0);
  // The codecs hand their EventIds: the id is written as bytes, no string made per delta.
  let at = typeof eventId === 'string' ? writeAscii(out, head.length, eventId) : eventId.writeNext(out, head.length);
  out.set(member, at);
  at = audio.writeBase64To(out, at + member.length);
  out[at] = 0x22; // "
  out[at + 1] = 0x7d; // }
  return out;
}
