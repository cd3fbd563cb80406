// The two faults of werift 0.25.2 that patches/werift@0.25.2.patch mends (see README.md, "Patched werift"),
// each shown on the wire between the endpoint and the werift browser stand-in. Without the patch both fail.
import t, { type Test } from 'tap';
import { WebRtcEndpoint, type WebRtcCall } from '../src/index.js';
import { BrowserPeer, UdpHop, waitFor, type HopDirection, type HopFilter } from '../src/testing.js';

interface DtlsRecord {
  type: number;
  epoch: number;
  seq: number;
  bytes: Buffer;
}

/** The DTLS records of a datagram (RFC 6347 §4.1: 13-byte headers); none when it is not DTLS (STUN, SRTP). */
function dtlsRecords(data: Buffer): DtlsRecord[] {
  const first = data[0] ?? 0;
  if (first < 20 || first > 63) return [];
  const records: DtlsRecord[] = [];
  for (let pos = 0; pos + 13 <= data.length;) {
    const end = pos + 13 + data.readUInt16BE(pos + 11);
    records.push({ type: data[pos]!, epoch: data.readUInt16BE(pos + 3), seq: data.readUIntBE(pos + 5, 6), bytes: data.subarray(pos, end) });
    pos = end;
  }
  return records;
}

/** An endpoint and a connected browser stand-in whose every datagram crosses a hop that `filter` sees first. */
async function connectedCall(t: Test, filter: HopFilter): Promise<{ call: WebRtcCall; b: BrowserPeer; received: string[] }> {
  const ep = await WebRtcEndpoint.start({ port: 0, host: '127.0.0.1', announcedAddresses: ['127.0.0.1'] });
  t.teardown(() => ep.close());
  const hop = await UdpHop.open(ep.port, filter);
  t.teardown(() => hop.close());
  const b = new BrowserPeer();
  t.teardown(() => b.close());
  const { sdp, call } = await ep.answer(await b.offer());
  const received: string[] = [];
  call.setHandlers({ message: (m) => received.push(m.toString()) });
  await b.accept(sdp.replace(new RegExp(` ${ep.port} typ host`, 'g'), ` ${hop.port} typ host`));
  await b.connected();
  await waitFor(() => call.state === 'connected', 5000, 'call connected');
  return { call, b, received };
}

t.test('DTLS: the Finished record opens epoch 1 at sequence number 0, and no later record reuses a number', async (t) => {
  // BoringSSL (Chromium) drops a record whose (epoch, sequence number) it has seen (RFC 6347 §4.1.2.6, anti-replay).
  // Unpatched, werift sent its Finished with the epoch-0 counter's next number (6 as a client) and then restarted
  // the counter: Chromium dropped the endpoint's sixth SCTP packet of every call (the DCEP ack of `oai-events`).
  const seen: Record<HopDirection, DtlsRecord[]> = { to_browser: [], to_endpoint: [] };
  const { call, b, received } = await connectedCall(t, (data, direction) => {
    seen[direction].push(...dtlsRecords(data));
    return true;
  });
  for (let i = 0; i < 20; i++) {
    call.send(JSON.stringify({ type: 'ping', i }));
    b.channel.send(JSON.stringify({ type: 'pong', i }));
  }
  await waitFor(() => b.messages.length === 20 && received.length === 20, 5000, '20 messages each way');

  // The endpoint is the DTLS client (its answer says setup:active), the stand-in the server: both Finished flights.
  for (const direction of ['to_browser', 'to_endpoint'] as const) {
    const epoch1 = seen[direction].filter((r) => r.epoch === 1);
    t.ok(epoch1.length > 20, `${direction}: ${epoch1.length} records of epoch 1`);
    t.match(epoch1[0], { type: 22, seq: 0 }, `${direction}: the first record of epoch 1 is the Finished, sequence number 0`);
    const bySeq = new Map<number, Buffer>();
    const reused: number[] = [];
    for (const r of epoch1) {
      const earlier = bySeq.get(r.seq);
      // The same record sent again (a retransmitted flight) is not a reuse; another record under its number is.
      if (earlier !== undefined && !earlier.equals(r.bytes)) reused.push(r.seq);
      bySeq.set(r.seq, r.bytes);
    }
    t.same(reused, [], `${direction}: no sequence number of epoch 1 names two records`);
  }
  await b.close();
  await waitFor(() => call.state === 'closed', 3000, 'closed');
});

t.test('SCTP: after a T3-rtx timeout, chunks the peer had gap-acked do not leak into the flight size', async (t) => {
  // Unpatched, T3-rtx expiry marked the gap-acked chunks for retransmission too; resent, they counted in the flight
  // size again, and the cumulative ack that followed took off only the chunks not gap-acked. With the leak at or
  // above the congestion window, nothing more was sent and no timer was left to send it: the channel stalled for
  // good (Chromium saw it after the record that the DTLS fault above dropped).
  let dropNext = false;
  let dropped = 0;
  const { call, b } = await connectedCall(t, (data, direction) => {
    if (dropNext && direction === 'to_browser' && data[0] === 23) {
      dropNext = false;
      dropped++;
      return false;
    }
    return true;
  });
  call.send('opening');
  await waitFor(() => b.messages.length === 1, 3000, 'the opening message');
  // Quiet now (werift acks each packet at once; the next heartbeat is 30 s away): the next application record the
  // endpoint sends carries the 1-byte message, and the network loses it.
  await new Promise((r) => setTimeout(r, 200));
  dropNext = true;
  const sentAt = performance.now();
  call.send('a');
  // Two of 600 bytes (Chromium's case: two session.updated), which the stand-in gap-acks at once: together more
  // than the one-packet window (1160 bytes) that T3-rtx leaves.
  call.send('0'.repeat(600));
  call.send('1'.repeat(600));
  await waitFor(() => b.messages.length === 4, 8000, 'the 3 messages, the lost one retransmitted');
  const recoveredMs = performance.now() - sentAt;
  t.equal(dropped, 1, 'one DTLS record was lost on the way to the browser');
  t.ok(recoveredMs >= 900, `the lost chunk came back with T3-rtx (RTO ≥ 1 s): ${recoveredMs.toFixed(0)} ms`);
  t.same(b.messages.slice(1), ['a', '0'.repeat(600), '1'.repeat(600)], 'in order');

  call.send('after the timeout');
  await waitFor(() => b.messages.length === 5, 5000, 'a message after the timeout');
  t.equal(b.messages[4], 'after the timeout', 'the channel still delivers');
  await b.close();
  await waitFor(() => call.state === 'closed', 3000, 'closed');
});
