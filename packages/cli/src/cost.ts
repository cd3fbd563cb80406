import type { Pricing, ResponseUsage } from '@s2s/contract';
import { addUsage, billedCents, scaledCost, SCALED_COST_PER_CENT, ZERO_USAGE, type Usage } from '@s2s/core';

/**
 * The running cost of a conversation: the usage of every `response.done` so far, priced by the catalog's
 * rates with the gateway's own formula (@s2s/core money: one rounding, the relay fee once any usage exists).
 * Input audio outside any response (silence after the last turn) reaches the settled bill only.
 */
export class RunningCost {
  #usage: Usage = { ...ZERO_USAGE };
  #responses = 0;

  constructor(readonly pricing: Pricing) {}

  add(usage: ResponseUsage): void {
    this.#usage = addUsage(this.#usage, usage);
    this.#responses++;
  }

  get responses(): number {
    return this.#responses;
  }

  get usage(): Readonly<Usage> {
    return this.#usage;
  }

  /** Unrounded, for display while the conversation goes on. */
  get cents(): number {
    return Number(scaledCost(this.pricing, this.#usage)) / Number(SCALED_COST_PER_CENT);
  }

  /** What the formula bills for this usage (whole cents, rounded up once). */
  get billedCents(): number {
    return billedCents(this.pricing, this.#usage);
  }
}
