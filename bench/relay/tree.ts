// What a benchmark record says about where it ran: a tree's commit (with "+changes" when its tracked files differ
// from it) and the machine's 1-minute load average.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export const loadavg = (): number => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);

export function treeCommit(dir: string): string {
  const head = execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD']).toString().trim();
  const dirty = execFileSync('git', ['-C', dir, 'status', '--porcelain', '--untracked-files=no']).toString().trim();
  return dirty ? `${head}+changes` : head;
}
