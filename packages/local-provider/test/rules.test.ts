// The simulator's rules as pure functions: what a response answers, how it is shaped, what its context costs.
import t from 'tap';
import { contextUsage, Conversation, itemTokens, type StoredItem } from '../src/conversation.js';
import { pcmTone } from '../src/index.js';
import { decideReply, shapeReply, withReasoning, type PendingEntry } from '../src/reply.js';

const TOOL = { type: 'function' as const, name: 'lookup' };

t.test('decideReply: the last pending entry decides', async (t) => {
  const a = pcmTone(100);
  const b = pcmTone(200, { frequencyHz: 300 });
  const audio = (buf: Buffer): PendingEntry => ({ type: 'audio', audio: buf, speechMs: buf.length / 48 });
  t.same(decideReply([], [TOOL], 'auto'), { kind: 'speech', audio: Buffer.alloc(0), transcript: '' }, 'nothing pending: empty');
  t.same(decideReply([audio(a), { type: 'text', text: 'x' }, audio(b)], [], 'auto'), {
    kind: 'speech',
    audio: Buffer.concat([a, b]),
    transcript: 'speech 100 ms speech 200 ms',
  });
  t.same(decideReply([audio(a), { type: 'function_output', output: 'done' }], [], 'auto'), { kind: 'text', text: 'done' });
  t.same(decideReply([{ type: 'text', text: 'call lookup  {"q": 1} ' }], [TOOL], 'auto'), {
    kind: 'function_call',
    name: 'lookup',
    arguments: '{"q": 1}',
  });
  t.same(decideReply([{ type: 'text', text: 'call lookup {"q": 1}' }], [TOOL], 'required'), {
    kind: 'function_call',
    name: 'lookup',
    arguments: '{"q": 1}',
  });
  t.same(decideReply([{ type: 'text', text: 'call lookup' }], [TOOL], 'auto'), { kind: 'text', text: 'call lookup' }, 'no arguments');
  t.same(decideReply([{ type: 'text', text: 'Call lookup {}' }], [TOOL], 'auto'), { kind: 'text', text: 'Call lookup {}' }, 'case matters');
});

t.test('shapeReply: modality and max_output_tokens', async (t) => {
  t.same(shapeReply({ kind: 'text', text: 'abcdefghij' }, 'text', 2), { kind: 'text', text: 'abcdefgh', truncated: true });
  t.same(shapeReply({ kind: 'text', text: 'abcdefgh' }, 'text', 2), { kind: 'text', text: 'abcdefgh', truncated: false });
  const spoken = shapeReply({ kind: 'text', text: 'hello' }, 'audio', 'inf');
  t.same(spoken, { kind: 'audio', audio: pcmTone(300), transcript: 'hello', truncated: false }, '60 ms of 440 Hz a character');
  // 4 tokens of output audio = 200 ms: 3 characters spoken (180 ms) and a part of the 4th
  const cut = shapeReply({ kind: 'text', text: 'hello' }, 'audio', 4);
  t.same(cut, { kind: 'audio', audio: pcmTone(200), transcript: 'hel', truncated: true });
  const echo = shapeReply({ kind: 'speech', audio: pcmTone(500), transcript: 'speech 500 ms' }, 'audio', 4);
  t.same(echo, { kind: 'audio', audio: pcmTone(200), transcript: 'speech 500 ms', truncated: true }, 'an echo keeps its transcript');
  t.same(shapeReply({ kind: 'speech', audio: pcmTone(500), transcript: 'speech 500 ms' }, 'text', 'inf'), {
    kind: 'text',
    text: 'speech 500 ms',
    truncated: false,
  });
});

t.test('context usage: every piece weighed, the common prefix with the previous context cached', async (t) => {
  const c = new Conversation();
  const user = (id: string, text: string): StoredItem => ({
    id,
    item: { id, type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
    audioMs: 0,
  });
  const spoken: StoredItem = {
    id: 'a1',
    item: { id: 'a1', type: 'message', role: 'assistant', content: [{ type: 'output_audio' }] },
    audioMs: 1001,
  };
  t.same(itemTokens(spoken), { text: 0, audio: 11 });
  t.same(itemTokens({ id: 'f', item: { type: 'function_call', name: 'x', arguments: '12345' }, audioMs: 0 }), { text: 2, audio: 0 });
  c.insert(user('u1', 'hello')); // 2 tokens
  const first = c.segments('abcd'); // 1 token
  t.same(contextUsage(first, []), { text: 3, audio: 0, cachedText: 0, cachedAudio: 0 });
  c.insert(spoken);
  const second = c.segments('abcd');
  t.same(contextUsage(second, first), { text: 3, audio: 11, cachedText: 3, cachedAudio: 0 });
  t.same(
    contextUsage(c.segments('other'), second),
    { text: 4, audio: 11, cachedText: 0, cachedAudio: 0 },
    'new instructions: nothing cached',
  );
  c.insert(user('u0', 'x'), 'root');
  t.same(
    contextUsage(c.segments('abcd'), second),
    { text: 4, audio: 11, cachedText: 1, cachedAudio: 0 },
    'an item inserted first breaks the prefix',
  );
  const third = c.segments('abcd');
  spoken.audioMs = 100;
  t.same(contextUsage(c.segments('abcd'), third), { text: 4, audio: 1, cachedText: 4, cachedAudio: 0 }, 'a truncated item is a new piece');
  t.notOk(c.delete('nope'));
  t.equal(c.insert(user('u2', 'y'), 'nope'), undefined);
});

t.test('reasoning is honoured deterministically: a text reply names the effort, other replies are unchanged', async (t) => {
  t.same(withReasoning({ kind: 'text', text: 'hello' }, 'high'), { kind: 'text', text: '(high effort) hello' });
  t.same(withReasoning({ kind: 'text', text: 'hello' }, undefined), { kind: 'text', text: 'hello' }, 'no effort, no change');
  const call = { kind: 'function_call', name: 'lookup', arguments: '{}' } as const;
  t.same(withReasoning(call, 'low'), call);
  const speech = { kind: 'speech', audio: pcmTone(100), transcript: 'speech 100 ms' } as const;
  t.same(withReasoning(speech, 'low'), speech);
});
