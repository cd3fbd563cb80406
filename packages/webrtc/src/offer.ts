import { SdpOfferError } from '@s2s/core';

/** An offer larger than this is refused before parsing; a browser's offer is 3–6 KB. */
export const MAX_OFFER_BYTES = 64 * 1024;

/** What the gateway needs from a valid offer. */
export interface OfferSummary {
  /** The offer's payload type for Opus (Chromium: 111). */
  readonly opusPayloadType: number;
  /** The mid of the audio section the call uses. */
  readonly audioMid: string | undefined;
  /** The mid of the data channel section. */
  readonly dataMid: string | undefined;
}

interface Section {
  readonly media: string;
  readonly proto: string;
  readonly formats: readonly string[];
  readonly attributes: readonly string[];
}

const LINE = /^[a-z]=/;

/**
 * Checks an SDP offer before any WebRTC work (decisions.md, "WebRTC"): well formed, one Opus audio
 * section, the SCTP data channel, ICE credentials and a DTLS fingerprint. Throws SdpOfferError, a 400.
 */
export function checkOffer(sdp: unknown): OfferSummary {
  if (typeof sdp !== 'string' || sdp.trim() === '') throw new SdpOfferError('malformed', 'The body must be an SDP offer.');
  if (Buffer.byteLength(sdp) > MAX_OFFER_BYTES) {
    throw new SdpOfferError('too_large', `The SDP offer is larger than ${MAX_OFFER_BYTES} bytes.`);
  }
  const lines = sdp.split(/\r?\n/).filter((l) => l !== '');
  if (lines[0] !== 'v=0' || !lines.every((l) => LINE.test(l))) {
    throw new SdpOfferError('malformed', 'The body is not a valid SDP offer (RFC 8866).');
  }
  const session: string[] = [];
  const sections: { media: string; proto: string; formats: string[]; attributes: string[] }[] = [];
  for (const line of lines) {
    if (line.startsWith('m=')) {
      const [media, port, proto, ...formats] = line.slice(2).split(' ');
      if (media === undefined || port === undefined || proto === undefined || !/^\d+(\/\d+)?$/.test(port)) {
        throw new SdpOfferError('malformed', 'The SDP offer has a malformed m= line.');
      }
      sections.push({ media, proto, formats, attributes: [] });
    } else if (line.startsWith('a=')) {
      (sections.at(-1)?.attributes ?? session).push(line.slice(2));
    }
  }
  const audio = sections.filter((s) => s.media === 'audio');
  if (audio.length === 0) throw new SdpOfferError('no_audio', 'The SDP offer has no audio section; offer one Opus audio track.');
  const data = sections.find((s) => s.media === 'application' && s.proto.endsWith('DTLS/SCTP') && s.formats.includes('webrtc-datachannel'));
  if (data === undefined) {
    throw new SdpOfferError('no_data_channel', 'The SDP offer has no data channel; create the "oai-events" data channel before the offer.');
  }
  const first = audio[0]!;
  const opusPayloadType = opusPayload(first);
  if (opusPayloadType === undefined) {
    throw new SdpOfferError(
      'unsupported_codec',
      "The SDP offer's audio section has no Opus codec; the gateway takes Opus (opus/48000/2) only.",
    );
  }
  for (const s of [first, data]) {
    if (attribute(s, session, 'ice-ufrag') === undefined || attribute(s, session, 'ice-pwd') === undefined) {
      throw new SdpOfferError('no_ice_credentials', 'The SDP offer has no ICE credentials (a=ice-ufrag, a=ice-pwd).');
    }
    if (attribute(s, session, 'fingerprint') === undefined) {
      throw new SdpOfferError('malformed', 'The SDP offer has no DTLS fingerprint (a=fingerprint).');
    }
  }
  return { opusPayloadType, audioMid: attribute(first, [], 'mid'), dataMid: attribute(data, [], 'mid') };
}

function opusPayload(section: Section): number | undefined {
  if (!section.proto.includes('RTP/SAVPF') && !section.proto.includes('RTP/SAVP')) return undefined;
  for (const a of section.attributes) {
    const m = /^rtpmap:(\d{1,3}) opus\/48000(\/2)?$/i.exec(a);
    if (m && section.formats.includes(m[1]!)) return Number(m[1]);
  }
  return undefined;
}

function attribute(section: Section, session: readonly string[], name: string): string | undefined {
  const prefix = `${name}:`;
  const found = section.attributes.find((a) => a.startsWith(prefix)) ?? session.find((a) => a.startsWith(prefix));
  return found?.slice(prefix.length);
}
