import t from 'tap';
import {
  AUDIO_FORMAT,
  AudioFormat,
  BusMessage,
  ClientEvent,
  CreateSessionRequest,
  EndSessionRequest,
  ERROR_STATUS,
  errorTypeForStatus,
  IdempotencyKey,
  isSupportedAudioFormat,
  ModelId,
  busSubjects,
  CLIENT_EVENT_TYPES,
} from '../src/index.js';

t.test('create request is strict', async (t) => {
  t.ok(CreateSessionRequest.safeParse({ model: 'local/echo', mode: 'speech_to_speech' }).success);
  t.notOk(CreateSessionRequest.safeParse({ model: 'local/echo', mode: 'text' }).success);
  t.notOk(CreateSessionRequest.safeParse({ model: 'local/echo' }).success);
  t.notOk(CreateSessionRequest.safeParse({ model: 'local/echo', mode: 'speech_to_speech', x: 1 }).success);
});

t.test('end request refuses client-reported usage and unknown reasons', async (t) => {
  t.ok(EndSessionRequest.safeParse({}).success);
  t.ok(EndSessionRequest.safeParse({ reason: 'timeout' }).success);
  t.notOk(EndSessionRequest.safeParse({ reason: 'bored' }).success);
  for (const field of ['usage_cents', 'elapsed_ms', 'input_audio_tokens']) {
    t.notOk(EndSessionRequest.safeParse({ [field]: 1 }).success, field);
  }
});

t.test('audio format is the one constant', async (t) => {
  t.ok(AudioFormat.safeParse(AUDIO_FORMAT).success);
  t.notOk(isSupportedAudioFormat({ ...AUDIO_FORMAT, sample_rate_hz: 16000 }));
  t.notOk(isSupportedAudioFormat({ type: 'audio/pcmu' }));
  t.ok(isSupportedAudioFormat({ ...AUDIO_FORMAT }));
});

t.test('client events discriminate on type and are strict', async (t) => {
  t.same(CLIENT_EVENT_TYPES.sort(), [
    'input_audio_buffer.append',
    'input_audio_buffer.clear',
    'input_audio_buffer.commit',
    'response.cancel',
    'response.create',
    'session.update',
  ]);
  t.ok(ClientEvent.safeParse({ type: 'input_audio_buffer.append', audio: 'AAAA' }).success);
  t.notOk(ClientEvent.safeParse({ type: 'input_audio_buffer.append' }).success);
  t.notOk(ClientEvent.safeParse({ type: 'response.create', usage: 1 }).success);
  t.notOk(ClientEvent.safeParse({ type: 'nope' }).success);
  const update = ClientEvent.safeParse({
    type: 'session.update',
    session: { voice: 'alloy', turn_detection: { type: 'server_vad' }, audio: { input: { format: { type: 'audio/pcm', rate: 8000 } } } },
  });
  t.ok(update.success, 'a wrong format still parses, so it can answer invalid_audio_format');
});

t.test('model ids and idempotency keys', async (t) => {
  t.ok(ModelId.safeParse('local/echo-1').success);
  t.notOk(ModelId.safeParse('echo').success);
  t.notOk(ModelId.safeParse('https://provider.example/v1').success);
  t.ok(IdempotencyKey.safeParse('a'.repeat(255)).success);
  t.notOk(IdempotencyKey.safeParse('a'.repeat(256)).success);
  t.notOk(IdempotencyKey.safeParse('').success);
  t.notOk(IdempotencyKey.safeParse('tab\there').success);
});

t.test('error codes map to the statuses and types of the spec', async (t) => {
  t.equal(ERROR_STATUS.invalid_vr_sk, 401);
  t.equal(ERROR_STATUS.insufficient_wallet_balance, 402);
  t.equal(ERROR_STATUS.session_expired, 410);
  t.equal(ERROR_STATUS.session_termination_failed, 409);
  t.equal(errorTypeForStatus(402), 'billing_error');
  t.equal(errorTypeForStatus(410), 'gone_error');
  t.equal(errorTypeForStatus(503), 'service_unavailable_error');
});

t.test('bus messages carry type and version', async (t) => {
  const msg = {
    type: 'usage.checkpoint',
    version: 1,
    session_id: 'vs_1',
    attachment_id: 'att_1',
    relay_id: 'r1',
    seq: 1,
    audio_in_ms: 10,
    audio_out_ms: 0,
    input_audio_tokens: 0,
    output_audio_tokens: 0,
    final: false,
    emitted_at: 1,
  };
  t.ok(BusMessage.safeParse(msg).success);
  t.notOk(BusMessage.safeParse({ ...msg, version: 2 }).success);
  t.notOk(BusMessage.safeParse({ ...msg, seq: 0 }).success);
  const s = busSubjects('t_abc');
  t.equal(s.stream, 'T_ABC_EVENTS');
  t.equal(s.usageCheckpoint('vs_1'), 't_abc.usage.checkpoint.vs_1');
});
