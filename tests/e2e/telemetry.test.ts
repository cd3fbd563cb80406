// Issue 12: one session through the real processes (local provider, relay, control plane, billing) with an
// in-process OTLP receiver. The session's trace_id finds the spans of every service; every bus message
// carries its trace context; spans carry the gateway's attributes and never a key or audio; each service's
// /metrics moves during the session.
import t, { type Test } from 'tap';
import { CreateKeyResponse, REALTIME_PROTOCOL, ResponseDoneEvent, VoiceSession } from '@s2s/contract';
import { pcmFrames, pcmSilence, pcmTone } from '@s2s/local-provider';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '@s2s/telemetry/testing';
import { Client, eventually } from '@s2s/testing';
import WebSocket from 'ws';
import { api, startStack, type Stack } from './stack.js';
import { hangUp, mintCall, offerCall } from './webrtc.js';

const MODEL = 'local/echo-1';

/** The value of one series (first match of its name and label filter) on a Prometheus text page; 0 when absent. */
function series(page: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of page.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const l = m[2] ?? '';
    if (Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`))) return Number(m[3]);
  }
  return 0;
}

async function scrape(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  return res.text();
}

async function connect(url: string, secret: string): Promise<Client> {
  const ws = new WebSocket(url, REALTIME_PROTOCOL, { headers: { Authorization: `Bearer ${secret}` }, perMessageDeflate: false });
  const client = new Client(ws);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`attach refused: ${res.statusCode}`)));
    ws.once('error', reject);
  });
  return client;
}

/** An in-process OTLP receiver (closed at teardown) and the environment that exports to it quickly. */
async function otlp(t: Test): Promise<{ receiver: OtlpReceiver; otel: Record<string, string> }> {
  const receiver = await startOtlpReceiver();
  t.teardown(() => receiver.close());
  const otel = {
    OTEL_SDK_DISABLED: 'false',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_METRIC_EXPORT_INTERVAL: '500',
  };
  return { receiver, otel };
}

t.test('one session, one trace: spans of every service, trace context on the bus, metrics that move', async (t) => {
  const { receiver, otel } = await otlp(t);
  const stack: Stack = await startStack(t, {
    provider: otel,
    relay: otel,
    controlPlane: otel,
    billing: { ...otel, HEALTH_PORT: '0' },
  });

  // Every message on the gateway's subjects, with its headers (JetStream publishes reach core subscribers).
  const seen: { subject: string; traceparent: string | undefined }[] = [];
  const sub = stack.bus.nc.subscribe(`${stack.prefix}.>`, {
    callback: (_err, msg) => {
      seen.push({ subject: msg.subject, traceparent: msg.headers?.get('traceparent') || undefined });
    },
  });
  t.teardown(() => sub.unsubscribe());

  const keyRes = await api<CreateKeyResponse>(stack, 'POST', '/admin/v1/keys', {
    admin: true,
    body: { balance_cents: 1000, label: 'obs' },
  });
  const key = CreateKeyResponse.parse(keyRes.body);
  const created = await api<VoiceSession>(stack, 'POST', '/v1/voice/sessions', {
    key: key.key,
    body: { model: MODEL, mode: 'speech_to_speech' },
  });
  t.equal(created.status, 201);
  const session = VoiceSession.parse(created.body);
  const traceId = session.trace_id;
  t.match(traceId, /^[0-9a-f]{32}$/);
  t.not(traceId, '0'.repeat(32), 'a sampled, real trace id');

  const client = await connect(session.realtime.url, key.key);
  await client.next('conversation.created');
  const tone = pcmTone(1000);
  for (const f of pcmFrames(Buffer.concat([tone, pcmSilence(500)]))) client.append(f);
  const done = ResponseDoneEvent.parse(await client.next('response.done'));
  t.equal(done.response.status, 'completed');

  // During the session: the relay holds it, counts frames, a connect and a time to first audio.
  const relayPage = await eventually(
    () => scrape(stack.relay.port),
    (p) => series(p, 's2s_relay_checkpoint_publish_duration_count') > 0,
  );
  t.equal(series(relayPage, 's2s_relay_active_sessions'), 1, 'one active session');
  t.ok(series(relayPage, 's2s_relay_frames_total', { network_io_direction: 'receive' }) >= 30, 'frames in');
  t.ok(series(relayPage, 's2s_relay_frames_total', { network_io_direction: 'transmit' }) > 10, 'frames out');
  t.equal(series(relayPage, 's2s_relay_attaches_total'), 1, 'one attach');
  t.equal(series(relayPage, 's2s_relay_upstream_connect_duration_count', { gen_ai_provider_name: 'local' }), 1);
  t.equal(series(relayPage, 's2s_relay_time_to_first_audio_count', { gen_ai_request_model: MODEL }), 1);
  t.ok(series(relayPage, 's2s_relay_checkpoint_publish_duration_count') >= 1, 'checkpoint publish lag');

  const cpPage = await scrape(stack.controlPlane.port);
  t.equal(series(cpPage, 's2s_session_creates_total', { gen_ai_request_model: MODEL }), 1, 'one create');
  t.equal(series(cpPage, 's2s_session_reserved_cents_total'), session.billing.preauthorized_cents, 'reserved cents');
  t.equal(
    series(cpPage, 'http_server_request_duration_count', { http_route: '/v1/voice/sessions', http_response_status_code: '201' }),
    1,
    'requests by route and status',
  );

  // A refused attach is counted by its code.
  await connect(session.realtime.url, 'vr_sk_' + 'x'.repeat(40)).catch(() => undefined);
  const refusedPage = await scrape(stack.relay.port);
  t.equal(series(refusedPage, 's2s_relay_attaches_total', { error_type: 'invalid_vr_sk' }), 1, 'refusal by code');

  const ended = await api<VoiceSession>(stack, 'POST', `/v1/voice/sessions/${session.id}/end`, { key: key.key });
  t.equal(ended.status, 200);
  const settled = await eventually(
    () => api<VoiceSession>(stack, 'GET', `/v1/voice/sessions/${session.id}`, { key: key.key }),
    (r) => r.body.billing.reserved_cents === 0,
    15_000,
  );
  const billed = settled.body.usage.billed_cents;
  t.ok(billed > 0, 'billed');

  const billingPage = await eventually(
    () => scrape(stack.billing.port),
    (p) => series(p, 's2s_billing_settlements_total') >= 1,
  );
  t.ok(series(billingPage, 's2s_billing_checkpoints_folded_total') >= 1, 'checkpoints folded');
  t.equal(series(billingPage, 's2s_billing_settlements_total', { s2s_session_status: 'completed' }), 1);
  t.equal(series(billingPage, 's2s_billing_settlement_lag_count'), 1, 'end → settled latency');
  t.equal(series(billingPage, 's2s_billing_billed_cents_total'), billed, 'money');
  t.match(billingPage, /^s2s_billing_consumer_pending\{/m, 'consumer pending gauge');
  t.match(billingPage, /^s2s_billing_dead_lettered_total\{/m, 'dead letters counter');
  const afterEnd = await eventually(
    () => scrape(stack.relay.port),
    (p) => series(p, 's2s_relay_active_sessions') === 0,
  );
  t.equal(series(afterEnd, 's2s_relay_active_sessions'), 0, 'the session left the relay');

  // Every bus message of the session carries a trace context; checkpoints and the end request the session's.
  const ofSession = seen.filter((m) => m.subject.endsWith(`.${session.id}`));
  t.ok(
    ofSession.some((m) => m.subject.includes('.usage.checkpoint.')),
    'checkpoints seen',
  );
  t.ok(
    ofSession.some((m) => m.subject.includes('.session.end_requested.')),
    'end request seen',
  );
  t.ok(
    ofSession.some((m) => m.subject.includes('.session.settled.')),
    'settlement seen',
  );
  t.ok(
    ofSession.some((m) => m.subject.includes('.relay.attached.')),
    'attachment announcement seen',
  );
  for (const m of ofSession) {
    t.match(m.traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/, `${m.subject} carries traceparent`);
    if (!m.subject.includes('.session.settled.')) t.equal(m.traceparent?.slice(3, 35), traceId, `${m.subject} is in the session's trace`);
  }

  // The spans of the session's trace, from every service (batches are exported every 100 ms).
  const needed = [
    's2s.relay.attachment',
    's2s.relay.response',
    'local-provider realtime session',
    's2s.billing.settle',
    'process session.end_requested',
  ];
  const spans = await eventually(
    () => receiver.spans().filter((s) => s.traceId === traceId),
    (list) => needed.every((n) => list.some((s) => s.name === n)),
    15_000,
  );
  const byName = (n: string): ReceivedSpan[] => spans.filter((s) => s.name === n);
  const services = new Set(spans.map((s) => s.serviceName));
  for (const s of ['control-plane', 'relay', 'billing', 'local-provider']) t.ok(services.has(s), `${s} has spans in the session's trace`);

  const create = spans.find((s) => s.serviceName === 'control-plane' && s.attributes['s2s.session.id'] === session.id);
  t.ok(create, 'the create request span names the session');
  t.equal(create?.attributes['gen_ai.request.model'], MODEL);

  const attachment = byName('s2s.relay.attachment')[0];
  t.ok(attachment, 'the attachment span');
  t.equal(attachment?.attributes['s2s.session.id'], session.id);
  t.match(attachment?.attributes['s2s.attachment.id'], /^att_/);
  t.equal(attachment?.attributes['gen_ai.provider.name'], 'local');
  t.equal(attachment?.attributes['gen_ai.request.model'], MODEL);
  t.equal(attachment?.attributes['s2s.usage.audio_in_ms'], 1500, 'usage on the attachment span');
  t.equal(attachment?.attributes['s2s.attachment.finish_reason'], 'end_requested');
  const upgrade = receiver.spans().find((s) => s.name === 'GET /v1/realtime' && s.attributes['s2s.session.id'] === session.id);
  t.ok(upgrade, 'the upgrade span');
  t.ok(
    attachment?.links.some((l) => l.spanId === upgrade?.spanId),
    'the attachment span links to its upgrade',
  );

  const connectSpan = byName('s2s.relay.upstream.connect')[0];
  t.equal(connectSpan?.parentSpanId, attachment?.spanId, 'upstream connect under the attachment');
  const simulator = byName('local-provider realtime session')[0];
  t.equal(simulator?.parentSpanId, connectSpan?.spanId, "the simulator's session under the relay's connect span");

  const response = byName('s2s.relay.response')[0];
  t.equal(response?.parentSpanId, attachment?.spanId);
  t.ok(typeof response?.attributes['s2s.time_to_first_audio_ms'] === 'number', 'time to first audio on the turn');
  t.ok(
    response?.events.some((e) => e.name === 'first_audio'),
    'first audio event',
  );
  t.equal(response?.attributes['s2s.usage.audio_out_ms'], 1000, 'usage of the turn');

  const publishes = byName('publish usage.checkpoint');
  t.ok(publishes.length >= 1, 'checkpoint publish spans');
  t.ok(
    publishes.some((p) => p.attributes['s2s.checkpoint.final'] === true),
    'the final checkpoint',
  );
  const parents = new Set([attachment?.spanId, ...publishes.map((p) => p.spanId)]);
  t.ok(
    byName('process usage.checkpoint').some((c) => c.serviceName === 'billing' && parents.has(c.parentSpanId)),
    "billing's consumer spans under the relay's",
  );
  const endConsumer = byName('process session.end_requested').find((s) => s.serviceName === 'billing');
  const settle = byName('s2s.billing.settle').find((s) => s.attributes['s2s.settle.outcome'] === 'settled');
  t.ok(endConsumer && settle, 'consumer and settlement spans');
  t.equal(settle?.attributes['s2s.session.id'], session.id);
  t.equal(settle?.attributes['s2s.billed_cents'], billed, 'cents on the settlement');
  t.equal(settle?.attributes['s2s.session.status'], 'completed');

  // Nothing secret or audio anywhere in what was exported.
  const raw = receiver.rawBodies().join('\n');
  t.notOk(raw.includes(key.key), 'no API key');
  t.notOk(raw.includes(key.key.slice(6)), 'no part of the key');
  t.notOk(raw.includes(tone.subarray(0, 480).toString('base64').slice(0, 40)), 'no audio');
  t.notOk(/"key":"[^"]*(?:audio|authorization)[^"]*","value":\{"stringValue"/i.test(raw), 'no audio or authorization string attribute');
});

t.test("a WebRTC call: its span is POST /v1/realtime/calls, in the session's trace, the attachment under it", async (t) => {
  const { receiver, otel } = await otlp(t);
  const stack = await startStack(t, { relay: { ...otel, WEBRTC_ANNOUNCED_ADDRESSES: '127.0.0.1' } });
  const { key, sessionId, secret } = await mintCall(stack);
  const traceId = VoiceSession.parse((await api(stack, 'GET', `/v1/voice/sessions/${sessionId}`, { key: key.key })).body).trace_id;

  // The page's own trace context on the request (a browser with OpenTelemetry's fetch instrumentation).
  const clientTrace = 'c'.repeat(32);
  const clientSpan = 'd'.repeat(16);
  const { status } = await offerCall(t, stack, secret, { traceparent: `00-${clientTrace}-${clientSpan}-01` });
  t.equal(status, 201);
  const hung = await hangUp(stack, sessionId, key.key);
  t.equal(hung.status, 200);

  const spans = await eventually(
    () => receiver.spans().filter((s) => s.traceId === traceId),
    (list) => list.some((s) => s.name === 'POST /v1/realtime/calls') && list.some((s) => s.name === 's2s.relay.attachment'),
    15_000,
  );
  const call = spans.find((s) => s.name === 'POST /v1/realtime/calls');
  t.equal(call?.serviceName, 'relay');
  t.equal(call?.attributes['s2s.session.id'], sessionId, 'the call span names the session');
  t.match(call?.attributes['s2s.attachment.id'], /^att_/);
  t.equal(call?.attributes['http.request.method'], 'POST');
  t.equal(call?.attributes['http.route'], '/v1/realtime/calls');
  t.equal(call?.attributes['http.response.status_code'], 201);
  t.ok(
    call?.links.some((l) => l.traceId === clientTrace && l.spanId === clientSpan),
    "linked to the page's trace context",
  );
  const attachment = spans.find((s) => s.name === 's2s.relay.attachment');
  t.equal(attachment?.parentSpanId, call?.spanId, "the call's attachment is a child of its span");
  t.equal(attachment?.attributes['s2s.attachment.id'], call?.attributes['s2s.attachment.id']);
  t.same(
    receiver.spans().filter((s) => s.name === 'GET /v1/realtime'),
    [],
    'no span named for the WebSocket upgrade',
  );
});
