/**
 * The start/stop safety every long-running part shares (the controller and
 * the webhook server), so a caller may stop at any moment:
 * - `start()` runs the start steps once; later calls return the same promise;
 * - `stop()` before `start()`: nothing is started afterwards (a later `start()` resolves at once);
 *   a standby replica that never led is stopped this way;
 * - `stop()` twice: the teardown runs once; every call resolves when it is done;
 * - `stop()` during `start()`: `stopRequested` resolves, so a start waiting for something that may
 *   never come (caches that cannot sync: API unreachable, client fenced) gives up, and the teardown
 *   waits for the start to return, so nothing it starts outlives stop().
 */
export class Lifecycle {
  private starting: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private requestStop: () => void = () => undefined;
  /** Resolves when stop() is called. */
  readonly stopRequested = new Promise<void>((resolve) => (this.requestStop = resolve));

  /** True once stop() was called: start steps check it after each wait. */
  get stopped(): boolean {
    return this.stopping !== undefined;
  }

  start(steps: () => Promise<void>): Promise<void> {
    if (this.stopping) return Promise.resolve();
    this.starting ??= steps();
    return this.starting;
  }

  stop(teardown: () => Promise<void>): Promise<void> {
    this.stopping ??= (async () => {
      this.requestStop();
      // A start that failed has nothing more to undo than one that finished; the teardown runs either way.
      await this.starting?.catch(() => undefined);
      await teardown();
    })();
    return this.stopping;
  }

  /** Waits for `step` unless stop() comes first: true when it finished and no stop was asked for. */
  async unlessStopped(step: Promise<unknown>): Promise<boolean> {
    await Promise.race([step, this.stopRequested]);
    return !this.stopped;
  }
}
