// The Node entry: everything of the browser entry, with the realtime socket opened by `ws` (the credential in
// `Authorization`, a refused upgrade read as its ErrorResponse). Browsers (bundlers' "browser" condition)
// get src/browser.ts, which imports nothing of Node.
import { openWsSocket } from './node-socket.js';
import { useNodeSockets } from './websocket.js';

useNodeSockets(openWsSocket);

export * from './browser.js';
