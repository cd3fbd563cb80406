// A billing process like src/main.ts with a crash point injected: `exit_after_commit` exits (code 137)
// right after any fold or settlement commit, `exit_after_settle` right after a settlement commit.
import { loadConfig } from '../src/config.js';
import { startBilling } from '../src/service.js';

const fault = process.argv[2];
const crash = () => process.exit(137);
if (fault !== 'exit_after_commit' && fault !== 'exit_after_settle') throw new Error(`unknown fault ${fault}`);
const billing = await startBilling(loadConfig(process.env), {
  faults: fault === 'exit_after_commit' ? { afterFoldCommit: crash, afterSettleCommit: crash } : { afterSettleCommit: crash },
});
process.once('SIGTERM', () => void billing.drain().then(() => process.exit(0)));
