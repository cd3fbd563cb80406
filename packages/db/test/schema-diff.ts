// Compares the Prisma schema (through getDMMF) with a live database (through pg_catalog) and lists
// every difference as a sentence. Used by schema-match.test.ts; the default constraint names follow
// Prisma's convention (<table>_pkey, <table>_<cols>_key, <table>_<cols>_idx, <table>_<cols>_fkey).
import { readFile } from 'node:fs/promises';
// A CommonJS bundle whose named exports Node's ESM loader cannot detect: use the default export.
import internals from '@prisma/internals';
import type pg from 'pg';

type Document = Awaited<ReturnType<typeof internals.getDMMF>>;
type Model = Document['datamodel']['models'][number];
type Field = Model['fields'][number];

export interface ExpectedColumn {
  type: string;
  nullable: boolean;
  /** What the database default must look like (pg_get_expr text), or null for none. */
  default: RegExp | null;
}

export interface ActualColumn {
  type: string;
  nullable: boolean;
  default: string | null;
}

export interface IndexShape {
  columns: string[];
  unique: boolean;
  primary: boolean;
}

export interface ForeignKeyShape {
  columns: string[];
  refTable: string;
  refColumns: string[];
  onDelete: string;
  onUpdate: string;
}

export interface TableShape<C> {
  columns: Map<string, C>;
  indexes: Map<string, IndexShape>;
  foreignKeys: Map<string, ForeignKeyShape>;
}

export type SchemaShape<C> = Map<string, TableShape<C>>;

// Tables the database holds for tooling, not for the application.
const TOOLING_TABLES = new Set(['schema_migrations']);

export async function loadPrismaSchema(schemaPath: string): Promise<Document> {
  return internals.getDMMF({ datamodel: await readFile(schemaPath, 'utf8') });
}

// ---------------------------------------------------------------- expected, from the DMMF

export function expectedShape(dmmf: Document): SchemaShape<ExpectedColumn> {
  const shape: SchemaShape<ExpectedColumn> = new Map();
  for (const model of dmmf.datamodel.models) {
    shape.set(tableOf(model), {
      columns: expectedColumns(model, dmmf),
      indexes: expectedIndexes(model, dmmf),
      foreignKeys: expectedForeignKeys(model, dmmf),
    });
  }
  return shape;
}

function tableOf(model: Model): string {
  return model.dbName ?? model.name;
}

function columnOf(field: Field): string {
  return field.dbName ?? field.name;
}

function columnsOf(model: Model, fieldNames: readonly string[]): string[] {
  return fieldNames.map((name) => {
    const field = model.fields.find((f) => f.name === name);
    if (!field) throw new Error(`${model.name} has no field ${name}`);
    return columnOf(field);
  });
}

function modelNamed(dmmf: Document, name: string): Model {
  const model = dmmf.datamodel.models.find((m) => m.name === name);
  if (!model) throw new Error(`no model ${name}`);
  return model;
}

function expectedColumns(model: Model, dmmf: Document): Map<string, ExpectedColumn> {
  const columns = new Map<string, ExpectedColumn>();
  for (const field of model.fields) {
    if (field.kind === 'object') continue;
    columns.set(columnOf(field), {
      type: expectedType(field, dmmf) + (field.isList ? '[]' : ''),
      nullable: !field.isRequired,
      default: expectedDefault(field),
    });
  }
  return columns;
}

// Prisma's PostgreSQL column type for each scalar without @db, as format_type() prints it.
const SCALAR_TYPES: Record<string, string> = {
  String: 'text',
  Int: 'integer',
  BigInt: 'bigint',
  Float: 'double precision',
  Decimal: 'numeric(65,30)',
  Boolean: 'boolean',
  DateTime: 'timestamp(3) without time zone',
  Json: 'jsonb',
  Bytes: 'bytea',
};

// @db.X(args) → format_type() output.
const NATIVE_TYPES: Record<string, (args: readonly string[]) => string> = {
  Text: () => 'text',
  VarChar: (a) => (a[0] ? `character varying(${a[0]})` : 'character varying'),
  Char: (a) => `character(${a[0] ?? 1})`,
  Uuid: () => 'uuid',
  SmallInt: () => 'smallint',
  Integer: () => 'integer',
  BigInt: () => 'bigint',
  Real: () => 'real',
  DoublePrecision: () => 'double precision',
  Decimal: (a) => (a.length ? `numeric(${a.join(',')})` : 'numeric'),
  Boolean: () => 'boolean',
  Date: () => 'date',
  Timestamp: (a) => (a[0] ? `timestamp(${a[0]}) without time zone` : 'timestamp without time zone'),
  Timestamptz: (a) => (a[0] ? `timestamp(${a[0]}) with time zone` : 'timestamp with time zone'),
  Time: (a) => (a[0] ? `time(${a[0]}) without time zone` : 'time without time zone'),
  Timetz: (a) => (a[0] ? `time(${a[0]}) with time zone` : 'time with time zone'),
  Json: () => 'json',
  JsonB: () => 'jsonb',
  ByteA: () => 'bytea',
  Inet: () => 'inet',
  Citext: () => 'citext',
};

function expectedType(field: Field, dmmf: Document): string {
  if (field.kind === 'enum') {
    const found = dmmf.datamodel.enums.find((e) => e.name === field.type);
    return found?.dbName ?? field.type;
  }
  if (field.nativeType) {
    const [name, args] = field.nativeType;
    const native = NATIVE_TYPES[name];
    return native ? native(args) : `unsupported @db.${name}`;
  }
  return SCALAR_TYPES[field.type] ?? `unsupported ${field.type}`;
}

// Generated in the client, so the database needs no default for them.
const CLIENT_DEFAULTS = new Set(['cuid', 'uuid', 'nanoid', 'ulid']);

function expectedDefault(field: Field): RegExp | null {
  const value = field.default;
  if (value === undefined || Array.isArray(value)) return null;
  if (typeof value !== 'object') return literalDefault(String(value));
  if (CLIENT_DEFAULTS.has(value.name)) return null;
  if (value.name === 'autoincrement') return /^nextval\(/;
  if (value.name === 'now') return /^(now\(\)|CURRENT_TIMESTAMP)$/i;
  return /./; // dbgenerated(...): any database default
}

function literalDefault(value: string): RegExp {
  const escaped = value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // PostgreSQL prints literals as 0, true, 'text'::text or '0'::bigint.
  return new RegExp(`^'?${escaped}'?(::[a-z ]+)?$`);
}

function expectedIndexes(model: Model, dmmf: Document): Map<string, IndexShape> {
  const table = tableOf(model);
  const indexes = new Map<string, IndexShape>();
  for (const index of dmmf.datamodel.indexes.filter((i) => i.model === model.name)) {
    if (index.type === 'fulltext') throw new Error('fulltext indexes are MySQL-only');
    const columns = columnsOf(model, index.fields.map((f) => f.name));
    const suffix = index.type === 'id' ? 'pkey' : index.type === 'unique' ? `${columns.join('_')}_key` : `${columns.join('_')}_idx`;
    const name = index.dbName ?? (index.type === 'id' ? `${table}_pkey` : `${table}_${suffix}`);
    indexes.set(name, { columns, unique: index.type !== 'normal', primary: index.type === 'id' });
  }
  return indexes;
}

function expectedForeignKeys(model: Model, dmmf: Document): Map<string, ForeignKeyShape> {
  const table = tableOf(model);
  const fks = new Map<string, ForeignKeyShape>();
  for (const field of model.fields) {
    if (field.kind !== 'object' || !field.relationFromFields?.length) continue;
    const target = modelNamed(dmmf, field.type);
    const columns = columnsOf(model, field.relationFromFields);
    fks.set(`${table}_${columns.join('_')}_fkey`, {
      columns,
      refTable: tableOf(target),
      refColumns: columnsOf(target, field.relationToFields ?? []),
      // Prisma's defaults: a required relation restricts deletes, an optional one nulls the reference.
      onDelete: field.relationOnDelete ?? (field.isRequired ? 'Restrict' : 'SetNull'),
      onUpdate: field.relationOnUpdate ?? 'Cascade',
    });
  }
  return fks;
}

// ---------------------------------------------------------------- actual, from pg_catalog

const COLUMNS_SQL = `
  SELECT c.relname AS table, a.attname AS column, format_type(a.atttypid, a.atttypmod) AS type,
         NOT a.attnotnull AS nullable, pg_get_expr(d.adbin, d.adrelid) AS default
  FROM pg_attribute a
  JOIN pg_class c ON c.oid = a.attrelid
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
  WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped`;

// Expression or partial indexes cannot come from a Prisma schema, so they are marked to mismatch.
const INDEXES_SQL = `
  SELECT t.relname AS table, i.relname AS name, ix.indisunique AS unique, ix.indisprimary AS primary,
         array(SELECT CASE WHEN k.attnum = 0 THEN '(expression)' ELSE a.attname END
               FROM unnest(ix.indkey::int2[]) WITH ORDINALITY k(attnum, ord)
               LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
               ORDER BY k.ord)::text[]
           || CASE WHEN ix.indpred IS NULL THEN '{}'::text[] ELSE '{(partial)}'::text[] END AS columns
  FROM pg_index ix
  JOIN pg_class i ON i.oid = ix.indexrelid
  JOIN pg_class t ON t.oid = ix.indrelid
  WHERE t.relnamespace = 'public'::regnamespace`;

const FOREIGN_KEYS_SQL = `
  SELECT t.relname AS table, con.conname AS name, r.relname AS ref_table,
         array(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(n, ord)
               JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n ORDER BY k.ord)::text[] AS columns,
         array(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(n, ord)
               JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n ORDER BY k.ord)::text[] AS ref_columns,
         con.confdeltype AS on_delete, con.confupdtype AS on_update
  FROM pg_constraint con
  JOIN pg_class t ON t.oid = con.conrelid
  JOIN pg_class r ON r.oid = con.confrelid
  WHERE con.contype = 'f' AND con.connamespace = 'public'::regnamespace`;

const REFERENTIAL_ACTIONS: Record<string, string> = {
  a: 'NoAction',
  r: 'Restrict',
  c: 'Cascade',
  n: 'SetNull',
  d: 'SetDefault',
};

export async function actualShape(pool: pg.Pool): Promise<SchemaShape<ActualColumn>> {
  const shape: SchemaShape<ActualColumn> = new Map();
  const tableShape = (name: string): TableShape<ActualColumn> => {
    let found = shape.get(name);
    if (!found) shape.set(name, (found = { columns: new Map(), indexes: new Map(), foreignKeys: new Map() }));
    return found;
  };
  const columns = await pool.query<{ table: string; column: string } & ActualColumn>(COLUMNS_SQL);
  for (const { table, column, ...shapeOfColumn } of columns.rows) {
    tableShape(table).columns.set(column, shapeOfColumn);
  }
  const indexes = await pool.query<{ table: string; name: string; unique: boolean; primary: boolean; columns: string[] }>(INDEXES_SQL);
  for (const row of indexes.rows) {
    tableShape(row.table).indexes.set(row.name, { columns: row.columns, unique: row.unique, primary: row.primary });
  }
  const fks = await pool.query<{ table: string; name: string; ref_table: string; columns: string[]; ref_columns: string[]; on_delete: string; on_update: string }>(FOREIGN_KEYS_SQL);
  for (const row of fks.rows) {
    tableShape(row.table).foreignKeys.set(row.name, {
      columns: row.columns,
      refTable: row.ref_table,
      refColumns: row.ref_columns,
      onDelete: REFERENTIAL_ACTIONS[row.on_delete] ?? row.on_delete,
      onUpdate: REFERENTIAL_ACTIONS[row.on_update] ?? row.on_update,
    });
  }
  for (const name of TOOLING_TABLES) shape.delete(name);
  return shape;
}

// ---------------------------------------------------------------- the comparison

/** Every difference between the two shapes; empty when the database matches the schema. */
export function diffShapes(expected: SchemaShape<ExpectedColumn>, actual: SchemaShape<ActualColumn>): string[] {
  const issues: string[] = [];
  for (const [table, want] of expected) {
    const have = actual.get(table);
    if (!have) issues.push(`table ${table} is missing`);
    else issues.push(...diffTable(table, want, have));
  }
  for (const table of actual.keys()) {
    if (!expected.has(table)) issues.push(`table ${table} is not in the Prisma schema`);
  }
  return issues;
}

function diffTable(table: string, want: TableShape<ExpectedColumn>, have: TableShape<ActualColumn>): string[] {
  return [
    ...diffColumns(table, want.columns, have.columns),
    ...diffNamed(table, 'index', want.indexes, have.indexes, describeIndex),
    ...diffNamed(table, 'foreign key', want.foreignKeys, have.foreignKeys, describeForeignKey),
  ];
}

function diffColumns(table: string, want: Map<string, ExpectedColumn>, have: Map<string, ActualColumn>): string[] {
  const issues: string[] = [];
  for (const [name, col] of want) {
    const got = have.get(name);
    const where = `${table}.${name}`;
    if (!got) {
      issues.push(`column ${where} is missing`);
      continue;
    }
    if (got.type !== col.type) issues.push(`column ${where} is ${got.type}, schema says ${col.type}`);
    if (got.nullable !== col.nullable) issues.push(`column ${where} is ${nullability(got.nullable)}, schema says ${nullability(col.nullable)}`);
    issues.push(...diffDefault(where, col.default, got.default));
  }
  for (const name of have.keys()) {
    if (!want.has(name)) issues.push(`column ${table}.${name} is not in the Prisma schema`);
  }
  return issues;
}

function diffDefault(where: string, want: RegExp | null, have: string | null): string[] {
  if (want === null && have !== null) return [`column ${where} has default ${have}, schema has none`];
  if (want !== null && have === null) return [`column ${where} has no default, schema expects ${want.source}`];
  if (want !== null && have !== null && !want.test(have)) return [`column ${where} has default ${have}, schema expects ${want.source}`];
  return [];
}

function nullability(nullable: boolean): string {
  return nullable ? 'nullable' : 'NOT NULL';
}

function diffNamed<T>(table: string, kind: string, want: Map<string, T>, have: Map<string, T>, describe: (x: T) => string): string[] {
  const issues: string[] = [];
  for (const [name, shape] of want) {
    const got = have.get(name);
    if (!got) issues.push(`${kind} ${name} on ${table} (${describe(shape)}) is missing`);
    else if (describe(got) !== describe(shape)) issues.push(`${kind} ${name} on ${table} is ${describe(got)}, schema says ${describe(shape)}`);
  }
  for (const [name, shape] of have) {
    if (!want.has(name)) issues.push(`${kind} ${name} on ${table} (${describe(shape)}) is not in the Prisma schema`);
  }
  return issues;
}

function describeIndex(index: IndexShape): string {
  const kind = index.primary ? 'primary key' : index.unique ? 'unique' : 'index';
  return `${kind} (${index.columns.join(', ')})`;
}

function describeForeignKey(fk: ForeignKeyShape): string {
  return `(${fk.columns.join(', ')}) → ${fk.refTable} (${fk.refColumns.join(', ')}) on delete ${fk.onDelete} on update ${fk.onUpdate}`;
}
