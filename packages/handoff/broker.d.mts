import type { ChildProcess } from 'node:child_process';

/**
 * Carries the connections `edge` hands over to the relays it names (an index into `relays`) and each relay's
 * answer back; tells the edge when a relay's channel closes. Every child needs an 'ipc' stdio slot.
 */
export function brokerHandoffs(edge: ChildProcess, relays: readonly ChildProcess[]): void;
