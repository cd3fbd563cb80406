export { run, type CliIo } from './cli.js';
export { parseCommand, USAGE, UsageError, type Command } from './args.js';
export { RunningCost } from './cost.js';
