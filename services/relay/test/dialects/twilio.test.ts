// Twilio Media Streams (codecs/twilio) run the shared dialect suite.
import t from 'tap';
import { FakeTwilio, SID } from '../phone/fakes.js';
import { phoneHarness } from './phone.js';
import { dialectSuite } from './suite.js';

dialectSuite(
  t,
  phoneHarness(
    'twilio',
    SID,
    (url) => new FakeTwilio(url),
    (payload) => ({
      event: 'media',
      sequenceNumber: '2',
      media: { track: 'inbound', chunk: '1', timestamp: '0', payload },
      streamSid: SID,
    }),
    { streamSid: SID },
  ),
);
