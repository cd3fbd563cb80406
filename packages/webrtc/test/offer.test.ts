import t from 'tap';
import { SdpOfferError } from '@s2s/core';
import { checkOffer } from '../src/index.js';

/** An offer as Chromium 120+ writes it (trimmed of the extmap and rtcp-fb lines that do not matter here). */
const CHROMIUM = [
  'v=0',
  'o=- 4611731400430051336 2 IN IP4 127.0.0.1',
  's=-',
  't=0 0',
  'a=group:BUNDLE 0 1',
  'a=extmap-allow-mixed',
  'a=msid-semantic: WMS',
  'm=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126',
  'c=IN IP4 0.0.0.0',
  'a=rtcp:9 IN IP4 0.0.0.0',
  'a=ice-ufrag:Yx3p',
  'a=ice-pwd:8Ekw1qSF9J7ZP1Bs3q+fEH2s',
  'a=ice-options:trickle',
  'a=fingerprint:sha-256 4B:3C:15:2E:4F:30:E9:3B:F6:D1:EA:6C:A0:8F:19:AE:AE:4A:FF:62:97:9A:50:87:1C:F1:46:36:DA:0E:63:04',
  'a=setup:actpass',
  'a=mid:0',
  'a=sendrecv',
  'a=rtcp-mux',
  'a=rtpmap:111 opus/48000/2',
  'a=fmtp:111 minptime=10;useinbandfec=1',
  'a=rtpmap:63 red/48000/2',
  'a=rtpmap:9 G722/8000',
  'a=rtpmap:0 PCMU/8000',
  'a=rtpmap:8 PCMA/8000',
  'm=application 9 UDP/DTLS/SCTP webrtc-datachannel',
  'c=IN IP4 0.0.0.0',
  'a=ice-ufrag:Yx3p',
  'a=ice-pwd:8Ekw1qSF9J7ZP1Bs3q+fEH2s',
  'a=ice-options:trickle',
  'a=fingerprint:sha-256 4B:3C:15:2E:4F:30:E9:3B:F6:D1:EA:6C:A0:8F:19:AE:AE:4A:FF:62:97:9A:50:87:1C:F1:46:36:DA:0E:63:04',
  'a=setup:actpass',
  'a=mid:1',
  'a=sctp-port:5000',
  'a=max-message-size:262144',
  '',
].join('\r\n');

function problem(sdp: unknown): string | undefined {
  try {
    checkOffer(sdp);
    return undefined;
  } catch (err) {
    if (!(err instanceof SdpOfferError)) throw err;
    return err.problem;
  }
}

t.test("Chromium's offer is taken", async (t) => {
  t.same(checkOffer(CHROMIUM), { opusPayloadType: 111, audioMid: '0', dataMid: '1' });
  t.same(checkOffer(CHROMIUM.replace(/\r\n/g, '\n')).opusPayloadType, 111, 'bare LF line ends too');
});

t.test('refusals name the check that failed', async (t) => {
  t.equal(problem(undefined), 'malformed');
  t.equal(problem(42), 'malformed');
  t.equal(problem('   '), 'malformed');
  t.equal(problem('{"type":"offer"}'), 'malformed');
  t.equal(problem(CHROMIUM.replace('v=0', 'v=0\r\nthis is not sdp')), 'malformed');
  t.equal(problem(CHROMIUM.replace('m=audio 9 ', 'm=audio nine ')), 'malformed');
  t.equal(problem(CHROMIUM.replace(/a=fingerprint:.*\r\n/g, '')), 'malformed');
  t.equal(problem(CHROMIUM + 'a=x\r\n'.repeat(15_000)), 'too_large');
  t.equal(problem(CHROMIUM.replace(/m=audio[\s\S]*?(?=m=application)/, '')), 'no_audio');
  t.equal(problem(CHROMIUM.replace('m=audio', 'm=video')), 'no_audio');
  t.equal(problem(CHROMIUM.replace(/m=application[\s\S]*$/, '')), 'no_data_channel');
  t.equal(problem(CHROMIUM.replace('webrtc-datachannel', 'something')), 'no_data_channel');
  t.equal(problem(CHROMIUM.replace('a=rtpmap:111 opus/48000/2', 'a=rtpmap:111 ISAC/16000')), 'unsupported_codec');
  t.equal(problem(CHROMIUM.replace(' 111 63', ' 63')), 'unsupported_codec', 'Opus mapped but not offered');
  t.equal(problem(CHROMIUM.replace('RTP/SAVPF', 'RTP/AVP')), 'unsupported_codec', 'plain RTP: no SRTP');
  t.equal(problem(CHROMIUM.replace(/a=ice-ufrag:.*\r\n/g, '')), 'no_ice_credentials');
});

t.test('an SdpOfferError is a 400 invalid_request of the one error model', async (t) => {
  const err = new SdpOfferError('no_audio', 'x');
  t.equal(err.code, 'invalid_request');
  t.equal(err.retryable, false);
});
