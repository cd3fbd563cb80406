// Issue 8, defect 5: rates and credits the store cannot hold exactly are refused with 400, never a 500 or
// a rounded figure; every balance is an exact integer in every answer (decisions.md, "Limits, outages").
import t from 'tap';
import { AdminModel, ModelList, VoiceSession, Wallet } from '@s2s/contract';
import { preauthorizationCents } from '@s2s/core';
import { checkLedgerInvariants } from '@s2s/db/testing';
import { adminHeaders, api, bearer, createKey, createSession, startControlPlane, walletRow } from './helpers.js';

const MAX_EXACT = Number.MAX_SAFE_INTEGER; // 2^53 - 1: the largest amount a JSON number carries exactly

const model = (pricing: Record<string, number>) => ({
  id: 'acme/big-1',
  display_name: 'Acme Big',
  owned_by: 'acme',
  provider: 'local',
  provider_model: 'big-1',
  enabled: true,
  approved: true,
  pricing,
});

/** The figure exactly as written in the JSON text, so a rounded double cannot pass for it. */
function rawField(text: string, name: string): string | undefined {
  return new RegExp(`"${name}":(-?\\d+)`).exec(text)?.[1];
}

t.test('PUT /admin/v1/models holds rates up to 2^53-1 exactly', async (t) => {
  const h = await startControlPlane(t);
  for (const value of [2 ** 31 - 1, 2 ** 31, 2 ** 40 + 3, MAX_EXACT]) {
    const pricing = { per_minute: value, audio_in_token: value, audio_out_token: value, relay_fee_milli_cents: value };
    const res = await api(h, 'PUT', '/admin/v1/models', { headers: adminHeaders, json: model(pricing) });
    t.equal(res.status, 200, `rates of ${value}`);
    t.ok(AdminModel.safeParse(res.body).success, `${value}: admin model shape`);
    t.equal(rawField(res.text, 'per_minute'), String(value), `${value}: exact in the operator answer`);
    t.equal(rawField(res.text, 'relay_fee_milli_cents'), String(value));
    const list = await api(h, 'GET', '/v1/models');
    t.equal(list.status, 200);
    t.ok(ModelList.safeParse(list.body).success, 'catalog shape');
    const big = list.body.data.find((m: { id: string }) => m.id === 'acme/big-1');
    t.same(
      [big.pricing.per_minute, big.pricing.audio_in_token, big.pricing.audio_out_token, big.pricing.relay_fee_milli_cents],
      [value, value, value, value],
      `${value}: exact in the catalog`,
    );
    t.equal(big.price_per_minute_milli_cents, value);
  }
});

t.test('PUT /admin/v1/models refuses rates beyond 2^53-1 with 400', async (t) => {
  const h = await startControlPlane(t);
  for (const raw of ['9007199254740992', '18014398509481984', '1e20', '-1', '1.5']) {
    const body = JSON.stringify(model({ per_minute: 1, audio_in_token: 1, audio_out_token: 1, relay_fee_milli_cents: 1 })).replace(
      '"audio_out_token":1',
      `"audio_out_token":${raw}`,
    );
    const res = await api(h, 'PUT', '/admin/v1/models', { headers: { ...adminHeaders, 'content-type': 'application/json' }, raw: body });
    t.same([res.status, res.body?.error?.code], [400, 'invalid_request'], `audio_out_token ${raw}`);
  }
  const { rows } = await h.db.pool.query(`SELECT count(*)::int AS n FROM catalog_models WHERE id = 'acme/big-1'`);
  t.equal(rows[0].n, 0, 'nothing was stored');
});

t.test('credits and key balances stop at 2^53-1 with 400; balances stay exact', async (t) => {
  const h = await startControlPlane(t);
  const full = await api(h, 'POST', '/admin/v1/keys', { headers: adminHeaders, json: { balance_cents: MAX_EXACT } });
  t.equal(full.status, 201);
  t.equal(rawField(full.text, 'balance_cents'), String(MAX_EXACT));

  const over = await api(h, 'POST', `/admin/v1/wallets/${full.body.wallet_id}/credit`, {
    headers: adminHeaders,
    json: { amount_cents: 1 },
  });
  t.same(
    [over.status, over.body?.error?.code, over.body?.error?.type],
    [400, 'invalid_request', 'invalid_request_error'],
    'one more cent is refused',
  );
  t.match(over.body?.error?.message, /9007199254740991/, 'the message names the largest balance');

  const key = await createKey(h, 0);
  const credit = (amount: number | string) =>
    api(h, 'POST', `/admin/v1/wallets/${key.wallet_id}/credit`, {
      headers: { ...adminHeaders, 'content-type': 'application/json' },
      raw: `{"amount_cents":${amount}}`,
    });
  const first = await credit(MAX_EXACT);
  t.equal(first.status, 200);
  t.ok(Wallet.safeParse(first.body).success, 'wallet shape');
  t.equal(rawField(first.text, 'balance_cents'), String(MAX_EXACT), 'exact after a maximal credit');
  t.equal(rawField(first.text, 'available_cents'), String(MAX_EXACT));
  for (let i = 0; i < 3; i++) {
    const again = await credit(MAX_EXACT);
    t.same([again.status, again.body?.error?.code], [400, 'invalid_request'], `maximal credit ${i + 2} is refused`);
  }
  for (const raw of ['9007199254740992', '1e300', '0', '-5']) {
    const res = await credit(raw);
    t.same([res.status, res.body?.error?.code], [400, 'invalid_request'], `amount ${raw}`);
  }
  const read = await api(h, 'GET', `/admin/v1/wallets/${key.wallet_id}`, { headers: adminHeaders });
  t.equal(rawField(read.text, 'balance_cents'), String(MAX_EXACT), 'unchanged by the refusals');
  t.same(await walletRow(h, key.wallet_id), { balance: MAX_EXACT, reserved: 0 });
  const ledger = await h.db.pool.query(`SELECT count(*)::int AS n FROM ledger_entries WHERE wallet_id = $1`, [key.wallet_id]);
  t.equal(ledger.rows[0].n, 1, 'one credit row, none for the refusals');
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('sessions on rates above 2^31 reserve and answer exact figures', async (t) => {
  const h = await startControlPlane(t);
  const pricing = {
    per_minute: 2 ** 40,
    audio_in_token: 2 ** 31,
    audio_out_token: 2 ** 33,
    text_in_token: 0,
    text_out_token: 0,
    cached_in_token: 0,
    transcription_per_minute: 0,
    relay_fee_milli_cents: 2 ** 35,
  };
  const put = await api(h, 'PUT', '/admin/v1/models', { headers: adminHeaders, json: model(pricing) });
  t.equal(put.status, 200);
  const preauth = preauthorizationCents(pricing, 10);
  t.ok(preauth > 2 ** 31, 'the preauthorization does not fit an int4');
  t.ok(Number.isSafeInteger(preauth), 'but is exact');

  const key = await createKey(h, MAX_EXACT);
  const res = await createSession(h, key.key, { body: { model: 'acme/big-1', mode: 'speech_to_speech' } });
  t.equal(res.status, 201);
  t.ok(VoiceSession.safeParse(res.body).success, 'session shape');
  t.equal(rawField(res.text, 'preauthorized_cents'), String(preauth));
  t.equal(rawField(res.text, 'reserved_cents'), String(preauth));
  t.equal(rawField(res.text, 'balance_cents'), String(MAX_EXACT - preauth), 'available, exact');
  const got = await api(h, 'GET', `/v1/voice/sessions/${res.body.id}`, { headers: bearer(key.key) });
  t.equal(got.status, 200);
  t.equal(rawField(got.text, 'preauthorized_cents'), String(preauth));
  t.equal(rawField(got.text, 'balance_cents'), String(MAX_EXACT - preauth));
  const wallet = await api(h, 'GET', `/admin/v1/wallets/${key.wallet_id}`, { headers: adminHeaders });
  t.equal(rawField(wallet.text, 'reserved_cents'), String(preauth));
  t.same(await checkLedgerInvariants(h.db.pool), []);
});

t.test('a preauthorization beyond 2^53-1 cents is 402, never a 500', async (t) => {
  const h = await startControlPlane(t);
  const pricing = { per_minute: MAX_EXACT, audio_in_token: MAX_EXACT, audio_out_token: MAX_EXACT, relay_fee_milli_cents: MAX_EXACT };
  t.equal((await api(h, 'PUT', '/admin/v1/models', { headers: adminHeaders, json: model(pricing) })).status, 200);
  const key = await createKey(h, MAX_EXACT);
  const res = await createSession(h, key.key, { body: { model: 'acme/big-1', mode: 'speech_to_speech' } });
  t.same([res.status, res.body?.error?.code], [402, 'insufficient_wallet_balance']);
  t.same(await walletRow(h, key.wallet_id), { balance: MAX_EXACT, reserved: 0 }, 'nothing reserved');
});
