import { TwilioInboundMessage, type TwilioOutboundMessage } from '@s2s/contract';
import { invalidReason, jsonOf, type PhoneWire } from '../phone/wire.js';

const EVENTS = TwilioInboundMessage.options.map((o) => o.shape.event.value);

/** Twilio Media Streams (bidirectional, `<Connect><Stream>`): the messages of its documentation. */
export const twilioWire: PhoneWire = {
  provider: 'twilio',
  mulaw: 'audio/x-mulaw',
  parse(text) {
    const msg = jsonOf(text);
    const parsed = TwilioInboundMessage.safeParse(msg);
    if (!parsed.success) return { kind: 'invalid', reason: invalidReason(msg, EVENTS) };
    const m = parsed.data;
    switch (m.event) {
      case 'connected':
        return { kind: 'connected' };
      case 'start':
        return {
          kind: 'start',
          streamId: m.start.streamSid,
          callId: m.start.callSid,
          parameters: m.start.customParameters ?? {},
          encoding: m.start.mediaFormat.encoding,
          sampleRate: m.start.mediaFormat.sampleRate,
        };
      case 'media':
        return { kind: 'media', track: m.media.track, payload: m.media.payload };
      case 'dtmf':
        return { kind: 'dtmf', digit: m.dtmf.digit };
      case 'mark':
        return { kind: 'mark', name: m.mark.name };
      case 'stop':
        return { kind: 'stop' };
    }
  },
  media: (streamSid, payload) => JSON.stringify({ event: 'media', streamSid, media: { payload } } satisfies TwilioOutboundMessage),
  mark: (streamSid, name) => JSON.stringify({ event: 'mark', streamSid, mark: { name } } satisfies TwilioOutboundMessage),
  clear: (streamSid) => JSON.stringify({ event: 'clear', streamSid } satisfies TwilioOutboundMessage),
};
