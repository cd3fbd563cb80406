// The web console in headless Chromium against the real processes: the playground with a fake microphone
// (transcript, an answer played, the cost shown equal to the settled bill), every operator flow, and no API
// key in the page or its storage. UPDATE_SCREENSHOTS=1 writes docs/console/*.png.
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { eventually } from '@s2s/testing';
import type { AdminModel, AdminSession, ApiKeyResource, LedgerEntry, Wallet } from '@s2s/contract';
import { ADMIN_TOKEN, api, startStack, type Stack } from '../e2e/stack.js';
import { launchChromium, skipWithoutChromium, speechWav } from './chromium.js';

const SHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? fileURLToPath(new URL('../../docs/console/', import.meta.url)) : null;
const API_KEY = /vr_sk_[A-Za-z0-9]{20,}/;
const FUNDS = 10_000_000;

async function screenshot(page: Page, name: string) {
  if (SHOTS === null) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
}

/** Everything a script on the page could read: the DOM (with form values), both storages and cookies. */
const PAGE_SECRETS = `(() => {
  const dump = (s) => Object.fromEntries(Object.keys(s).map((k) => [k, s.getItem(k)]));
  return {
    html: document.documentElement.outerHTML,
    values: [...document.querySelectorAll('input, textarea, select')].map((e) => e.value),
    local: dump(localStorage),
    session: dump(sessionStorage),
    cookies: document.cookie,
  };
})()`;

async function pageSecrets(page: Page) {
  return page.evaluate<{ html: string; values: string[]; local: object; session: object; cookies: string }>(PAGE_SECRETS);
}

/** Form controls without a label or an aria-label, and buttons without a name: none, for keyboard and screen readers. */
const UNLABELLED = `[...document.querySelectorAll('input, select, textarea, button')]
  .filter((e) => e.type !== 'hidden' && !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !(e.tagName === 'BUTTON' && e.textContent.trim()))
  .map((e) => e.outerHTML)`;

async function everyControlLabelled(t: Test, page: Page, name: string) {
  t.same(await page.evaluate<string[]>(UNLABELLED), [], `${name}: every control has a label`);
}

async function noApiKeyInPage(t: Test, page: Page, secrets: string[]) {
  const seen = await pageSecrets(page);
  const text = JSON.stringify(seen);
  t.notMatch(text, API_KEY, 'no vr_sk_ key in the page, its form values or its storage');
  for (const s of secrets) t.notOk(text.includes(s), 'the key minted server-side is nowhere in the page');
  t.same(seen.local, {}, 'localStorage is empty');
  t.same(Object.keys(seen.session), ['s2s.console.admin_token'], 'sessionStorage holds the admin token only');
  t.equal(seen.cookies, '', 'no cookies');
}

t.test('web console', { skip: skipWithoutChromium() }, async (t) => {
  const stack: Stack = await startStack(t, { relay: { WEBRTC_ANNOUNCED_ADDRESSES: '127.0.0.1' } });
  const { body: payer } = await api<{ id: string; key: string; wallet_id: string }>(stack, 'POST', '/admin/v1/keys', {
    admin: true,
    body: { balance_cents: FUNDS, label: 'playground' },
  });
  // The WebRTC call bills a key of its own, so the wallet and sessions pages below see the socket's session alone.
  const { body: caller } = await api<{ id: string; key: string }>(stack, 'POST', '/admin/v1/keys', {
    admin: true,
    body: { balance_cents: FUNDS, label: 'webrtc' },
  });
  // A model priced so that one millisecond of audio is one cent: the cost shown must match the bill exactly.
  const pricey = await api(stack, 'PUT', '/admin/v1/models', {
    admin: true,
    body: {
      id: 'browser/per-ms-1',
      display_name: 'A cent a millisecond',
      owned_by: 'browser',
      provider: 'local',
      provider_model: 'echo-1',
      enabled: true,
      approved: true,
      pricing: {
        per_minute: 6_000_000,
        audio_in_token: 100_000,
        audio_out_token: 200_000,
        text_in_token: 7_000,
        text_out_token: 11_000,
        cached_in_token: 3_000,
        transcription_per_minute: 600_000,
        relay_fee_milli_cents: 500,
      },
    },
  });
  t.equal(pricey.status, 200);
  const browser = await launchChromium(t, { microphoneWav: speechWav({ rate: 48_000, speechMs: 1000, tailMs: 3000 }) });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));

  await t.test('the page source carries no secret and a strict CSP', async (t) => {
    const res = await fetch(`${stack.baseUrl}/console/`);
    t.equal(res.status, 200);
    t.match(res.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    const html = await res.text();
    t.notOk(html.includes(ADMIN_TOKEN), 'no admin token in the source');
    t.notMatch(html, API_KEY);
    const redirect = await fetch(`${stack.baseUrl}/console`, { redirect: 'manual' });
    t.equal(redirect.status, 301, '/console redirects to /console/');
  });

  await t.test('sign in with the keyboard; a wrong token is refused', async (t) => {
    await page.goto(`${stack.baseUrl}/console/`);
    await screenshot(page, 'sign-in');
    const token = page.getByLabel('Admin token');
    await token.focus();
    await page.keyboard.type('wrong-token');
    await page.keyboard.press('Enter');
    await page.getByRole('alert').filter({ hasText: 'invalid_admin_token' }).waitFor();
    t.equal(await page.evaluate<number>('sessionStorage.length'), 0, 'a refused token is not kept');
    await token.focus();
    await page.keyboard.type(ADMIN_TOKEN);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Playground' }).waitFor();
    t.equal(await page.evaluate<string>('document.activeElement.textContent'), 'Playground', 'focus moves to the page heading');
  });

  await t.test('playground: talk through the microphone, see the transcript, hear the answer, pay the bill', async (t) => {
    await page.getByRole('combobox', { name: /^Model/ }).selectOption('browser/per-ms-1');
    await page.getByRole('combobox', { name: /^Bill to key/ }).selectOption(payer.id);
    await page.getByLabel('Instructions').fill('Answer briefly.');
    // The fake microphone's file goes to the gateway unprocessed.
    await page.getByLabel('Echo cancellation and noise suppression').uncheck();
    await page.getByRole('button', { name: 'Start talking' }).click();
    const transcript = page.getByTestId('transcript');
    await transcript.getByText(/^Model:/).waitFor({ timeout: 20_000 });
    t.match(await transcript.innerText(), /You: speech \d+ ms[\s\S]*Model: speech \d+ ms/, 'both sides transcribed');
    const played = await eventually(
      async () => Number.parseInt(await page.getByTestId('played-ms').innerText()),
      (ms) => ms >= 500,
      15_000,
    );
    t.ok(played >= 500, `the answer played (${played} ms)`);
    t.match(await page.getByTestId('event-log').innerText(), /response\.done/, 'the event log shows the events');
    await everyControlLabelled(t, page, 'playground');
    await screenshot(page, 'playground');
    await page.getByRole('button', { name: 'End' }).click();
    await page.getByTestId('settled-bill').waitFor({ timeout: 20_000 });
    const shownCost = await page.getByTestId('cost').innerText();
    const shownBill = await page.getByTestId('settled-bill').innerText();
    const sessions = await api<{ data: AdminSession[] }>(stack, 'GET', `/admin/v1/sessions?key_id=${payer.id}`, { admin: true });
    t.equal(sessions.body.data.length, 1);
    const settled = sessions.body.data[0]!;
    t.equal(settled.status, 'completed');
    t.ok(settled.usage.audio_out_ms > 0 && settled.usage.transcribed_ms > 0, 'the answer and the transcription were billed');
    t.equal(shownCost, `${settled.usage.billed_cents} cents`, 'the running cost shown equals the settled bill');
    t.equal(shownBill, `${settled.usage.billed_cents} cents`);
    t.ok(settled.usage.billed_cents > 2000, `priced by the millisecond (${settled.usage.billed_cents} cents)`);
    await noApiKeyInPage(t, page, [payer.key]);
  });

  await t.test('playground over WebRTC: the answer on the track, jitter and loss shown, the settled bill', async (t) => {
    await page.getByRole('combobox', { name: /^Model/ }).selectOption('browser/per-ms-1');
    await page.getByRole('combobox', { name: /^Bill to key/ }).selectOption(caller.id);
    await page.getByRole('combobox', { name: /^Transport/ }).selectOption('webrtc');
    await page.getByRole('button', { name: 'Start talking' }).click();
    await page.getByTestId('phase').filter({ hasText: 'Live over WebRTC' }).or(page.getByRole('alert')).waitFor({ timeout: 20_000 });
    t.same(await page.getByRole('alert').allInnerTexts(), [], 'no error shown');
    const transcript = page.getByTestId('transcript');
    await transcript.getByText(/^Model:/).waitFor({ timeout: 25_000 });
    t.match(await transcript.innerText(), /You: speech \d+ ms[\s\S]*Model: speech \d+ ms/, 'both sides transcribed (events on oai-events)');
    // The answer has played when the relay says so (output_audio_buffer.stopped on oai-events).
    await page.getByTestId('event-log').getByText('output_audio_buffer.stopped').waitFor({ timeout: 15_000 });
    t.match(
      await page.getByTestId('event-log').innerText(),
      /output_audio_buffer\.started[\s\S]*response\.done/,
      "the call's events in the log",
    );
    const played = await eventually(
      async () => Number.parseInt(await page.getByTestId('played-ms').innerText()),
      (ms) => ms >= 500,
      15_000,
    );
    t.ok(played >= 500, `the answer came down the remote track (${played} ms)`);
    t.match(await page.getByTestId('jitter').innerText(), /^\d+\.\d ms$/, 'the jitter the page sees');
    t.match(await page.getByTestId('loss').innerText(), /^\d+\.\d % \(\d+ of \d+ packets\)$/, 'the loss the page sees');
    await everyControlLabelled(t, page, 'playground (WebRTC)');
    await screenshot(page, 'playground-webrtc');
    await page.getByRole('button', { name: 'End' }).click();
    await page.getByTestId('settled-bill').waitFor({ timeout: 20_000 });
    const sessions = await api<{ data: AdminSession[] }>(stack, 'GET', `/admin/v1/sessions?key_id=${caller.id}`, { admin: true });
    t.equal(sessions.body.data.length, 1);
    const settled = sessions.body.data[0]!;
    t.equal(settled.status, 'completed', 'the hangup ended the session');
    t.ok(settled.usage.audio_in_ms > 1000 && settled.usage.audio_out_ms > 0, 'the tracks were metered');
    t.equal(await page.getByTestId('settled-bill').innerText(), `${settled.usage.billed_cents} cents`, 'the settled bill shown');
    await noApiKeyInPage(t, page, [payer.key, caller.key]);
    // Back to the socket for what follows.
    await page.getByRole('combobox', { name: /^Transport/ }).selectOption('websocket');
  });

  await t.test('keys: mint (shown once), list, revoke', async (t) => {
    await page.getByRole('link', { name: 'Keys' }).click();
    await page.getByLabel('Label').fill('browser flow');
    await page.getByLabel('Initial balance (cents)').fill('250');
    await page.getByRole('button', { name: 'Mint key' }).click();
    const secret = await page.getByTestId('minted-secret').innerText();
    t.match(secret, API_KEY, 'the new key is shown once');
    await page.getByRole('button', { name: 'Done, hide the secret' }).click();
    await noApiKeyInPage(t, page, [secret, payer.key]);
    const keys = await api<{ data: ApiKeyResource[] }>(stack, 'GET', '/admin/v1/keys', { admin: true });
    const minted = keys.body.data.find((k) => k.label === 'browser flow');
    t.ok(minted, 'the key exists');
    await page.getByRole('row').filter({ hasText: minted!.id }).waitFor();
    await everyControlLabelled(t, page, 'keys');
    await screenshot(page, 'keys');
    await page.getByRole('button', { name: `Revoke ${minted!.id}` }).click();
    await page.getByRole('row').filter({ hasText: minted!.id }).waitFor({ state: 'detached' });
    const after = await api<ApiKeyResource>(stack, 'GET', `/admin/v1/keys/${minted!.id}`, { admin: true });
    t.equal(after.body.revoked, true, 'revoked');
    await page.getByLabel('Show').selectOption('true');
    await page.getByRole('row').filter({ hasText: minted!.id }).filter({ hasText: 'revoked' }).waitFor();
  });

  await t.test('wallets: balance, credit, ledger', async (t) => {
    await page.getByLabel('Show').selectOption('false');
    await page.getByRole('row').filter({ hasText: payer.id }).getByRole('button', { name: payer.wallet_id }).click();
    await page.getByRole('heading', { name: 'Wallets' }).waitFor();
    const before = (await api<Wallet>(stack, 'GET', `/admin/v1/wallets/${payer.wallet_id}`, { admin: true })).body;
    await page
      .getByTestId('balance')
      .filter({ hasText: `${before.balance_cents} cents` })
      .waitFor();
    await page.getByLabel('Amount to credit (cents)').fill('125');
    await page.getByRole('button', { name: 'Credit' }).click();
    await page
      .getByTestId('balance')
      .filter({ hasText: `${before.balance_cents + 125} cents` })
      .waitFor();
    const ledger = await api<{ data: LedgerEntry[] }>(stack, 'GET', `/admin/v1/wallets/${payer.wallet_id}/ledger`, { admin: true });
    t.same(
      ledger.body.data.map((e) => [e.kind, e.amount_cents]),
      [
        ['credit', 125],
        ['charge', FUNDS - before.balance_cents],
        ['credit', FUNDS],
      ],
    );
    const rows = page.getByRole('table', { name: 'Ledger' }).getByRole('row');
    await rows.filter({ has: page.getByRole('cell', { name: '125', exact: true }) }).waitFor();
    t.equal(await rows.count(), ledger.body.data.length + 1, 'every ledger entry is listed');
    await page.getByLabel('Entries').selectOption('charge');
    await rows.filter({ hasText: 'credit' }).first().waitFor({ state: 'detached' });
    await page.getByLabel('Entries').selectOption('');
    await rows.filter({ has: page.getByRole('cell', { name: '125', exact: true }) }).waitFor();
    await everyControlLabelled(t, page, 'wallets');
    await screenshot(page, 'wallets');
  });

  await t.test('models: create, approve, edit pricing, disable', async (t) => {
    await page.getByRole('link', { name: 'Models' }).click();
    const form = page.getByRole('form', { name: 'Create or edit a model' });
    await form.getByLabel('Model id').fill('browser/voice-1');
    await form.getByLabel('Display name').fill('Browser Voice');
    await form.getByLabel('Owned by').fill('browser');
    await form.getByLabel('Provider', { exact: true }).fill('local');
    await form.getByLabel('Provider model').fill('echo-1');
    await form.getByLabel('per_minute', { exact: true }).fill('1200');
    await form.getByLabel('audio_in_token').fill('10');
    await form.getByLabel('Approved').uncheck();
    await form.getByRole('button', { name: 'Save model' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved browser/voice-1' }).waitFor();
    const read = async () =>
      (await api<{ data: AdminModel[] }>(stack, 'GET', '/admin/v1/models?limit=100', { admin: true })).body.data.find(
        (m) => m.id === 'browser/voice-1',
      )!;
    let model = await read();
    t.match(model, { approved: false, enabled: true, provider_model: 'echo-1', pricing: { per_minute: 1200, audio_in_token: 10 } });
    await page.getByRole('button', { name: 'Approve browser/voice-1' }).click();
    await page.getByRole('button', { name: 'Approve browser/voice-1' }).waitFor({ state: 'detached' });
    t.equal((await read()).approved, true, 'approved');
    await page.getByRole('button', { name: 'Edit browser/voice-1' }).click();
    await form.getByLabel('per_minute', { exact: true }).fill('1500');
    await form.getByRole('button', { name: 'Save model' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved browser/voice-1' }).waitFor();
    model = await read();
    t.equal(model.pricing.per_minute, 1500, 'pricing edited (a new rate snapshot)');
    t.equal(model.pricing.audio_in_token, 10, 'the other rates kept');
    await page.getByRole('button', { name: 'Disable browser/voice-1' }).click();
    await page.getByRole('button', { name: 'Enable browser/voice-1' }).waitFor();
    t.equal((await read()).enabled, false, 'disabled');
    await everyControlLabelled(t, page, 'models');
    await screenshot(page, 'models');
  });

  await t.test('sessions: status, transport, usage by modality, bill', async (t) => {
    // The playground's session, settled.
    const settled = (await api<{ data: AdminSession[] }>(stack, 'GET', `/admin/v1/sessions?key_id=${payer.id}`, { admin: true })).body
      .data[0]!;
    // Two more sessions of the payer: one attached over a WebSocket in the OpenAI dialect (a client secret on the
    // legacy path), one never attached.
    const minted = await api<{ value: string }>(stack, 'POST', '/v1/realtime/client_secrets', {
      key: payer.key,
      body: { session: { type: 'realtime', model: 'browser/per-ms-1' } },
    });
    t.equal(minted.status, 200);
    const openaiSocket = new WebSocket(`${stack.relayUrl}?model=browser/per-ms-1`, [
      'realtime',
      `openai-insecure-api-key.${minted.body.value}`,
    ]);
    const created = await new Promise<{ session: { id: string } }>((resolve, reject) => {
      openaiSocket.onmessage = (e) => resolve(JSON.parse(String(e.data)));
      openaiSocket.onclose = (e) => reject(new Error(`closed ${e.code} before session.created`));
    });
    openaiSocket.close(1000);
    const unattached = await api<{ id: string }>(stack, 'POST', '/v1/voice/sessions', {
      key: payer.key,
      body: { model: 'browser/per-ms-1', mode: 'speech_to_speech' },
    });
    t.equal(unattached.status, 201);

    await page.getByRole('link', { name: 'Sessions' }).click();
    await page.getByLabel('Key id').fill(payer.id);
    await page.getByLabel('Status').selectOption('completed');
    await page.getByRole('button', { name: 'Filter' }).click();
    const row = page.locator(`tr[data-session="${settled.id}"]`);
    await row.waitFor();
    t.equal(await row.getByTestId('status').innerText(), 'completed');
    t.equal(await row.getByTestId('billed').innerText(), String(settled.usage.billed_cents));
    const usage = await row.locator('dl').innerText();
    t.match(usage, new RegExp(`audio_out_ms\\s+${settled.usage.audio_out_ms}`), 'usage by modality shown');
    t.match(usage, new RegExp(`transcribed_ms\\s+${settled.usage.transcribed_ms}`));
    t.equal(await row.getByTestId('transport').innerText(), 'websocket svc-realtime-v1', 'the playground spoke svc-realtime-v1');

    await page.getByLabel('Status').selectOption('');
    await page.getByRole('button', { name: 'Filter' }).click();
    const transportOf = async (id: string) => {
      const shown = page.locator(`tr[data-session="${id}"]`);
      await shown.waitFor();
      return shown.getByTestId('transport').innerText();
    };
    t.equal(await transportOf(created.session.id), 'websocket openai', 'a WebSocket in the OpenAI dialect');
    t.equal(await transportOf(unattached.body.id), 'not attached');
    const listed = (await api<{ data: AdminSession[] }>(stack, 'GET', `/admin/v1/sessions?key_id=${payer.id}`, { admin: true })).body.data;
    t.same(
      listed.map((s) => [s.id, s.transport, s.dialect]),
      [
        [unattached.body.id, null, null],
        [created.session.id, 'websocket', 'openai'],
        [settled.id, 'websocket', 'svc-realtime-v1'],
      ],
      'the operator API says the same',
    );
    await everyControlLabelled(t, page, 'sessions');
    await screenshot(page, 'sessions');
    await noApiKeyInPage(t, page, [payer.key]);
  });

  t.same(pageErrors, [], 'no script error on the page');
});
