// A stand-in relay process for the handoff tests: a WebSocket echo server that listens on a port (the proxy
// path) and serves connections handed over on its IPC channel (@s2s/handoff). Its first frame says what it saw.
// RELAY_NAME names it; RELAY_HOLD=1 makes it take handed-over connections and never answer them (it tells its
// parent 'fixture:held'), as a relay that dies in the middle of an upgrade.
import http from 'node:http';
import type { Socket } from 'node:net';
import { injectConnection, serveHandoffs } from '@s2s/handoff';
import { WebSocketServer } from 'ws';

const name = process.env.RELAY_NAME ?? 'relay';
const hold = process.env.RELAY_HOLD === '1';
const adopted = new WeakSet<Socket>();
const held: Socket[] = [];
const server = http.createServer((_req, res) => {
  res.writeHead(400, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ from: name }));
});
const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, handleProtocols: (offered) => [...offered][0] ?? false });
server.on('upgrade', (req, socket, head) =>
  wss.handleUpgrade(req, socket, head, (ws) => {
    ws.send(
      JSON.stringify({
        from: name,
        via: adopted.has(req.socket) ? 'handoff' : 'port',
        url: req.url,
        headers: req.headers,
        remotePort: req.socket.remotePort,
        protocol: ws.protocol,
      }),
    );
    ws.on('message', (data) => ws.send(`${name}:${String(data)}`));
  }),
);
serveHandoffs(async (socket, request) => {
  if (hold) {
    held.push(socket);
    process.send?.({ type: 'fixture:held' }, undefined, undefined, () => {});
    return new Promise<void>(() => {});
  }
  adopted.add(socket);
  // ws answers an upgrade synchronously: the request is answered when it has been read.
  injectConnection(server, socket, request);
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  console.log(JSON.stringify({ msg: 'fixture relay listening', port: typeof address === 'object' && address ? address.port : 0 }));
});
process.on('SIGTERM', () => process.exit(0));
