// Small building blocks shared by the pages: an error line, a paged list hook, a labelled field.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError, type Page } from './api';

export function ErrorNote({ error }: { error: unknown }) {
  if (error === null || error === undefined) return null;
  const text = error instanceof ApiError ? `${error.code}: ${error.message}` : String((error as Error).message ?? error);
  return (
    <p role="alert" class="error">
      {text}
    </p>
  );
}

/** Pages of a list endpoint: `reload` starts over (new filters), `more` appends the next page. */
export function usePagedList<T>(fetchPage: (after: string | null) => Promise<Page<T>>, deps: unknown[]) {
  const [rows, setRows] = useState<T[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  // The caller names what its fetch depends on (its filters).
  const load = useCallback(fetchPage, deps);
  const run = useCallback(
    async (after: string | null) => {
      setBusy(true);
      setError(null);
      try {
        const page = await load(after);
        setRows((old) => (after === null ? page.data : [...old, ...page.data]));
        setCursor(page.next_cursor);
      } catch (err) {
        setError(err);
      } finally {
        setBusy(false);
      }
    },
    [load],
  );
  useEffect(() => void run(null), [run]);
  return { rows, error, busy, hasMore: cursor !== null, more: () => run(cursor), reload: () => run(null) };
}

export function Field({ label, children, hint }: { label: string; children: ComponentChildren; hint?: string }) {
  return (
    <label>
      {label}
      {children}
      {hint ? <small>{hint}</small> : null}
    </label>
  );
}

export function MoreButton({ list }: { list: { hasMore: boolean; busy: boolean; more: () => void } }) {
  if (!list.hasMore) return null;
  return (
    <button type="button" class="secondary" onClick={list.more} disabled={list.busy}>
      Next page
    </button>
  );
}

/** A page of a list endpoint as a table: its error, the column headers, the rows, and "Next page". */
export function ListTable({
  label,
  columns,
  list,
  children,
}: {
  label: string;
  columns: string[];
  list: { error: unknown; hasMore: boolean; busy: boolean; more: () => void };
  children: ComponentChildren;
}) {
  return (
    <>
      <ErrorNote error={list.error} />
      <div class="overflow-auto">
        <table aria-label={label}>
          <thead>
            <tr>
              {columns.map((c) => (
                <th scope="col" key={c}>
                  {c}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>{children}</tbody>
        </table>
      </div>
      <MoreButton list={list} />
    </>
  );
}
