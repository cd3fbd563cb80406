import t from 'tap';
import { Conversation } from '../src/agent/conversation.js';

function conv(max = 10): Conversation {
  let n = 0;
  return new Conversation(max, () => `item_${++n}`);
}

const userText = (text: string) => ({ type: 'message' as const, role: 'user' as const, content: [{ type: 'input_text' as const, text }] });

t.test('client items get gateway ids and keys, in order; previous_item_id places them', async (t) => {
  const c = conv();
  const a = c.create(userText('a'), undefined);
  t.match(a, { ok: true, id: 'item_1', key: 'item_1', previousKey: null });
  const b = c.create(userText('b'), 'root');
  t.match(b, { ok: true, id: 'item_2', previousKey: null });
  const d = c.create(userText('d'), 'item_1');
  t.match(d, { ok: true, id: 'item_3', previousKey: 'item_1' });
  t.same(
    c.items().map((i) => i.id),
    ['item_2', 'item_1', 'item_3'],
  );
  t.same(c.retrieve('item_1'), {
    id: 'item_1',
    type: 'message',
    role: 'user',
    status: 'completed',
    content: [{ type: 'input_text', text: 'a' }],
  });
  t.match(c.create(userText('x'), 'item_404'), { ok: false, code: 'item_not_found', param: 'previousItemId' });
});

t.test('provider items: keys map to gateway ids; provider ids never become item ids', async (t) => {
  const c = conv();
  const committed = c.committed('up_item_A', null);
  t.same(committed, { itemId: 'item_1', previousItemId: null });
  const again = c.upsert('up_item_A', null, {
    type: 'message',
    role: 'user',
    status: 'completed',
    content: [{ type: 'input_audio', transcript: null }],
  });
  t.equal(again.item.id, 'item_1', 'the same key is the same item');
  t.equal(c.setText('up_item_A', 0, 'speech 900 ms', false), 'item_1');
  t.same(c.retrieve('item_1'), {
    id: 'item_1',
    type: 'message',
    role: 'user',
    status: 'completed',
    content: [{ type: 'input_audio', transcript: 'speech 900 ms' }],
  });
  // A later provider view without the transcript keeps the one gathered.
  c.upsert('up_item_A', null, { type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_audio', transcript: null }] });
  t.equal((c.retrieve('item_1') as { content: { transcript: string }[] }).content[0]!.transcript, 'speech 900 ms');
  const out = c.upsert('up_item_B', 'up_item_A', { type: 'message', role: 'assistant', status: 'in_progress', content: [] });
  t.same(out.previousItemId, 'item_1');
  c.addPart('up_item_B', 0, { type: 'output_audio', transcript: null });
  c.setText('up_item_B', 0, 'spe', true);
  c.setText('up_item_B', 0, 'ech', true);
  t.same((c.retrieve(out.item.id) as { content: unknown[] }).content, [{ type: 'output_audio', transcript: 'speech' }]);
  t.notOk(JSON.stringify(c.items()).includes('up_item'), 'no provider key in any item');
  t.equal(c.idOf('up_item_B'), out.item.id);
});

t.test('function calls: an output is accepted only for a call seen', async (t) => {
  const c = conv();
  t.match(c.create({ type: 'function_call_output', callId: 'call_1', output: '{}' }, undefined), {
    ok: false,
    code: 'call_id_not_found',
    param: 'item.callId',
  });
  const call = c.upsert('k1', null, { type: 'function_call', status: 'in_progress', callId: 'call_1', name: 'f', arguments: '' });
  c.callArguments('k1', 'call_1', '{"a"', true);
  t.notOk(c.hasCall('call_1'), 'not answerable while its arguments stream');
  c.callArguments('k1', 'call_1', '{"a":1}', false, 'f');
  t.ok(c.hasCall('call_1'));
  t.match(c.retrieve(call.item.id), { type: 'function_call', callId: 'call_1', name: 'f', arguments: '{"a":1}' });
  t.match(c.create({ type: 'function_call_output', callId: 'call_1', output: '{"ok":true}' }, undefined), { ok: true });
});

t.test('delete, truncate and refusals of unknown ids', async (t) => {
  const c = conv();
  const a = c.upsert('k_audio', null, {
    type: 'message',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_audio', transcript: 'hello' }],
  });
  const txt = c.create(userText('hi'), undefined);
  t.match(c.keyFor('item_404'), { ok: false, code: 'item_not_found', param: 'itemId' });
  t.match(c.keyFor(a.item.id), { ok: true, key: 'k_audio' });
  t.match(c.checkTruncate(a.item.id, 0), { ok: true, key: 'k_audio' });
  t.match(c.checkTruncate(a.item.id, 1), { ok: false, code: 'invalid_value', param: 'contentIndex' });
  t.match(c.checkTruncate((txt as { id: string }).id, 0), { ok: false, code: 'invalid_value' });
  t.equal(c.truncated('k_audio', 0), a.item.id);
  t.same((c.retrieve(a.item.id) as { content: unknown[] }).content, [{ type: 'output_audio', transcript: null }]);
  t.equal(c.deleted('k_audio'), a.item.id);
  t.equal(c.retrieve(a.item.id), undefined);
  t.equal(c.deleted('k_audio'), undefined);
  c.refused((txt as { id: string }).id);
  t.equal(c.size, 0);
});

t.test('the item limit: a client create past it is refused naming the limit; provider items evict the oldest', async (t) => {
  const c = conv(2);
  c.create(userText('a'), undefined);
  c.create(userText('b'), undefined);
  const r = c.create(userText('c'), undefined);
  t.match(r, { ok: false, code: 'limit_exceeded', param: 'item' });
  t.match((r as { message: string }).message, /max_items/);
  c.upsert('p', null, { type: 'message', role: 'assistant', status: 'completed', content: [] });
  t.equal(c.size, 2);
  t.equal(c.retrieve('item_1'), undefined, 'the oldest was forgotten');
});
