import { S2SError } from '@s2s/client';
import { parseCommand, USAGE, UsageError, type Env } from './args.js';
import { runApiCommand } from './commands.js';
import type { Output } from './progress.js';
import { talk, type TalkIo } from './talk.js';
import { call } from './call.js';

export interface CliIo extends TalkIo {
  stderr: Output;
  env: Env;
}

/**
 * Runs one command line; resolves with the exit code: 0 done, 1 the gateway or the input failed (the
 * message names the URL or the file), 2 a command line refused (with the usage).
 */
export async function run(argv: string[], io: CliIo): Promise<number> {
  try {
    const cmd = parseCommand(argv, io.env);
    if (cmd.kind === 'help') {
      io.stdout.write(`${USAGE}\n`);
      return 0;
    }
    if (cmd.kind !== 'models' && !cmd.key) throw new UsageError('an API key is needed: --key vr_sk_… or S2S_API_KEY');
    if (cmd.kind === 'talk') await talk(cmd, io);
    else if (cmd.kind === 'call') await call(cmd, io);
    else await runApiCommand(cmd, io.stdout);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`s2s: ${err.message}\n\n${USAGE}\n`);
      return 2;
    }
    io.stderr.write(`s2s: ${err instanceof S2SError || err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
