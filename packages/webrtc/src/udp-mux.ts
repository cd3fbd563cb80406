import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { Event, classes, methods, parseMessage, type Address, type Candidate, type Message, type Protocol } from 'werift';

/** Why a datagram was dropped unread: the endpoint counts each for its metrics. */
export type DropReason = 'garbage' | 'unknown_ufrag' | 'bad_integrity' | 'unknown_address';

/**
 * One UDP socket for every call (WEBRTC_UDP_PORT). A STUN binding request is routed by the local ICE
 * username fragment in its USERNAME and must carry a MESSAGE-INTEGRITY made with that call's password;
 * only then does its source address become the call's. DTLS, SRTP and SRTCP datagrams (RFC 7983's
 * first-byte ranges) go to the call that owns their source address; anything else is dropped.
 */
export class UdpMux {
  private readonly byUfrag = new Map<string, MuxProtocol>();
  private readonly byAddress = new Map<string, MuxProtocol>();
  private readonly onDrop: (reason: DropReason) => void;

  private constructor(
    private readonly socket: Socket,
    onDrop: (reason: DropReason) => void,
  ) {
    this.onDrop = onDrop;
    socket.on('message', (data, rinfo) => this.receive(data, rinfo));
    // A send to a vanished peer can surface as an ICMP error on the socket; it concerns one call, not the port.
    socket.on('error', () => undefined);
  }

  static async listen(opts: { port: number; host: string; onDrop?: (reason: DropReason) => void }): Promise<UdpMux> {
    const socket = createSocket({ type: opts.host.includes(':') ? 'udp6' : 'udp4' });
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(opts.port, opts.host, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    return new UdpMux(socket, opts.onDrop ?? (() => undefined));
  }

  get port(): number {
    return this.socket.address().port;
  }

  /** The protocol a call's ICE agent uses: registered under its local ufrag until `close()`. */
  protocolFor(localUfrag: string, localPassword: string): MuxProtocol {
    if (this.byUfrag.has(localUfrag)) throw new Error('ICE ufrag already registered');
    const protocol = new MuxProtocol(this, localUfrag, Buffer.from(localPassword, 'utf8'));
    this.byUfrag.set(localUfrag, protocol);
    return protocol;
  }

  /** @internal */
  unregister(protocol: MuxProtocol): void {
    if (this.byUfrag.get(protocol.localUfrag) === protocol) this.byUfrag.delete(protocol.localUfrag);
    for (const [key, p] of this.byAddress) if (p === protocol) this.byAddress.delete(key);
  }

  /** @internal */
  send(data: Buffer, addr: Address): Promise<void> {
    return new Promise((resolve) => this.socket.send(data, addr[1], addr[0], () => resolve()));
  }

  close(): Promise<void> {
    this.byUfrag.clear();
    this.byAddress.clear();
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }

  private receive(data: Buffer, rinfo: RemoteInfo): void {
    const first = data[0];
    const key = addressKey(rinfo.address, rinfo.port);
    if (first === undefined) return this.onDrop('garbage');
    if (first <= 3) return this.receiveStun(data, rinfo, key);
    if ((first >= 20 && first <= 63) || (first >= 128 && first <= 191)) {
      const owner = this.byAddress.get(key);
      if (owner === undefined) return this.onDrop('unknown_address');
      return owner.deliverData(data);
    }
    this.onDrop('garbage');
  }

  private receiveStun(data: Buffer, rinfo: RemoteInfo, key: string): void {
    const message = safeParse(data);
    if (message === undefined || message.messageClass !== classes.REQUEST || message.messageMethod !== methods.BINDING) {
      return this.onDrop('garbage');
    }
    const username = message.getAttributeValue('USERNAME') as unknown;
    const localUfrag = typeof username === 'string' ? username.split(':')[0] : undefined;
    const owner = localUfrag === undefined ? undefined : this.byUfrag.get(localUfrag);
    if (owner === undefined) return this.onDrop('unknown_ufrag');
    if (safeParse(data, owner.localPassword) === undefined) return this.onDrop('bad_integrity');
    this.byAddress.set(key, owner);
    owner.deliverRequest(message, [rinfo.address, rinfo.port], data);
  }
}

/** werift's ICE transport interface, backed by the shared socket. ICE-lite never sends requests. */
export class MuxProtocol implements Protocol {
  readonly type = 'udp';
  readonly onRequestReceived = new Event<[Message, Address, Buffer]>();
  readonly onDataReceived = new Event<[Buffer]>();
  localCandidate?: Candidate;
  localIp?: string;
  /** When the last datagram of this call arrived (ms, monotonic): the liveness check reads it. */
  lastReceivedAt = 0;
  private closed = false;

  constructor(
    private readonly mux: UdpMux,
    readonly localUfrag: string,
    readonly localPassword: Buffer,
  ) {}

  /** @internal */
  deliverRequest(message: Message, addr: Address, data: Buffer): void {
    if (this.closed) return;
    this.lastReceivedAt = performance.now();
    this.onRequestReceived.execute(message, addr, data);
  }

  /** @internal */
  deliverData(data: Buffer): void {
    if (this.closed) return;
    this.lastReceivedAt = performance.now();
    this.onDataReceived.execute(data);
  }

  async connectionMade(): Promise<void> {}

  async request(): Promise<[Message, Address]> {
    throw new Error('an ICE-lite agent sends no STUN requests');
  }

  async sendStun(message: Message, addr: Address): Promise<void> {
    if (!this.closed) await this.mux.send(message.bytes, addr);
  }

  async sendData(data: Buffer, addr: Address): Promise<void> {
    if (!this.closed) await this.mux.send(data, addr);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.mux.unregister(this);
  }
}

function addressKey(address: string, port: number): string {
  return `${address}|${port}`;
}

function safeParse(data: Buffer, integrityKey?: Buffer): Message | undefined {
  try {
    return parseMessage(data, integrityKey);
  } catch {
    return undefined;
  }
}
