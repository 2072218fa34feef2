/**
 * The one interruptible sleep of the runtime: loops that wait between attempts (informer
 * backoff, leader-election retries) sleep here, and `wake()` ends the current sleep at once so a
 * stop never waits out a timer.
 */
export class Sleeper {
  private wakeCurrent: (() => void) | undefined;

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        if (this.wakeCurrent === done) this.wakeCurrent = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeCurrent = done;
    });
  }

  /** Ends the sleep in progress, if any. */
  wake(): void {
    this.wakeCurrent?.();
  }
}
