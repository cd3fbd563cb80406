import type { LedgerEntry, Wallet } from '@s2s/contract';
import { useEffect, useState } from 'preact/hooks';
import { admin, formatTime, listQuery, type Page } from './api';
import { ErrorNote, Field, ListTable, usePagedList } from './ui';

/** A wallet: balance (reserved, available), credit, and its ledger (filter by kind). */
export function WalletsPage({ walletId, setWalletId }: { walletId: string; setWalletId: (id: string) => void }) {
  const [wallet, setWallet] = useState<Wallet | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [kind, setKind] = useState('');
  const [version, setVersion] = useState(0);
  const list = usePagedList(
    (after) =>
      walletId
        ? admin.get<Page<LedgerEntry>>(`/wallets/${encodeURIComponent(walletId)}/ledger${listQuery({ kind }, after)}`)
        : Promise.resolve({ object: 'list' as const, data: [], has_more: false, next_cursor: null }),
    [walletId, kind, version],
  );

  useEffect(() => {
    setWallet(null);
    setError(null);
    if (!walletId) return;
    admin
      .get<Wallet>(`/wallets/${encodeURIComponent(walletId)}`)
      .then(setWallet)
      .catch(setError);
  }, [walletId, version]);

  function open(e: SubmitEvent) {
    e.preventDefault();
    setWalletId(String(new FormData(e.currentTarget as HTMLFormElement).get('wallet_id') ?? '').trim());
  }

  async function credit(e: SubmitEvent) {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    setError(null);
    try {
      await admin.post<Wallet>(`/wallets/${encodeURIComponent(walletId)}/credit`, {
        amount_cents: Number(new FormData(form).get('amount_cents')),
      });
      form.reset();
      setVersion((v) => v + 1);
    } catch (err) {
      setError(err);
    }
  }

  return (
    <section aria-labelledby="wallets-title">
      <h2 id="wallets-title">Wallets</h2>
      <form onSubmit={open} role="search" aria-label="Open a wallet">
        <fieldset role="group">
          <input name="wallet_id" aria-label="Wallet id" placeholder="wal_…" defaultValue={walletId} key={walletId} required />
          <button type="submit">Open</button>
        </fieldset>
      </form>
      <ErrorNote error={error} />
      {wallet ? (
        <>
          <table aria-label="Balance">
            <tbody>
              <tr>
                <th scope="row">Wallet</th>
                <td>
                  <code>{wallet.id}</code>
                </td>
              </tr>
              <tr>
                <th scope="row">Balance</th>
                <td data-testid="balance">{wallet.balance_cents} cents</td>
              </tr>
              <tr>
                <th scope="row">Reserved</th>
                <td>{wallet.reserved_cents} cents</td>
              </tr>
              <tr>
                <th scope="row">Available</th>
                <td>{wallet.available_cents} cents</td>
              </tr>
            </tbody>
          </table>
          <form onSubmit={credit} aria-label="Credit the wallet">
            <fieldset role="group">
              <input
                name="amount_cents"
                type="number"
                min={1}
                step={1}
                required
                aria-label="Amount to credit (cents)"
                placeholder="cents"
              />
              <button type="submit">Credit</button>
            </fieldset>
          </form>
          <h3>Ledger</h3>
          <Field label="Entries">
            <select value={kind} onChange={(e) => setKind(e.currentTarget.value)}>
              <option value="">all</option>
              <option value="credit">credits</option>
              <option value="charge">charges</option>
            </select>
          </Field>
          <ListTable label="Ledger" columns={['When', 'Kind', 'Amount (cents)', 'Session']} list={list}>
            {list.rows.map((e) => (
              <tr key={e.id}>
                <td>{formatTime(e.created_at)}</td>
                <td>{e.kind}</td>
                <td>{e.amount_cents}</td>
                <td>{e.session_id ? <code>{e.session_id}</code> : ''}</td>
              </tr>
            ))}
          </ListTable>
        </>
      ) : null}
    </section>
  );
}
