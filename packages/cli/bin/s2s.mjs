#!/usr/bin/env node
// `s2s`: in the workspace it runs the TypeScript sources (tsx, with the @s2s/source condition, so nothing
// needs building); installed from a build it runs dist/main.js. Ctrl-C reaches the child through the
// terminal's process group (so it is not passed on twice); SIGTERM sent to the launcher is.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const source = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const args = existsSync(source)
  ? ['--conditions=@s2s/source', '--import', import.meta.resolve('tsx'), source]
  : [fileURLToPath(new URL('../dist/main.js', import.meta.url))];
const child = spawn(process.execPath, [...args, ...process.argv.slice(2)], { stdio: 'inherit' });
process.on('SIGINT', () => {});
process.on('SIGTERM', () => child.kill('SIGTERM'));
child.on('exit', (code, signal) => process.exit(code ?? (signal === 'SIGTERM' ? 143 : 130)));
