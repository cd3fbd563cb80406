import { TelnyxInboundMessage, type TelnyxOutboundMessage } from '@s2s/contract';
import { invalidReason, jsonOf, type PhoneInbound, type PhoneWire } from '../phone/wire.js';

const EVENTS = TelnyxInboundMessage.options.map((o) => o.shape.event.value);

/** Telnyx media streaming (bidirectional RTP mode, PCMU): the messages of its documentation. */
export const telnyxWire: PhoneWire = {
  provider: 'telnyx',
  mulaw: 'PCMU',
  parse(text): PhoneInbound {
    const msg = jsonOf(text);
    const parsed = TelnyxInboundMessage.safeParse(msg);
    if (!parsed.success) return { kind: 'invalid', reason: invalidReason(msg, EVENTS) };
    const m = parsed.data;
    switch (m.event) {
      case 'connected':
        return { kind: 'connected' };
      case 'start':
        return {
          kind: 'start',
          streamId: m.stream_id,
          callId: m.start.call_control_id,
          parameters: m.start.custom_parameters ?? {},
          encoding: m.start.media_format.encoding,
          sampleRate: m.start.media_format.sample_rate,
        };
      case 'media':
        return { kind: 'media', track: m.media.track, payload: m.media.payload };
      case 'dtmf':
        return { kind: 'dtmf', digit: m.dtmf.digit };
      case 'mark':
        return { kind: 'mark', name: m.mark.name };
      case 'stop':
        return { kind: 'stop' };
      case 'error':
        return { kind: 'error', code: m.payload.code, title: m.payload.title };
    }
  },
  media: (_streamId, payload) => JSON.stringify({ event: 'media', media: { payload } } satisfies TelnyxOutboundMessage),
  mark: (_streamId, name) => JSON.stringify({ event: 'mark', mark: { name } } satisfies TelnyxOutboundMessage),
  clear: () => JSON.stringify({ event: 'clear' } satisfies TelnyxOutboundMessage),
};
