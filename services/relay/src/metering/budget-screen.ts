import { pcmMsCeil, type Usage } from '@s2s/core';
import type { CheckpointTicket, Checkpointer } from './checkpoints.js';
import { Budget } from './budget.js';

/**
 * The budget screen of one attachment: every change of its upstream's usage is noted for the checkpointer
 * and screened against the session's preauthorization. Once the budget is reached it stays exhausted.
 */
export class BudgetScreen {
  private exhaustedFlag = false;

  constructor(
    private readonly budget: Budget,
    private readonly checkpoints: Checkpointer,
    private readonly ticket: CheckpointTicket,
  ) {}

  get exhausted(): boolean {
    return this.exhaustedFlag;
  }

  /**
   * Input about to be forwarded: 'over' means it must be dropped (never forwarded, never billed) and
   * 'reached' that it is the last input the budget allows (each once, when the budget runs out);
   * 'exhausted' drops input that arrives after that.
   */
  admitInput(usage: Readonly<Usage>, bytes: number): 'under' | 'reached' | 'over' | 'exhausted' {
    if (this.exhaustedFlag) return 'exhausted';
    const state = this.budget.check(usage, pcmMsCeil(bytes));
    if (state !== 'under') this.exhaustedFlag = true;
    if (state !== 'over') this.checkpoints.markDirty(this.ticket, usage);
    return state;
  }

  /** Usage changed (input forwarded, output delivered, a response settled); true when the budget just ran out. */
  changed(usage: Readonly<Usage> | null): boolean {
    this.checkpoints.markDirty(this.ticket, usage ?? undefined);
    if (this.exhaustedFlag || usage === null) return false;
    if (this.budget.check(usage) === 'under') return false;
    this.exhaustedFlag = true;
    return true;
  }
}
