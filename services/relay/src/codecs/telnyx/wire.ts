import { TelnyxInboundMessage, type TelnyxOutboundMessage } from '@s2s/contract';
import { readInbound, type PhoneWire } from '../phone/wire.js';

const EVENTS = TelnyxInboundMessage.options.map((o) => o.shape.event.value);

/** Telnyx media streaming (bidirectional RTP mode, PCMU): the messages of its documentation. */
export const telnyxWire: PhoneWire = {
  provider: 'telnyx',
  mulaw: 'PCMU',
  parse: (text) =>
    readInbound(text, TelnyxInboundMessage, EVENTS, (m, shared) => {
      if (m.event === 'start')
        return {
          kind: 'start',
          streamId: m.stream_id,
          callId: m.start.call_control_id,
          parameters: m.start.custom_parameters ?? {},
          encoding: m.start.media_format.encoding,
          sampleRate: m.start.media_format.sample_rate,
        };
      if (m.event === 'error') return { kind: 'error', code: m.payload.code, title: m.payload.title };
      return shared(m);
    }),
  media: (_streamId, payload) => JSON.stringify({ event: 'media', media: { payload } } satisfies TelnyxOutboundMessage),
  mark: (_streamId, name) => JSON.stringify({ event: 'mark', mark: { name } } satisfies TelnyxOutboundMessage),
  clear: () => JSON.stringify({ event: 'clear' } satisfies TelnyxOutboundMessage),
};
