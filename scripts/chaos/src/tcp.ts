// The kernel's queues of loopback TCP connections, from the text of /proc/net/tcp (docs/chaos.md, "Input a
// vanished client sent that no relay could read"). Reading the file takes tens of ms on a machine with
// thousands of sockets: fine once per kill, too slow at every vanish (it would change what it measures).

/** Send and receive queues (bytes) of the connection from `localPort` to `remotePort`; null when not listed. */
export function tcpQueues(table: string, localPort: number, remotePort: number): { tx: number; rx: number } | null {
  const portOf = (address: string): number => Number.parseInt(address.slice(address.lastIndexOf(':') + 1), 16);
  for (const line of table.split('\n')) {
    // sl local_address rem_address st tx_queue:rx_queue ...; addresses are HEXADDR:HEXPORT
    const f = line.trim().split(/\s+/);
    if (f.length < 5 || !/^\d+:$/.test(f[0]!)) continue;
    if (portOf(f[1]!) !== localPort || portOf(f[2]!) !== remotePort) continue;
    const [tx, rx] = f[4]!.split(':').map((q) => Number.parseInt(q, 16));
    return { tx: tx!, rx: rx! };
  }
  return null;
}

/**
 * Bytes a client wrote that its peer's process has not read: unacknowledged in the client's send queue plus
 * acknowledged but unread in the peer's receive queue (both ends are on this machine).
 */
export function unreadByPeer(table: string, client: { local: number; remote: number }): number {
  const mine = tcpQueues(table, client.local, client.remote);
  const theirs = tcpQueues(table, client.remote, client.local);
  return (mine?.tx ?? 0) + (theirs?.rx ?? 0);
}
