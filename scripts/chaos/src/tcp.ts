// What a TCP socket has handed to the kernel but its peer has not acknowledged yet. An abortive close (a RST:
// the socket is destroyed with received data unread) discards it, so the peer can never read it.
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';

const TABLES = ['/proc/net/tcp', '/proc/net/tcp6'];

/**
 * The send queue (`tx_queue`: bytes sent and not yet acknowledged, or not yet sent) of the connection from
 * `localPort` to `remotePort` in the text of /proc/net/tcp or /proc/net/tcp6; null when it is not listed.
 */
export function txQueue(table: string, localPort: number, remotePort: number): number | null {
  for (const line of table.split('\n')) {
    // sl local_address rem_address st tx_queue:rx_queue ...; addresses are HEXADDR:HEXPORT
    const f = line.trim().split(/\s+/);
    if (f.length < 5 || !/^\d+:$/.test(f[0] as string)) continue;
    if (portOf(f[1] as string) !== localPort || portOf(f[2] as string) !== remotePort) continue;
    const tx = (f[4] as string).split(':')[0] as string;
    return Number.parseInt(tx, 16);
  }
  return null;
}

function portOf(address: string): number {
  return Number.parseInt(address.slice(address.lastIndexOf(':') + 1), 16);
}

/**
 * Bytes written to `socket` that its peer's TCP has not acknowledged: those still in Node's buffers plus
 * the kernel's send queue (Linux only: null where /proc/net is not readable or the socket is not listed).
 * A write the kernel took only in part counts in both: an upper bound by at most that write.
 */
export function unacknowledgedBytes(socket: Socket): number | null {
  const { localPort, remotePort } = socket;
  if (localPort === undefined || remotePort === undefined) return null;
  for (const path of TABLES) {
    let table: string;
    try {
      table = readFileSync(path, 'utf8');
    } catch {
      continue;
    }
    const queued = txQueue(table, localPort, remotePort);
    if (queued !== null) return queued + socket.writableLength;
  }
  return null;
}
