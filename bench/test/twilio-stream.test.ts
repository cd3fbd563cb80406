import t from 'tap';
import { G711_FRAME_BYTES } from '@s2s/audio';
import { TELEPHONY_SECRET_PARAMETER, TwilioInboundMessage } from '@s2s/contract';
import {
  markName,
  muLawFrameBase64,
  twilioConnected,
  twilioIds,
  twilioMark,
  twilioMedia,
  twilioOutboundKind,
  twilioStart,
  twilioStop,
} from '../relay/twilio-stream.js';

// The phone mode's client writes its media messages as templates: each must be a message Twilio would send.
t.test('every message of the phone mode is one of Twilio’s, as the contract reads them', async (t) => {
  const ids = twilioIds(7);
  const parse = (text: string) => TwilioInboundMessage.parse(JSON.parse(text));
  t.equal(parse(twilioConnected()).event, 'connected');
  const start = parse(twilioStart(ids, 'ek_secret'));
  t.ok(start.event === 'start' && start.start.customParameters?.[TELEPHONY_SECRET_PARAMETER] === 'ek_secret', 'the secret in the start');
  t.ok(start.event === 'start' && start.start.mediaFormat.encoding === 'audio/x-mulaw' && start.start.mediaFormat.sampleRate === 8000);
  const payload = muLawFrameBase64();
  t.equal(Buffer.from(payload, 'base64').length, G711_FRAME_BYTES, '20 ms of μ-law');
  const third = parse(twilioMedia(ids, 2, payload));
  t.same(third, {
    event: 'media',
    sequenceNumber: '4',
    streamSid: ids.streamSid,
    media: { track: 'inbound', chunk: '3', timestamp: '40', payload },
  });
  t.same(parse(twilioMark(ids, 9, 'resp_1')), { event: 'mark', sequenceNumber: '9', streamSid: ids.streamSid, mark: { name: 'resp_1' } });
  t.equal(parse(twilioStop(ids, 10)).event, 'stop');
});

t.test('the gateway’s messages are told apart by their event', async (t) => {
  const media = Buffer.from(JSON.stringify({ event: 'media', streamSid: 'MZ1', media: { payload: 'AA==' } }));
  const mark = Buffer.from(JSON.stringify({ event: 'mark', streamSid: 'MZ1', mark: { name: 'resp_9' } }));
  t.equal(twilioOutboundKind(media), 'media');
  t.equal(twilioOutboundKind(mark), 'mark');
  t.equal(markName(mark), 'resp_9');
  t.equal(twilioOutboundKind(Buffer.from(JSON.stringify({ event: 'clear', streamSid: 'MZ1' }))), 'other');
});
