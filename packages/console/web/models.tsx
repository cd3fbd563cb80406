import type { AdminModel, Rate, UpsertModelRequest } from '@s2s/contract';
import { RATE_FIELDS } from '@s2s/core/money';
import { useState } from 'preact/hooks';
import { admin, listQuery, type Page } from './api';
import { ErrorNote, Field, ListTable, usePagedList } from './ui';

const rateOf = (m: AdminModel): Rate => Object.fromEntries(RATE_FIELDS.map((f) => [f, m.pricing[f]])) as Rate;

/** PUT /admin/v1/models's body for a listed model, with some fields changed (approve, disable, …). */
function upsertOf(m: AdminModel, change: Partial<UpsertModelRequest>): UpsertModelRequest {
  const { id, display_name, owned_by, provider, provider_model, enabled, approved } = m;
  return { id, display_name, owned_by, provider, provider_model, enabled, approved, pricing: rateOf(m), ...change };
}

const EMPTY: UpsertModelRequest = {
  id: '',
  display_name: '',
  owned_by: '',
  provider: 'local',
  provider_model: '',
  enabled: true,
  approved: false,
  pricing: Object.fromEntries(RATE_FIELDS.map((f) => [f, 0])) as Rate,
};

/** Models: every model (approved or not); create or edit one (pricing in milli-cents), approve, disable. */
export function ModelsPage() {
  const [approved, setApproved] = useState('');
  const [version, setVersion] = useState(0);
  const list = usePagedList((after) => admin.get<Page<AdminModel>>(`/models${listQuery({ approved }, after)}`), [approved, version]);
  const [editing, setEditing] = useState<UpsertModelRequest>(EMPTY);
  const [error, setError] = useState<unknown>(null);
  const [saved, setSaved] = useState<string | null>(null);

  async function put(body: UpsertModelRequest) {
    setError(null);
    setSaved(null);
    try {
      const model = await admin.put<AdminModel>('/models', body);
      setSaved(`Saved ${model.id} (rate ${model.pricing.rate_snapshot_id}).`);
      setVersion((v) => v + 1);
      return true;
    } catch (err) {
      setError(err);
      return false;
    }
  }

  async function save(e: SubmitEvent) {
    e.preventDefault();
    const f = new FormData(e.currentTarget as HTMLFormElement);
    const text = (k: string) => String(f.get(k) ?? '').trim();
    const pricing = Object.fromEntries(RATE_FIELDS.map((k) => [k, Number(f.get(`pricing.${k}`))])) as Rate;
    const body: UpsertModelRequest = {
      id: text('id'),
      display_name: text('display_name'),
      owned_by: text('owned_by'),
      provider: text('provider'),
      provider_model: text('provider_model'),
      enabled: f.get('enabled') === 'on',
      approved: f.get('approved') === 'on',
      pricing,
    };
    if (await put(body)) setEditing(EMPTY);
  }

  return (
    <section aria-labelledby="models-title">
      <h2 id="models-title">Models</h2>
      <form onSubmit={save} aria-label="Create or edit a model" key={`${editing.id}-${version}`}>
        <fieldset class="grid">
          <Field label="Model id">
            <input name="id" required defaultValue={editing.id} placeholder="acme/voice-1" />
          </Field>
          <Field label="Display name">
            <input name="display_name" required defaultValue={editing.display_name} />
          </Field>
          <Field label="Owned by">
            <input name="owned_by" required defaultValue={editing.owned_by} />
          </Field>
        </fieldset>
        <fieldset class="grid">
          <Field label="Provider">
            <input name="provider" required defaultValue={editing.provider} />
          </Field>
          <Field label="Provider model">
            <input name="provider_model" required defaultValue={editing.provider_model} />
          </Field>
        </fieldset>
        <fieldset>
          <legend>Pricing (milli-cents)</legend>
          <div class="grid rates">
            {RATE_FIELDS.map((k) => (
              <Field label={k} key={k}>
                <input name={`pricing.${k}`} type="number" min={0} step={1} required defaultValue={String(editing.pricing[k] ?? 0)} />
              </Field>
            ))}
          </div>
        </fieldset>
        <fieldset>
          <label>
            <input type="checkbox" role="switch" name="enabled" defaultChecked={editing.enabled} /> Enabled
          </label>
          <label>
            <input type="checkbox" role="switch" name="approved" defaultChecked={editing.approved} /> Approved
          </label>
        </fieldset>
        <button type="submit">Save model</button>{' '}
        <button type="button" class="secondary" onClick={() => setEditing(EMPTY)}>
          New model
        </button>
      </form>
      <ErrorNote error={error} />
      {saved ? <p role="status">{saved}</p> : null}
      <Field label="Show">
        <select value={approved} onChange={(e) => setApproved(e.currentTarget.value)}>
          <option value="">all models</option>
          <option value="false">awaiting approval</option>
          <option value="true">approved</option>
        </select>
      </Field>
      <ListTable label="Models" columns={['Id', 'Name', 'Provider', 'Per minute', 'Enabled', 'Approved', 'Actions']} list={list}>
        {list.rows.map((m) => (
          <tr key={m.id}>
            <td>
              <code>{m.id}</code>
            </td>
            <td>{m.display_name}</td>
            <td>
              {m.provider}/{m.provider_model}
            </td>
            <td>{m.pricing.per_minute}</td>
            <td>{m.enabled ? 'yes' : 'no'}</td>
            <td>{m.approved ? 'yes' : 'no'}</td>
            <td class="actions">
              <button type="button" class="secondary" aria-label={`Edit ${m.id}`} onClick={() => setEditing(upsertOf(m, {}))}>
                Edit
              </button>
              {m.approved ? null : (
                <button type="button" aria-label={`Approve ${m.id}`} onClick={() => void put(upsertOf(m, { approved: true }))}>
                  Approve
                </button>
              )}
              <button
                type="button"
                class="secondary"
                aria-label={`${m.enabled ? 'Disable' : 'Enable'} ${m.id}`}
                onClick={() => void put(upsertOf(m, { enabled: !m.enabled }))}
              >
                {m.enabled ? 'Disable' : 'Enable'}
              </button>
            </td>
          </tr>
        ))}
      </ListTable>
    </section>
  );
}
