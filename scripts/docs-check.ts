// `npm run docs:check` (run by `npm run lint`): the tables of the docs that name files stay true.
// - A table column headed `file` (or `file in `<dir>``, the folder its paths are relative to), `unit` or `path`
//   names paths, which must exist; a name in backticks after a `.ts` path in the same cell (`create.ts`
//   `createSession`) must be exported by that file; `@s2s/<name>` must be a workspace package; a row that says
//   "≤ N lines" holds its first file to that size.
// - A `unit` or `path` column lists every workspace unit (packages/*, services/*, bench).
// Each problem names the document, line, table and row, and what is wrong with which path.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/** The documents whose tables are checked. */
export const DOCS = ['docs/architecture.md', 'README.md'];
/** Paths starting with one of these are relative to the repository root whatever the table's folder. */
const ROOT_DIRS = /^(packages|services|scripts|bench|tests|docs|deploy)\//;

export interface Problem {
  doc: string;
  line: number;
  table: string;
  row: string;
  message: string;
}

export const formatProblem = (p: Problem): string => `${p.doc}:${p.line}: table "${p.table}", row "${p.row}": ${p.message}`;

interface Table {
  heading: string;
  header: string[];
  rows: { line: number; cells: string[] }[];
}

/** Splits `| a | b |` into cells, leaving a `|` inside backticks alone. */
function cellsOf(line: string): string[] {
  const cells: string[] = [];
  let cell = '';
  let code = false;
  for (const ch of line.trim().replace(/^\||\|$/g, '')) {
    if (ch === '`') code = !code;
    if (ch === '|' && !code) {
      cells.push(cell.trim());
      cell = '';
    } else cell += ch;
  }
  cells.push(cell.trim());
  return cells;
}

function tablesOf(text: string): Table[] {
  const lines = text.split('\n');
  const tables: Table[] = [];
  let heading = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^#{1,6} /.test(line)) heading = line.replace(/^#+ /, '');
    if (!line.startsWith('|') || !/^\|[\s:|-]+\|$/.test(lines[i + 1] ?? '')) continue;
    const table: Table = { heading, header: cellsOf(line), rows: [] };
    for (i += 2; i < lines.length && lines[i]!.startsWith('|'); i++) table.rows.push({ line: i + 1, cells: cellsOf(lines[i]!) });
    tables.push(table);
  }
  return tables;
}

const codeSpans = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
const isIdentifier = (s: string) => /^[A-Za-z_$][\w$]*$/.test(s);

/** The workspace's package names (for `@s2s/...`) and its units (for completeness). */
function workspace(root: string): { packages: Map<string, string>; units: string[] } {
  const packages = new Map<string, string>();
  const units: string[] = [];
  const add = (dir: string, unit: boolean) => {
    const manifest = join(root, dir, 'package.json');
    if (!existsSync(manifest)) return;
    packages.set((JSON.parse(readFileSync(manifest, 'utf8')) as { name: string }).name, dir);
    if (unit) units.push(dir);
  };
  for (const top of ['packages', 'services']) {
    if (!existsSync(join(root, top))) continue;
    for (const d of readdirSync(join(root, top)).sort()) add(`${top}/${d}`, true);
  }
  add('bench', true);
  for (const d of existsSync(join(root, 'tests')) ? readdirSync(join(root, 'tests')) : []) add(`tests/${d}`, false);
  return { packages, units };
}

/** Exported names of TypeScript files, `export *` and re-exports followed, in one program. */
function exportsOf(files: string[]): Map<string, Set<string>> {
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    customConditions: ['@s2s/source'],
    allowJs: false,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const out = new Map<string, Set<string>>();
  for (const file of files) {
    const sf = program.getSourceFile(file);
    const symbol = sf && checker.getSymbolAtLocation(sf);
    out.set(file, new Set(symbol ? checker.getExportsOfModule(symbol).map((s) => s.getName()) : []));
  }
  return out;
}

/** The problems of one document's tables; `root` is where its paths resolve. */
export function checkDoc(doc: string, text: string, root = ROOT): Problem[] {
  const problems: Problem[] = [];
  const { packages, units } = workspace(root);
  const pending: { file: string; name: string; at: Omit<Problem, 'message'> }[] = [];
  for (const table of tablesOf(text)) {
    const pathColumns = table.header
      .map((h, i) => ({ i, h: h.toLowerCase() }))
      .filter(({ h }) => /^(file|unit|path)\b/.test(h))
      .map(({ i, h }) => ({ i, base: codeSpans(table.header[i]!)[0]?.replace(/\/?$/, '/') ?? '', units: /^(unit|path)\b/.test(h) }));
    if (!pathColumns.length) continue;
    for (const column of pathColumns) {
      const listed = new Set<string>();
      for (const row of table.rows) {
        const at = { doc, line: row.line, table: table.heading, row: (row.cells[0] ?? '').slice(0, 80) };
        const fail = (message: string) => problems.push({ ...at, message });
        let lastFile: string | undefined;
        let firstFile: string | undefined;
        let missing = false; // the cell's last path did not exist: its names are not checked again
        for (const span of codeSpans(row.cells[column.i] ?? '')) {
          if (span.startsWith('@s2s/')) {
            const name = span.split('/').slice(0, 2).join('/');
            if (!packages.has(name)) fail(`\`${span}\` is not a workspace package`);
            lastFile = undefined;
            missing = false;
          } else if (column.units || span.includes('/') || /\.(ts|mjs|js|json|md|ya?ml|prisma)$/.test(span)) {
            const path = ROOT_DIRS.test(span) ? span : `${column.base}${span}`;
            listed.add(path.replace(/\/$/, ''));
            missing = !existsSync(join(root, path));
            if (missing) {
              fail(`${path} does not exist`);
              lastFile = undefined;
              continue;
            }
            lastFile = statSync(join(root, path)).isFile() ? path : undefined;
            firstFile ??= lastFile;
          } else if (isIdentifier(span)) {
            if (lastFile?.endsWith('.ts')) pending.push({ file: lastFile, name: span, at });
            else if (!missing) fail(`\`${span}\` follows no .ts file in its cell`);
          }
        }
        const limit = /≤ ?(\d+) lines/.exec(row.cells.join(' '));
        if (limit && firstFile) {
          const lines = readFileSync(join(root, firstFile), 'utf8').trimEnd().split('\n').length;
          if (lines > Number(limit[1])) fail(`${firstFile} has ${lines} lines, over the ${limit[1]} the row states`);
        }
      }
      if (column.units)
        for (const unit of units.filter((u) => !listed.has(u)))
          problems.push({
            doc,
            line: table.rows[0]?.line ?? 0,
            table: table.heading,
            row: '(the whole table)',
            message: `no row for ${unit}`,
          });
    }
  }
  if (pending.length) {
    const exported = exportsOf([...new Set(pending.map((p) => join(root, p.file)))]);
    for (const p of pending)
      if (!exported.get(join(root, p.file))?.has(p.name)) problems.push({ ...p.at, message: `${p.file} exports no \`${p.name}\`` });
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const problems = DOCS.flatMap((doc) => checkDoc(doc, readFileSync(join(ROOT, doc), 'utf8')));
  for (const p of problems) process.stderr.write(`${formatProblem(p)}\n`);
  if (problems.length) {
    process.stderr.write(`docs:check: ${problems.length} problem(s); fix the rows above (or the code they name)\n`);
    process.exit(1);
  }
  process.stdout.write(`docs:check: the file tables of ${DOCS.join(', ')} are true (${relative(process.cwd(), ROOT) || '.'})\n`);
}
