// `s2s` (bin/s2s.mjs runs this file): the process's argv, environment, streams and Ctrl-C, handed to run().
import { run } from './cli.js';

const code = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  onInterrupt: (fn) => process.once('SIGINT', fn),
});
process.exitCode = code;
