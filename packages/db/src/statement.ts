import type pg from 'pg';
import type { z } from 'zod';
import type { Sql } from './sql.js';

/**
 * A hand-tuned SQL statement that returns rows, declared once: its text, its prepared-statement name where it
 * has one, and the zod schema of its row (`row`), whose `z.infer` is the type of the rows `run` returns.
 *
 * Rows are never parsed at run time, in production or anywhere else: `run` sends exactly the query the code
 * sent before (the same text, the same name, one round trip) and hands back node-postgres' rows as they are.
 * The create, fold, settle and attach statements run per session, checkpoint or frame, and a per-row zod
 * parse there would cost CPU for nothing a test cannot tell beforehand. The schema is checked instead against
 * the database itself, by `checkDeclaredStatements` (`@s2s/db/testing`) in each declaring package's
 * `test/statements.test.ts`: PostgreSQL describes every declared statement on a freshly migrated database
 * (Parse and Describe of the wire protocol, nothing executed), and the columns it returns must be the schema's
 * keys, each of a type whose node-postgres value the schema's type accepts (`COLUMN_KINDS`). So a migration
 * that renames or retypes a column fails that test, not production. What Describe cannot tell is left to the
 * schema as written: whether a column can be null (an outer join, an aggregate) and the shape of a jsonb value
 * (written through the contract's schemas).
 */
export interface Statement<S extends z.ZodObject = z.ZodObject> {
  /** `import.meta.url` of the declaring module: the check finds every statement of every declaring file. */
  readonly module: string;
  /** The protocol-level prepared statement's name (parsed once per connection), or none: an unnamed statement. */
  readonly name: string | undefined;
  readonly text: string;
  /** The row's schema: one key per column the statement returns. */
  readonly row: S;
  /** Sends the statement (named where it has a name) with `values`: the same query as a raw `sql.query`. */
  run(sql: Sql, values?: unknown[]): Promise<pg.QueryResult<z.output<S>>>;
}

export interface StatementSpec<S extends z.ZodObject> {
  name?: string;
  text: string;
  row: S;
}

const declared: Statement[] = [];

/**
 * Declares a statement and registers it for the check. Call it at module level (`module` is the caller's
 * `import.meta.url`), once per statement text: a builder of several texts declares one statement per text.
 */
export function sqlStatement<S extends z.ZodObject>(module: string, spec: StatementSpec<S>): Statement<S> {
  const { name, text, row } = spec;
  const statement: Statement<S> = {
    module,
    name,
    text,
    row,
    run: (sql, values) =>
      name === undefined
        ? sql.query<z.output<S>>(text, values)
        : sql.query<z.output<S>>(values === undefined ? { name, text } : { name, text, values }),
  };
  declared.push(statement as unknown as Statement);
  return statement;
}

/** Every statement declared so far in this process (the modules that declare them must have been imported). */
export function declaredStatements(): readonly Statement[] {
  return declared;
}
