// `npm start` run by an ordinary user where no PostgreSQL and no NATS answer (the embedded-servers test
// covers root when the suite runs as root; this one switches to `nobody`, which needs root to do). The
// user's clone and data are in its own folder of mode 0700, as in a home directory: the test prepares
// that (a copy of this workspace given to `nobody`), since `nobody` cannot enter this checkout.
import { chownSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { answers, identityOf, portsFrom, privateCopy, startScript, stop } from './npm-start.js';

// Whole-gateway starts from cold sources take tens of seconds on a loaded machine.
t.setTimeout(360_000);
// Clear of npm-start-embedded (16100–16108, and its second relay at 16205: start.mjs puts relay i on RELAY_PORT + 100 i),
// which tap may run at the same time.
const ports = portsFrom(16400);
const asRoot = process.getuid?.() === 0;
const USER = 'nobody';

t.test(
  `npm start as the ordinary user ${USER}, its clone in a 0700 folder`,
  { skip: asRoot ? false : 'switching users needs root' },
  async (t) => {
    const user = identityOf(USER);
    t.notOk(await answers(ports.pgProbe), 'nothing answers on the PostgreSQL probe port');
    const root = privateCopy(t, user);
    const dataDir = join(root, '.data');
    mkdirSync(dataDir, { mode: 0o700 });
    chownSync(dataDir, user.uid, user.gid);

    const run = startScript(t, ports, dataDir, { root, identity: user });
    await run.waitFor(/gateway ready/);
    await run.waitFor(/demo key \(shown once/);
    t.match(run.output(), `starting an embedded one on ${ports.pg}`);
    t.match(run.output(), `PostgreSQL: data in ${join(dataDir, 'postgres')}\n`, 'its own data dir, as given');
    t.ok(existsSync(join(dataDir, 'postgres', 'PG_VERSION')), 'the cluster lives in the data dir');
    t.equal(statSync(join(root, '..')).mode & 0o777, 0o700, 'the folder stays private');
    t.equal(await stop(run), 0, 'Ctrl-C stops it cleanly');
    t.notOk(await answers(ports.pg), 'the embedded PostgreSQL stopped');
    t.notOk(await answers(ports.nats), 'nats-server stopped');
  },
);
