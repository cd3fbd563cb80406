// The parent's part of the connection handoff (src/index.ts): handles pass only between a parent and its
// child, so the process that spawns the edge and the relays (scripts/start.mjs, the edge bench) carries each
// connection the edge hands over to the relay it names, and each relay's answer back. Plain JavaScript:
// scripts/start.mjs runs without a TypeScript loader.

/** @param {import('node:child_process').ChildProcess} edge @param {readonly import('node:child_process').ChildProcess[]} relays */
export function brokerHandoffs(edge, relays) {
  // A channel that closes while a message is on its way is the same as a gone process: the callback keeps the
  // failed write from being an 'error' event.
  const toEdge = (message) => {
    if (edge.connected) edge.send(message, () => {});
  };
  edge.on('message', (m, handle) => {
    if (m?.type !== 's2s:handoff' || !handle) return;
    const relay = relays[m.relay];
    if (!relay?.connected) {
      handle.close();
      return toEdge({ type: 's2s:handoff-failed', id: m.id });
    }
    // Once written to the relay's channel the connection is the relay's (the kernel holds it in flight):
    // this process lets go of its copy.
    relay.send(m, handle, (err) => {
      handle.close();
      if (err) toEdge({ type: 's2s:handoff-failed', id: m.id });
    });
  });
  relays.forEach((relay, i) => {
    relay.on('message', (m) => {
      if (m?.type === 's2s:handoff-done') toEdge(m);
    });
    relay.once('disconnect', () => toEdge({ type: 's2s:relay-gone', relay: i }));
  });
}
