import { spawn } from 'node:child_process';
import { SAMPLE_RATE } from '@s2s/client';

export interface Recording {
  /** Calls `fn` with whole-sample PCM16LE 24 kHz mono chunks as the recorder delivers them. */
  onAudio(fn: (pcm: Uint8Array) => void): void;
  stop(): void;
  /** Resolves when the recorder has exited (after stop, or on its own); rejects when it could not run. */
  done: Promise<void>;
}

/** sox's `rec` writing raw PCM16LE 24 kHz mono to stdout (what the gateway takes, no conversion). */
export function recordMicrophone(program = 'rec'): Recording {
  const child = spawn(program, ['-q', '-t', 'raw', '-b', '16', '-e', 'signed-integer', '-c', '1', '-r', String(SAMPLE_RATE), '-'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  let listener: (pcm: Uint8Array) => void = () => {};
  let carry: Buffer = Buffer.alloc(0);
  child.stdout.on('data', (chunk: Buffer) => {
    // Chunks may split a sample: the odd byte waits for the next one.
    const all = carry.length ? Buffer.concat([carry, chunk]) : chunk;
    const even = all.length - (all.length % 2);
    carry = all.subarray(even);
    if (even > 0) listener(all.subarray(0, even));
  });
  let stopped = false;
  const done = new Promise<void>((resolve, reject) => {
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(err.code === 'ENOENT' ? `--mic needs sox's ${program} on PATH (apt-get install sox)` : `${program}: ${err.message}`),
      ),
    );
    child.once('exit', (code, signal) => {
      if (stopped || code === 0) return resolve();
      reject(new Error(`${program} exited with ${code ?? signal}: ${stderr.trim() || 'no output'}`));
    });
  });
  return {
    onAudio: (fn) => (listener = fn),
    stop: () => {
      stopped = true;
      child.kill('SIGTERM');
    },
    done,
  };
}
