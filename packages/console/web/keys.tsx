import type { ApiKeyResource, CreateKeyResponse, RevokeKeyResponse } from '@s2s/contract';
import { useState } from 'preact/hooks';
import { admin, formatTime, listQuery, type Page } from './api';
import { ErrorNote, Field, ListTable, usePagedList } from './ui';

/** Keys: the list (filter by revocation), mint (the secret shown once, until dismissed), revoke. */
export function KeysPage({ openWallet }: { openWallet: (walletId: string) => void }) {
  const [revoked, setRevoked] = useState('false');
  const list = usePagedList((after) => admin.get<Page<ApiKeyResource>>(`/keys${listQuery({ revoked }, after)}`), [revoked]);
  const [minted, setMinted] = useState<CreateKeyResponse | null>(null);
  const [error, setError] = useState<unknown>(null);

  async function mint(e: SubmitEvent) {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    const label = String(form.get('label') ?? '').trim();
    setError(null);
    try {
      setMinted(
        await admin.post<CreateKeyResponse>('/keys', {
          balance_cents: Number(form.get('balance_cents')),
          ...(label ? { label } : {}),
        }),
      );
      (e.currentTarget as HTMLFormElement | null)?.reset();
      list.reload();
    } catch (err) {
      setError(err);
    }
  }

  async function revoke(id: string) {
    setError(null);
    try {
      await admin.post<RevokeKeyResponse>(`/keys/${encodeURIComponent(id)}/revoke`);
      list.reload();
    } catch (err) {
      setError(err);
    }
  }

  return (
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">Keys</h2>
      <form onSubmit={mint} aria-label="Mint a key">
        <fieldset class="grid">
          <Field label="Label">
            <input name="label" maxLength={200} autocomplete="off" />
          </Field>
          <Field label="Initial balance (cents)">
            <input name="balance_cents" type="number" min={0} step={1} required defaultValue="1000" />
          </Field>
        </fieldset>
        <button type="submit">Mint key</button>
      </form>
      {minted ? (
        <article aria-live="polite" class="minted">
          <p>
            Key <code>{minted.id}</code> on wallet <code>{minted.wallet_id}</code>. Its secret is shown this once: copy it now, it is not
            stored anywhere in this page.
          </p>
          <pre data-testid="minted-secret">{minted.key}</pre>
          <button type="button" onClick={() => setMinted(null)}>
            Done, hide the secret
          </button>
        </article>
      ) : null}
      <ErrorNote error={error} />
      <Field label="Show">
        <select value={revoked} onChange={(e) => setRevoked(e.currentTarget.value)}>
          <option value="false">active keys</option>
          <option value="true">revoked keys</option>
          <option value="">all keys</option>
        </select>
      </Field>
      <ListTable label="Keys" columns={['Id', 'Prefix', 'Label', 'Wallet', 'Live sessions', 'Created', 'State']} list={list}>
        {list.rows.map((k) => (
          <tr key={k.id}>
            <td>
              <code>{k.id}</code>
            </td>
            <td>
              <code>{k.prefix}…</code>
            </td>
            <td>{k.label ?? ''}</td>
            <td>
              <button type="button" class="link" onClick={() => openWallet(k.wallet_id)}>
                {k.wallet_id}
              </button>
            </td>
            <td>{k.live_sessions}</td>
            <td>{formatTime(k.created_at)}</td>
            <td>
              {k.revoked ? (
                'revoked'
              ) : (
                <button type="button" class="secondary" aria-label={`Revoke ${k.id}`} onClick={() => void revoke(k.id)}>
                  Revoke
                </button>
              )}
            </td>
          </tr>
        ))}
      </ListTable>
    </section>
  );
}
