/** A client gone mid-answer: the attachment waits (bounded) for the answer under way to finish. */
export class ResponseWaiter {
  private waiter: (() => void) | null = null;

  /** Resolves when released or after `ms`. */
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.release(), ms);
      this.waiter = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  release(): void {
    const w = this.waiter;
    this.waiter = null;
    w?.();
  }
}
