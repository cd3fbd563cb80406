import t from 'tap';
import { AbuseWindow } from '../src/attachment/abuse.js';
import { ResponseTracker } from '../src/attachment/responses.js';

function tracker() {
  let n = 0;
  return new ResponseTracker(() => `resp_${++n}`);
}

t.test('commit: empty until something is appended since the last commit or clear', async (t) => {
  const r = tracker();
  t.notOk(r.commit(), 'nothing appended');
  t.notOk(r.expectingResponse, 'an empty commit asks for nothing');
  r.appended(960);
  t.ok(r.commit());
  t.ok(r.expectingResponse);
  t.notOk(r.commit(), 'committed already');
  r.appended(2);
  r.cleared();
  t.notOk(r.commit(), 'cleared');
});

t.test('cancel: only while a response is under way or asked for, with the audio the client got', async (t) => {
  const r = tracker();
  t.equal(r.cancel(), null);
  r.createRequested();
  t.same(r.cancel(), { upstreamId: null, playedMs: 0 });
  const created = r.created('up_a');
  t.equal(created.id, 'resp_1');
  r.delta('up_a', 960);
  r.delta('up_a', 100);
  t.same(r.cancel(), { upstreamId: 'up_a', playedMs: 22 });
  t.equal(r.done('up_a').id, 'resp_1');
  t.equal(r.cancel(), null, 'done');
  t.notOk(r.expectingResponse);
});

t.test('ids: stable per upstream response, never the provider id', async (t) => {
  const r = tracker();
  const a = r.delta('up_a', 10);
  t.equal(r.resolve('up_a'), a);
  const b = r.created('up_b');
  t.not(a.id, b.id);
  t.equal(r.delta('up_a', 10).id, a.id, 'a late delta of an older response keeps its id');
  for (let i = 0; i < 20; i++) r.resolve(`up_${i}`);
  t.equal(r.resolve('up_b'), b, 'the current response is never forgotten');
});

t.test('a refused request releases the expectation; speech stopped sets it', async (t) => {
  const r = tracker();
  r.speechStopped();
  t.ok(r.expectingResponse);
  r.requestFailed();
  t.notOk(r.expectingResponse);
  r.created('up_x');
  r.requestFailed();
  t.ok(r.expectingResponse, 'a response under way is still under way');
});

t.test('abuse window: more than the limit within the window', async (t) => {
  const w = new AbuseWindow(3, 1000);
  t.notOk(w.record(0));
  t.notOk(w.record(10));
  t.notOk(w.record(20));
  t.ok(w.record(30), 'fourth within a second');
  t.ok(w.record(40), 'still over');
  const v = new AbuseWindow(3, 1000);
  for (const at of [0, 10, 20]) v.record(at);
  t.notOk(v.record(1000), 'the first one left the window');
  t.notOk(v.record(1500));
  t.notOk(v.record(1600), 'three within the window');
  t.ok(v.record(1700), 'four within the window');
  const d = new AbuseWindow(100, 10_000);
  let over = false;
  for (let i = 0; i < 100; i++) over = d.record(i * 99);
  t.notOk(over, '100 in 10 s is allowed');
  t.ok(d.record(9999), '101 is not');
});

t.test('upstream turn events become client events with our ids', async (t) => {
  const r = tracker();
  t.same(r.clientEventFor({ type: 'speech_started', audioStartMs: 10 }), { type: 'speech.started', audioStartMs: 10 });
  t.same(r.clientEventFor({ type: 'speech_stopped', audioEndMs: 900 }), { type: 'speech.stopped', audioEndMs: 900 });
  t.ok(r.expectingResponse, 'speech stopped: a response follows');
  t.same(r.clientEventFor({ type: 'response_created', responseId: 'up_1' }), { type: 'response.created', responseId: 'resp_1' });
  t.equal(r.clientEventFor({ type: 'audio_done', responseId: 'up_1' }), null, 'audio_done is placed by the agent session');
  const usage = {
    audio_in_ms: 1,
    audio_out_ms: 2,
    input_audio_tokens: 3,
    output_audio_tokens: 4,
    input_text_tokens: 0,
    cached_input_tokens: 0,
    output_text_tokens: 0,
    transcribed_ms: 0,
  };
  t.same(r.clientEventFor({ type: 'response_done', responseId: 'up_1', status: 'completed', tokens: null, metered: usage }), {
    type: 'response.done',
    responseId: 'resp_1',
    status: 'completed',
    usage,
  });
  t.notOk(r.expectingResponse);
  t.equal(r.clientEventFor({ type: 'closed', unexpected: false }), null);
});
