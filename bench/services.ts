// Where the benchmarks find a service to run as a process (`node --import tsx src/main.ts` from its folder,
// as scripts/start.mjs does): they drive services through their contract and import no service's src/.
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('..', import.meta.url));

/** The folder of `services/<name>`, with a trailing slash. */
export const serviceDir = (name: 'billing' | 'control-plane' | 'edge' | 'relay'): string =>
  fileURLToPath(new URL(`../services/${name}/`, import.meta.url));
