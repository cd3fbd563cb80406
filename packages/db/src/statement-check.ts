// The check of the declared statements (statement.ts) against a migrated database, for the tests: PostgreSQL
// describes each statement (the wire protocol's Parse and Describe: nothing is planned for execution, nothing
// runs), and the columns it would return must be the row schema's keys, each of a compatible type.
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { declaredStatements, type Statement } from './statement.js';

/**
 * What node-postgres hands over for a column: a JavaScript kind (`json`: whatever JSON.parse gives; `X[]`: an
 * array of X). Kinds of the schema side are these plus `object` (an object or record), `unknown` (any, unknown,
 * custom), `bigint` and `null`.
 */
export type Kind = string;

/**
 * The kind of each column type, as the pool of `createDb` parses it (test/statements.test.ts reads a value of
 * every type here through such a pool and checks it). `int8` is a number: `parseInt8` (client.ts) gives a
 * number up to 2^53 - 1, which every amount and counter stays below; arrays keep node-postgres' own parsers,
 * so an `int8[]` is an array of strings. A type missing here fails the check until it is added.
 */
export const COLUMN_KINDS: ReadonlyMap<number, { type: string; kind: Kind }> = new Map(
  (
    [
      [16, 'bool', 'boolean'],
      [18, 'char', 'string'],
      [19, 'name', 'string'],
      [20, 'int8', 'number'],
      [21, 'int2', 'number'],
      [23, 'int4', 'number'],
      [25, 'text', 'string'],
      [26, 'oid', 'number'],
      [114, 'json', 'json'],
      [199, 'json[]', 'json[]'],
      [700, 'float4', 'number'],
      [701, 'float8', 'number'],
      [1000, 'bool[]', 'boolean[]'],
      [1005, 'int2[]', 'number[]'],
      [1007, 'int4[]', 'number[]'],
      [1009, 'text[]', 'string[]'],
      [1015, 'varchar[]', 'string[]'],
      [1016, 'int8[]', 'string[]'],
      [1021, 'float4[]', 'number[]'],
      [1022, 'float8[]', 'number[]'],
      [1042, 'bpchar', 'string'],
      [1043, 'varchar', 'string'],
      [1082, 'date', 'date'],
      [1114, 'timestamp', 'date'],
      [1115, 'timestamp[]', 'date[]'],
      [1184, 'timestamptz', 'date'],
      [1185, 'timestamptz[]', 'date[]'],
      [1700, 'numeric', 'string'],
      [2950, 'uuid', 'string'],
      [2951, 'uuid[]', 'string[]'],
      [3802, 'jsonb', 'json'],
      [3807, 'jsonb[]', 'json[]'],
    ] as const
  ).map(([oid, type, kind]) => [oid, { type, kind }]),
);

/** Whether a value of schema kind `schema` can describe a column of kind `column`. */
export function kindFits(column: Kind, schema: Kind): boolean {
  // Describe does not say whether a column can be null: null fits any column (`z.null()`: a column the statement
  // always leaves NULL, whatever its type).
  if (schema === 'null') return true;
  if (column === 'json') return schema === 'object' || schema === 'unknown' || schema.endsWith('[]');
  if (column.endsWith('[]')) return schema.endsWith('[]') && kindFits(column.slice(0, -2), schema.slice(0, -2));
  return schema === column;
}

interface SchemaDef {
  type: string;
  innerType?: SchemaLike;
  in?: SchemaLike;
  element?: SchemaLike;
  options?: readonly SchemaLike[];
  values?: unknown[];
  getter?: () => SchemaLike;
}
interface SchemaLike {
  def: SchemaDef;
}

/** The kinds of value a zod schema accepts, as far as the column check needs them. */
export function schemaKinds(schema: SchemaLike): Kind[] {
  const { def } = schema;
  switch (def.type) {
    case 'nullable':
      return [...schemaKinds(def.innerType as SchemaLike), 'null'];
    case 'optional':
    case 'nonoptional':
    case 'readonly':
    case 'default':
    case 'prefault':
    case 'catch':
      return schemaKinds(def.innerType as SchemaLike);
    case 'pipe':
      return schemaKinds(def.in as SchemaLike);
    case 'lazy':
      return schemaKinds((def.getter as () => SchemaLike)());
    case 'string':
    case 'enum':
    case 'template_literal':
      return ['string'];
    case 'number':
    case 'boolean':
    case 'bigint':
    case 'date':
    case 'null':
      return [def.type];
    case 'literal':
      return [...new Set((def.values ?? []).map((v) => (v === null ? 'null' : typeof v)))];
    case 'object':
    case 'record':
      return ['object'];
    case 'unknown':
    case 'any':
    case 'custom':
      return ['unknown'];
    case 'array':
      return schemaKinds(def.element as SchemaLike).map((k) => `${k}[]`);
    case 'union':
      return [...new Set((def.options ?? []).flatMap(schemaKinds))];
    default:
      return [`unsupported zod type "${def.type}"`];
  }
}

export interface DescribedColumn {
  name: string;
  typeId: number;
}

/**
 * The columns PostgreSQL says `text` returns (none for a statement without rows), through the extended
 * protocol: Parse (unnamed, parameter types inferred as for any query of the pool), Describe, Sync. Nothing
 * executes, so any statement (a data-modifying CTE, FOR UPDATE) is described without side effects. Rejects with
 * PostgreSQL's error when it refuses the statement. A pg Submittable: the client runs it in its queue.
 */
export function describeStatement(client: pg.ClientBase, text: string): Promise<DescribedColumn[]> {
  return new Promise((resolve, reject) => {
    let columns: DescribedColumn[] = [];
    const noop = () => {};
    const describe = {
      submit(connection: pg.Connection) {
        connection.parse({ name: '', text, types: [] }, true);
        connection.describe({ type: 'S', name: '' }, true);
        connection.sync();
      },
      handleRowDescription(msg: { fields: pg.FieldDef[] }) {
        columns = msg.fields.map((f) => ({ name: f.name, typeId: f.dataTypeID }));
      },
      // The client forgets a query that failed: ReadyForQuery then goes to no one, so settle here.
      handleError: (err: Error) => reject(err),
      handleReadyForQuery: () => resolve(columns),
      handleDataRow: noop,
      handleCommandComplete: noop,
      handleEmptyQuery: noop,
      handlePortalSuspended: noop,
      handleCopyInResponse: noop,
      handleCopyData: noop,
    };
    client.query(describe as pg.Submittable);
  });
}

/** A short name of a statement for messages: its prepared-statement name or first words, and its file. */
export function statementLabel(statement: Statement): string {
  const what = statement.name ?? `"${statement.text.replace(/\s+/g, ' ').trim().slice(0, 60)}…"`;
  return `${what} (${fileURLToPath(statement.module).split(sep).slice(-2).join('/')})`;
}

/** What is wrong with a statement's row schema against the database `client` is connected to (empty: nothing). */
export async function statementProblems(client: pg.ClientBase, statement: Statement): Promise<string[]> {
  let columns: DescribedColumn[];
  try {
    columns = await describeStatement(client, statement.text);
  } catch (err) {
    return [`PostgreSQL refuses it: ${(err as Error).message}`];
  }
  const shape = statement.row.shape as Record<string, SchemaLike>;
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const { name, typeId } of columns) {
    const column = COLUMN_KINDS.get(typeId);
    const schema = shape[name];
    if (seen.has(name)) problems.push(`column "${name}" is returned twice (node-postgres keeps the last)`);
    seen.add(name);
    if (!column) problems.push(`column "${name}" has type oid ${typeId}, which COLUMN_KINDS does not map`);
    if (!schema) problems.push(`column "${name}" (${column?.type ?? `oid ${typeId}`}) is not in the row schema`);
    if (!column || !schema) continue;
    const kinds = schemaKinds(schema);
    if (!kinds.every((k) => kindFits(column.kind, k))) {
      problems.push(`column "${name}" is ${column.type} (node-postgres gives ${column.kind}), the row schema says ${kinds.join(' | ')}`);
    }
  }
  for (const key of Object.keys(shape)) {
    if (!seen.has(key)) problems.push(`the row schema's "${key}" is not a column the statement returns`);
  }
  return problems;
}

/** The declared statements whose module lies under `srcDir`. */
function statementsUnder(srcDir: string): Statement[] {
  return declaredStatements().filter((s) => !relative(srcDir, fileURLToPath(s.module)).startsWith('..'));
}

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => join(e.parentPath, e.name))
    .filter((f) => !f.split(sep).includes('generated'));
}

/** A declaration in source text: a call of the declaring function. */
const DECLARATION = /\bsqlStatement\(/g;

/**
 * The lines of a product source file that read the rows of a raw query, whose row type nothing checks: a
 * `.query<…>` call (a row type declared by hand), the `rows` destructured from a `.query(` result, or the
 * `.rows` of a result held in a variable. Such a statement is declared with `sqlStatement` instead; a statement
 * whose rows are never read (a write, `rowCount`, `SELECT 1` as a probe) stays a plain query.
 */
export function rawRowQueries(text: string): { line: number; text: string }[] {
  const lines = text.split('\n');
  const found = new Set<number>();
  const results = new Set<string>();
  lines.forEach((line, i) => {
    if (/\.query<[^>]/.test(line) || /\{[^}]*\brows\b[^}]*\}\s*=\s*await\s+[\w.]+\.query\(/.test(line)) found.add(i);
    const held = /(?:const|let)\s+(\w+)\s*=\s*await\s+[\w.]+\.query\(/.exec(line);
    if (held?.[1]) results.add(held[1]);
  });
  for (const name of results) {
    lines.forEach((line, i) => {
      if (new RegExp(`\\b${name}\\.rows\\b`).test(line)) found.add(i);
    });
  }
  return [...found].sort((a, b) => a - b).map((i) => ({ line: i + 1, text: (lines[i] ?? '').trim() }));
}

/**
 * The check of one package or service (its `test/statements.test.ts`, which imports the modules under `srcDir`
 * that declare statements first): every file under `srcDir` that declares statements has registered at least
 * as many as it has declarations (a file its test forgot to import has none), and each registered statement
 * passes `statementProblems` on `pool`'s database (a freshly migrated one). `checked` labels every statement.
 */
export async function checkDeclaredStatements(pool: pg.Pool, srcDir: string): Promise<{ checked: string[]; problems: string[] }> {
  const statements = statementsUnder(srcDir);
  const problems: string[] = [];
  for (const file of await sourceFiles(srcDir)) {
    const written = (await readFile(file, 'utf8')).match(DECLARATION)?.length ?? 0;
    const registered = statements.filter((s) => fileURLToPath(s.module) === file).length;
    if (registered < written) {
      problems.push(
        `${relative(srcDir, file)} declares ${written} statement(s), ${registered} registered: import it in the statements test`,
      );
    }
  }
  const client = await pool.connect();
  try {
    for (const statement of statements) {
      for (const problem of await statementProblems(client, statement)) problems.push(`${statementLabel(statement)}: ${problem}`);
    }
  } finally {
    client.release();
  }
  return { checked: statements.map(statementLabel), problems };
}
