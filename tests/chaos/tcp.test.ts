// Why a vanished client's last input can go unbilled (docs/chaos.md, "Input a vanished client sent that no
// relay could read"): its close is abortive (a RST), which discards what the peer's TCP had not acknowledged,
// and a peer that writes to the reset connection before reading loses what it had acknowledged and not read.
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import t, { type Test } from 'tap';
import { tcpQueues, unreadByPeer, waitFor } from '@s2s/chaos';

/** The send queue of the connection from `localPort` to `remotePort`; null when it is not listed. */
function txQueue(table: string, localPort: number, remotePort: number): number | null {
  return tcpQueues(table, localPort, remotePort)?.tx ?? null;
}

/** Bytes written to `socket` that the peer's TCP has not acknowledged (the kernel's send queue; Node's is empty here). */
function unacknowledgedBytes(socket: net.Socket): number | null {
  return txQueue(readFileSync('/proc/net/tcp', 'utf8'), socket.localPort!, socket.remotePort!);
}

const TABLE = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:D431 0100007F:1F90 01 00001937:0000104B 01:00000014 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F90 0100007F:D431 01 00000000:00003245 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1
`;

t.test('txQueue reads the send queue of the connection between two ports', async (t) => {
  t.equal(txQueue(TABLE, 0xd431, 0x1f90), 0x1937, 'the client side');
  t.equal(txQueue(TABLE, 0x1f90, 0xd431), 0, 'the server side');
  t.equal(txQueue(TABLE, 0x1f90, 0x1f91), null, 'not listed');
  t.same(tcpQueues(TABLE, 0x1f90, 0xd431), { tx: 0, rx: 0x3245 }, 'the server side has bytes it did not read');
  t.equal(unreadByPeer(TABLE, { local: 0xd431, remote: 0x1f90 }), 0x1937 + 0x3245, 'in flight and unread, both ends');
});

const LINUX = existsSync('/proc/net/tcp') ? false : 'needs /proc/net/tcp (Linux)';

/** A loopback connection whose server does not read, after 1 MiB written by the client and taken by its kernel. */
async function stalledPair(t: Test) {
  const server = net.createServer();
  t.teardown(() => server.close());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  // The client reads nothing either: with the server's bytes unread, its close is abortive (a RST).
  client.pause();
  const peer = await accepted;
  peer.pause();
  peer.write(Buffer.alloc(1000));
  let read = 0;
  peer.on('data', (b: Buffer) => (read += b.length));
  peer.on('error', () => {});
  const closed = new Promise<void>((resolve) => peer.once('close', () => resolve()));
  let done = 0;
  for (let i = 0; i < 16; i++) client.write(Buffer.alloc(65_536, 1), () => done++);
  t.ok(await waitFor(() => done === 16 && client.writableLength === 0, 10_000), 'every write handed to the kernel');
  let last: number | null = -1;
  // The server's window is full: once the queue stops moving, nothing more will be acknowledged.
  t.ok(await waitFor(() => last === (last = unacknowledgedBytes(client)), 10_000), 'the send queue settled');
  return { client, peer, closed, read: () => read };
}

t.test('an abortive close discards what the peer did not acknowledge; the peer reads the rest', { skip: LINUX }, async (t) => {
  const { client, peer, closed, read } = await stalledPair(t);
  const unacked = unacknowledgedBytes(client);
  client.destroy();
  peer.resume();
  await closed;
  t.ok(unacked !== null && unacked > 0, `${unacked} bytes not acknowledged at the close`);
  t.equal(read(), client.bytesWritten - (unacked ?? 0), 'the peer read exactly what it had acknowledged');
});

t.test('a write after the reset loses what the peer acknowledged and had not read yet', { skip: LINUX }, async (t) => {
  const { client, peer, closed, read } = await stalledPair(t);
  const acked = client.bytesWritten - (unacknowledgedBytes(client) ?? client.bytesWritten);
  const ports = { local: peer.localPort!, remote: peer.remotePort! };
  client.destroy();
  // The reset has arrived once the peer's kernel dropped the connection from its table.
  t.ok(
    await waitFor(() => txQueue(readFileSync('/proc/net/tcp', 'utf8'), ports.local, ports.remote) === null, 10_000),
    'the reset arrived',
  );
  // Node had read this much from the kernel before the pause took hold; the rest waits in the kernel.
  const inNode = peer.readableLength;
  // As the relay sending the next delta of an answer: the write fails and Node closes the socket unread.
  peer.write(Buffer.alloc(1000));
  peer.resume();
  await closed;
  t.ok(inNode < acked, `${acked} bytes acknowledged before the close, ${inNode} of them read by Node`);
  t.equal(read(), inNode, 'the peer gets only what Node had read: the kernel flushed the rest with the socket');
});
