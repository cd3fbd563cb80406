// scripts/docs-check.ts (`npm run docs:check`, run by lint): a file table that names a path or an exported name
// that no longer exists fails, and its message names the document, line, table, row and path.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { checkDoc, formatProblem, ROOT } from '../scripts/docs-check.js';

const architecture = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
/** The "Session lifecycle" table of docs/architecture.md, with its heading, as a document of its own. */
const heading = '## Session lifecycle';
const start = architecture.indexOf(heading);
const table = architecture.slice(start, architecture.indexOf('\n\n', architecture.indexOf('| behaviour |', start)));

t.test('a copy of a true table passes', async (t) => {
  t.ok(table.includes('`create.ts` `createSession`'), 'the table names a file and an export');
  t.same(checkDoc('copy.md', table), []);
});

t.test('a broken path fails, naming the row and the path', async (t) => {
  const broken = table.replace('`create.ts` `createSession`', '`create-session.ts` `createSession`');
  const problems = checkDoc('copy.md', broken);
  t.equal(problems.length, 1, 'one problem: the name after a missing file is not reported again');
  t.match(
    formatProblem(problems[0]!),
    /^copy\.md:\d+: table "Session lifecycle", row "create a `ready` session \(one statement\)": packages\/sessions\/src\/create-session\.ts does not exist$/,
  );
  const line = broken.split('\n').findIndex((l) => l.includes('create-session.ts')) + 1;
  t.equal(problems[0]!.line, line, 'the line of the row');
});

t.test('an exported name that does not exist fails', async (t) => {
  const problems = checkDoc('copy.md', table.replace('`get.ts` `getSession`', '`get.ts` `fetchSession`'));
  t.equal(problems.length, 1);
  t.equal(problems[0]!.message, 'packages/sessions/src/get.ts exports no `fetchSession`');
  t.equal(problems[0]!.row, 'retrieve, expiring it when due (410)');
});

t.test('a package name, a size claim and a table base are checked too', async (t) => {
  const doc = [
    '## Relay',
    '',
    '| behaviour | file in `services/relay/src/` |',
    '|---|---|',
    '| session I/O | `@s2s/no-such-package` |',
    '| the process (≤ 3 lines) | `main.ts` |',
    '| a root path | `packages/core/src/money.ts` `billedCents` |',
  ].join('\n');
  const messages = checkDoc('copy.md', doc).map((p) => p.message);
  t.same(messages, ['`@s2s/no-such-package` is not a workspace package', messages[1]]);
  t.match(messages[1], /^services\/relay\/src\/main\.ts has \d+ lines, over the 3 the row states$/);
});

t.test('a layout table lists every package', async (t) => {
  const doc = ['| path | what |', '|---|---|', '| `packages/core` | the pure domain |'].join('\n');
  const missing = checkDoc('copy.md', doc).map((p) => p.message);
  t.ok(missing.includes('no row for services/relay'));
  t.ok(missing.includes('no row for bench'));
  t.notOk(missing.includes('no row for packages/core'));
});
