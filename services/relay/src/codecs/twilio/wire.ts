import { TwilioInboundMessage, type TwilioOutboundMessage } from '@s2s/contract';
import { readInbound, type PhoneWire } from '../phone/wire.js';

const EVENTS = TwilioInboundMessage.options.map((o) => o.shape.event.value);

/** Twilio Media Streams (bidirectional, `<Connect><Stream>`): the messages of its documentation. */
export const twilioWire: PhoneWire = {
  provider: 'twilio',
  mulaw: 'audio/x-mulaw',
  parse: (text) =>
    readInbound(text, TwilioInboundMessage, EVENTS, (m, shared) =>
      m.event === 'start'
        ? {
            kind: 'start',
            streamId: m.start.streamSid,
            callId: m.start.callSid,
            parameters: m.start.customParameters ?? {},
            encoding: m.start.mediaFormat.encoding,
            sampleRate: m.start.mediaFormat.sampleRate,
          }
        : shared(m),
    ),
  media: (streamSid, payload) => JSON.stringify({ event: 'media', streamSid, media: { payload } } satisfies TwilioOutboundMessage),
  mark: (streamSid, name) => JSON.stringify({ event: 'mark', streamSid, mark: { name } } satisfies TwilioOutboundMessage),
  clear: (streamSid) => JSON.stringify({ event: 'clear', streamSid } satisfies TwilioOutboundMessage),
};
