// The callers of calls-concurrent.test.ts in their own process (as the relay benchmark's are): werift peers that
// each POST an offer to /v1/realtime/calls with their `ek_` secret, all at once, then report on stdout, as one
// JSON line, when each call had session.created and how much of its echo came back.
import { BrowserPeer } from '@s2s/webrtc/testing';
import { placeCalls } from './concurrent-calls.js';

const { url, secrets } = JSON.parse(process.argv[2]!) as { url: string; secrets: string[] };
const peers = secrets.map(() => new BrowserPeer());
const results = await placeCalls(url, peers, secrets);
process.stdout.write(`${JSON.stringify(results)}\n`);
await Promise.all(peers.map((b) => b.close()));
process.exit(0);
