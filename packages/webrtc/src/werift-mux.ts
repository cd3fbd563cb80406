import { Candidate, candidateFoundation, candidatePriority, type Connection, type Protocol, type RTCPeerConnection } from 'werift';
import type { MuxProtocol, UdpMux } from './udp-mux.js';

/**
 * The one poke at werift's private fields (see README.md): werift opens a UDP socket per ICE agent,
 * and the gateway needs every call on one port. Before the answer is gathered, each ICE agent of `pc`
 * gets, instead of its own sockets, a protocol on the shared socket and host candidates at the
 * announced addresses. Checked against werift 0.25.2 (pinned): `getCandidatePromises`, `ensureProtocol`,
 * `protocols` and `appendLocalCandidate` of `Connection` in lib/ice/src/ice.js.
 */
interface ConnectionInternals {
  localUsername: string;
  localPassword: string;
  generation: number;
  protocols: Protocol[];
  getCandidatePromises: (addresses: string[], timeout?: number) => Promise<Candidate | undefined>[];
  ensureProtocol: (protocol: Protocol) => void;
  appendLocalCandidate: (candidate: Candidate) => void;
}

/** Call after setRemoteDescription and before setLocalDescription; returns the protocols it installed. */
export function bindToMux(pc: RTCPeerConnection, mux: UdpMux, addresses: readonly string[]): MuxProtocol[] {
  const installed: MuxProtocol[] = [];
  for (const transport of pc.iceTransports) {
    const connection = transport.connection as Connection;
    const internals = connection as unknown as ConnectionInternals;
    if (typeof internals.getCandidatePromises !== 'function' || typeof internals.ensureProtocol !== 'function') {
      throw new Error('werift internals changed: the UDP mux needs ice.js Connection.getCandidatePromises');
    }
    const protocol = mux.protocolFor(internals.localUsername, internals.localPassword);
    installed.push(protocol);
    internals.getCandidatePromises = () => {
      internals.ensureProtocol(protocol);
      internals.protocols.push(protocol);
      const candidates = addresses.map(
        (address, i) =>
          new Candidate(
            candidateFoundation('host', 'udp', address),
            1,
            'udp',
            // Earlier addresses are preferred: the operator lists the public one first.
            candidatePriority('host', { transport: 'udp' }) - i,
            address,
            mux.port,
            'host',
            undefined,
            undefined,
            undefined,
            internals.generation,
            internals.localUsername,
          ),
      );
      protocol.localCandidate = candidates[0];
      protocol.localIp = addresses[0];
      for (const c of candidates) internals.appendLocalCandidate(c);
      return candidates.map((c) => Promise.resolve(c));
    };
  }
  return installed;
}
