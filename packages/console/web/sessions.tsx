import type { AdminSession } from '@s2s/contract';
import { USAGE_COUNTERS } from '@s2s/core/money';
import { useState } from 'preact/hooks';
import { admin, formatTime, listQuery, type Page } from './api';
import { Field, ListTable, usePagedList } from './ui';

const STATUSES = ['', 'ready', 'active', 'completed', 'cancelled', 'failed', 'expired'];

/** What carried a session (its newest attachment): the transport, and on a WebSocket the dialect it spoke. */
export function transportLabel(s: Pick<AdminSession, 'transport' | 'dialect'>): string {
  if (s.transport === null) return 'not attached';
  return s.transport === 'websocket' ? `websocket ${s.dialect ?? ''}`.trim() : s.transport;
}

/** Sessions (filters key and status): status, transport, usage by modality and the bill. */
export function SessionsPage() {
  const [filters, setFilters] = useState({ key_id: '', status: '' });
  const list = usePagedList((after) => admin.get<Page<AdminSession>>(`/sessions${listQuery(filters, after)}`), [filters]);

  function apply(e: SubmitEvent) {
    e.preventDefault();
    const f = new FormData(e.currentTarget as HTMLFormElement);
    setFilters({ key_id: String(f.get('key_id') ?? '').trim(), status: String(f.get('status') ?? '') });
  }

  return (
    <section aria-labelledby="sessions-title">
      <h2 id="sessions-title">Sessions</h2>
      <form onSubmit={apply} role="search" aria-label="Filter sessions">
        <fieldset class="grid">
          <Field label="Key id">
            <input name="key_id" placeholder="key_…" defaultValue={filters.key_id} />
          </Field>
          <Field label="Status">
            <select name="status" defaultValue={filters.status}>
              {STATUSES.map((s) => (
                <option value={s} key={s}>
                  {s || 'any'}
                </option>
              ))}
            </select>
          </Field>
        </fieldset>
        <button type="submit">Filter</button>
      </form>
      <ListTable label="Sessions" columns={['Id', 'Model', 'Status', 'Transport', 'Key', 'Created', 'Usage', 'Bill (cents)']} list={list}>
        {list.rows.map((s) => (
          <tr key={s.id} data-session={s.id}>
            <td>
              <code>{s.id}</code>
            </td>
            <td>{s.model}</td>
            <td data-testid="status">{s.status}</td>
            <td data-testid="transport">{transportLabel(s)}</td>
            <td>
              <code>{s.key_id}</code>
            </td>
            <td>{formatTime(s.created_at)}</td>
            <td>
              <dl class="usage">
                {USAGE_COUNTERS.map((c) => (
                  <div key={c}>
                    <dt>{c}</dt>
                    <dd>{s.usage[c]}</dd>
                  </div>
                ))}
              </dl>
            </td>
            <td data-testid="billed">{s.usage.billed_cents}</td>
          </tr>
        ))}
      </ListTable>
    </section>
  );
}
