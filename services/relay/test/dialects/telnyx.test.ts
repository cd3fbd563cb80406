// Telnyx media streaming (codecs/telnyx) runs the shared dialect suite.
import t from 'tap';
import { FakeTelnyx, TELNYX_STREAM } from '../phone/fakes.js';
import { phoneHarness } from './phone.js';
import { dialectSuite } from './suite.js';

dialectSuite(
  t,
  phoneHarness(
    'telnyx',
    TELNYX_STREAM,
    (url) => new FakeTelnyx(url),
    (payload) => ({
      event: 'media',
      sequence_number: '2',
      media: { track: 'inbound', chunk: '1', timestamp: '0', payload },
      stream_id: TELNYX_STREAM,
    }),
    { stream_id: TELNYX_STREAM },
  ),
);
