import t from 'tap';
import {
  DtmfEventReceivedEvent,
  GaAudioFormat,
  TelnyxInboundMessage,
  TelnyxOutboundMessage,
  TwilioInboundMessage,
  TwilioOutboundMessage,
} from '../src/index.js';

// The examples of Twilio's "Media Streams - WebSocket Messages" page.
const twilio = {
  connected: { event: 'connected', protocol: 'Call', version: '1.0.0' },
  start: {
    event: 'start',
    sequenceNumber: '1',
    start: {
      accountSid: 'ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
      streamSid: 'MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
      callSid: 'CAXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
      tracks: ['inbound'],
      mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      customParameters: { FirstName: 'Jane', LastName: 'Doe', RemoteParty: 'Bob' },
    },
    streamSid: 'MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
  },
  media: {
    event: 'media',
    sequenceNumber: '3',
    media: {
      track: 'outbound',
      chunk: '1',
      timestamp: '5',
      payload:
        'no+JhoaJjpzSHxAKBgYJDhtEopGKh4aIjZm7JhQLBwYIDRg1qZSLh4aIjJevLBcMBwYHCxQsr5eMiIaHi5SpNRgNCAYHChAfUp2Oh4aGiY6ZvC0WDAgGBwoQHkOijoiGhoiNmKkpFAsHBgcJDhkyqpSKh4aHi5OlOBsOCQcHCQ0VJbmYjYeGh4qRnWQiEgsHBgcKEBxOpI+JhoaIjJa2KBUMCAYHCQ4ZMauVi4eGh4qQnlIgEQoHBgcKDxtAp5GJh4aIjJWwLhcNCAcHCQ0XKbuYjYiHh4qQnHAjEgsIBwcJDhpCoZCIh4eIjJetLRcNCAcHCg0XKr2ZjYiHh4mPm8cfEQsIBwcJDhpHn4+IhoeIjJa2JxUMCAcHCQ4ZNaqUi4eHh4uSoTodDwoHBwgLERxXo4+JhoaIjJazKBYMCAcHCQ4ZMq2VjIiHh4uRoTsdDwoIBwgKEBtFpZGJh4eIjJWxKxcNCQcHCQ0XKsKajoiHh4qPm1siEgsIBwgKDxlCp5KKh4eIi5KiPB4PCggHCAoQGz6jkYmHh4iMlrYpFQ0IBwcJDRcvs5eMiIeHiY6ZyyMSCwgHCAoOGT+nkoqHh4iLkqM7HQ8KCAcICxEdTqGPiYeHiIyVrS8YDQkHBwkNFiW9mY6Ih4eKjpnXJBMLCAcICg8ZQ6aSioeHiIqQnUYgEAsIBwgKDxtdn4+Jh4eIjJSsLxgOCQcHCQ0WKLubjoiHh4mOmPIlEwsIBwgKDxk+p5OKiIeIio+bUCMRCwgHCAoPGk2gj4qHh4iLkqI8Hw8KCAcICw8bR6OQiYeHiIyTqzIZDgkIBwkMFSO/mo6Ih4eJjZfTJxQMCAcICg4YOKyVi4iHiIqOmV4lEgsJBwgKDxk+qJOKiIeIio+bUiMRCwgHCAoQGk+gj4qHh4iLkZ9GIRAKCAcICw8bSKOQiYiHiIuRnjwfDwoIBwgLDxpMoY+Jh4eIi5GfQyAQCggHCAoPGUCnkoqIh4iKj5pdIxIKCAcICg8ZPqeTioiHiIqOmNglEwsJBwgJDhc1rJaLiIeIiYyVuikVDAkHBwkMFSO/mY2Ih4eJi5KmNxsOCQcHCQwTH16fjoiHh4iLkJ1AIRAKCAcICw4YN6uVi4iHiImMlK4sFw0JBwgJDRUrwJuNiIeHiYyUsy0XDQkHCAkNFSu+mo2IiIeJi5OmOB0OCgc=',
    },
    streamSid: 'MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
  },
  dtmf: {
    event: 'dtmf',
    streamSid: 'MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
    sequenceNumber: '5',
    dtmf: { track: 'inbound_track', digit: '1' },
  },
  mark: { event: 'mark', sequenceNumber: '4', streamSid: 'MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX', mark: { name: 'my label' } },
  stop: {
    event: 'stop',
    sequenceNumber: '5',
    stop: { accountSid: 'ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX', callSid: 'CAXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX' },
    streamSid: 'MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
  },
};

// The examples of Telnyx's media streaming AsyncAPI page.
const telnyx = {
  connected: { event: 'connected', version: '1.0.0' },
  start: {
    event: 'start',
    sequence_number: '1',
    stream_id: '32DE0DEA-53CB-4B21-89A4-9E1819C043BC',
    start: {
      user_id: '3E6F995F-85F7-4705-9741-53B116D28237',
      call_control_id: 'v2:T02llQxIyaRkhfRKxgAP8nY511EhFLizdvdUKJiSw8d6A9BborherQ',
      call_session_id: 'ff55a038-6f5d-11ef-9692-02420aeffb1f',
      from: '+13122010094',
      to: '+13122123456',
      tags: ['TAG1', 'TAG2'],
      client_state: 'aGF2ZSBhIG5pY2UgZGF5ID1d',
      custom_parameters: { customer_id: 'customer_123' },
      media_format: { encoding: 'PCMU', sample_rate: 8000, channels: 1 },
    },
  },
  media: {
    event: 'media',
    sequence_number: '4',
    media: {
      track: 'inbound',
      chunk: '2',
      timestamp: '5',
      payload:
        'no+JhoaJjpzSHxAKBgYJDhtEopGKh4aIjZm7JhQLBwYIDRg1qZSLh4aIjJevLBcMBwYHCxQsr5eMiIaHi5SpNRgNCAYHChAfUp2Oh4aGiY6ZvC0WDAgGBwoQHkOijoiGhoiNmKkpFAsHBgcJDhkyqpSKh4aHi5OlOBsOCQcHCQ0VJbmYjYeGh4qRnWQiEgsHBgcKEBxOpI+JhoaIjJa2KBUMCAYHCQ4ZMauVi4eGh4qQnlIgEQoHBgcKDxtAp5GJh4aIjJWwLhcNCAcHCQ0XKbuYjYiHh4qQnHAjEgsIBwcJDhpCoZCIh4eIjJetLRcNCAcHCg0XKr2ZjYiHh4mPm8cfEQsIBwcJDhpHn4+IhoeIjJa2JxUMCAcHCQ4ZNaqUi4eHh4uSoTodDwoHBwgLERxXo4+JhoaIjJazKBYMCAcHCQ4ZMq2VjIiHh4uRoTsdDwoIBwgKEBtFpZGJh4eIjJWxKxcNCQcHCQ0XKsKajoiHh4qPm1siEgsIBwgKDxlCp5KKh4eIi5KiPB4PCggHCAoQGz6jkYmHh4iMlrYpFQ0IBwcJDRcvs5eMiIeHiY6ZyyMSCwgHCAoOGT+nkoqHh4iLkqM7HQ8KCAcICxEdTqGPiYeHiIyVrS8YDQkHBwkNFiW9mY6Ih4eKjpnXJBMLCAcICg8ZQ6aSioeHiIqQnUYgEAsIBwgKDxtdn4+Jh4eIjJSsLxgOCQcHCQ0WKLubjoiHh4mOmPIlEwsIBwgKDxk+p5OKiIeIio+bUCMRCwgHCAoPGk2gj4qHh4iLkqI8Hw8KCAcICw8bR6OQiYeHiIyTqzIZDgkIBwkMFSO/mo6Ih4eJjZfTJxQMCAcICg4YOKyVi4iHiIqOmV4lEgsJBwgKDxk+qJOKiIeIio+bUiMRCwgHCAoQGk+gj4qHh4iLkZ9GIRAKCAcICw8bSKOQiYiHiIuRnjwfDwoIBwgLDxpMoY+Jh4eIi5GfQyAQCggHCAoPGUCnkoqIh4iKj5pdIxIKCAcICg8ZPqeTioiHiIqOmNglEwsJBwgJDhc1rJaLiIeIiYyVuikVDAkHBwkMFSO/mY2Ih4eJi5KmNxsOCQcHCQwTH16fjoiHh4iLkJ1AIRAKCAcICw4YN6uVi4iHiImMlK4sFw0JBwgJDRUrwJuNiIeHiYyUsy0XDQkHCAkNFSu+mo2IiIeJi5OmOB0OCgc=',
    },
    stream_id: '32DE0DEA-53CB-4B21-89A4-9E1819C043BC',
  },
  dtmf: {
    event: 'dtmf',
    stream_id: '32DE0DEA-53CB-4B21-89A4-9E1819C043BC',
    occurred_at: '2024-09-10T12:00:00.000000Z',
    sequence_number: '5',
    dtmf: { digit: '1' },
  },
  mark: { event: 'mark', sequence_number: '4', stream_id: '32DE0DEA-53CB-4B21-89A4-9E1819C043BC', mark: { name: 'my label' } },
  stop: {
    event: 'stop',
    sequence_number: '5',
    stop: { user_id: '3E6F995F-85F7-4705-9741-53B116D28237', call_control_id: 'v2:T02llQxIyaRkhfRKxgAP8nY511EhFLizdvdUKJiSw8d6A9BborherQ' },
    stream_id: '32DE0DEA-53CB-4B21-89A4-9E1819C043BC',
  },
  error: {
    event: 'error',
    sequence_number: '6',
    stream_id: '32DE0DEA-53CB-4B21-89A4-9E1819C043BC',
    payload: { code: 100002, title: 'Unknown error', detail: 'An unknown error occurred.' },
  },
};

t.test("Twilio's documented messages parse; ours are exact", async (t) => {
  for (const [event, message] of Object.entries(twilio)) {
    const parsed = TwilioInboundMessage.safeParse(message);
    t.ok(parsed.success, event);
    t.equal(parsed.data?.event, event);
  }
  t.ok(TwilioInboundMessage.safeParse({ ...twilio.mark, added_later: 1 }).success, 'a member Twilio adds later is ignored');
  t.notOk(TwilioInboundMessage.safeParse({ event: 'media', streamSid: 'MZ', sequenceNumber: '1' }).success, 'media without media');
  t.notOk(TwilioInboundMessage.safeParse({ event: 'hello' }).success, 'an unknown event');
  const sid = 'MZXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX';
  t.ok(TwilioOutboundMessage.safeParse({ event: 'media', streamSid: sid, media: { payload: 'AAAA' } }).success);
  t.ok(TwilioOutboundMessage.safeParse({ event: 'mark', streamSid: sid, mark: { name: 'resp_1' } }).success);
  t.ok(TwilioOutboundMessage.safeParse({ event: 'clear', streamSid: sid }).success);
  t.notOk(TwilioOutboundMessage.safeParse({ event: 'clear' }).success, 'Twilio needs the stream id');
});

t.test("Telnyx's documented messages parse; ours are exact", async (t) => {
  for (const [event, message] of Object.entries(telnyx)) {
    const parsed = TelnyxInboundMessage.safeParse(message);
    t.ok(parsed.success, event);
    t.equal(parsed.data?.event, event);
  }
  t.ok(TelnyxOutboundMessage.safeParse({ event: 'media', media: { payload: 'AAAA' } }).success);
  t.ok(TelnyxOutboundMessage.safeParse({ event: 'mark', mark: { name: 'resp_1' } }).success);
  t.ok(TelnyxOutboundMessage.safeParse({ event: 'clear' }).success);
  t.notOk(TelnyxOutboundMessage.safeParse({ event: 'clear', extra: 1 }).success);
});

t.test('G.711 formats in the OpenAI dialect; DTMF as OpenAI names it', async (t) => {
  for (const f of [{ type: 'audio/pcm' }, { type: 'audio/pcm', rate: 24000 }, { type: 'audio/pcmu' }, { type: 'audio/pcma' }]) {
    t.ok(GaAudioFormat.safeParse(f).success, JSON.stringify(f));
  }
  for (const f of [{ type: 'audio/pcm', rate: 16000 }, { type: 'audio/pcmu', rate: 8000 }, { type: 'audio/opus' }]) {
    t.notOk(GaAudioFormat.safeParse(f).success, JSON.stringify(f));
  }
  t.ok(
    DtmfEventReceivedEvent.safeParse({ type: 'input_audio_buffer.dtmf_event_received', event_id: 'e1', event: '#', received_at: 1 })
      .success,
  );
});
