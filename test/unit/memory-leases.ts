import {
  LeaderElector,
  type LeaderElectionOptions,
  type Lease,
  type LeaseClient,
} from '../../runtime/kube/leader-election';
import { KubeApiError } from '../../runtime/kube/rest';
import { sleep } from '../sleep';

/**
 * An in-memory Lease store with the API server's optimistic concurrency. Its calls can be made to
 * fail at once (`failing`: a refused connection) or to hang until their signal aborts (`hang`: a
 * partition that holds the connection open; `aborted` counts the calls so ended).
 */
export class MemoryLeases implements LeaseClient {
  lease: Lease | undefined;
  failing = false;
  hang = false;
  aborted = 0;
  private version = 0;

  get(_namespace: string, _name: string, signal?: AbortSignal): Promise<Lease | undefined> {
    return this.answer(signal, () => this.lease && structuredClone(this.lease));
  }

  create(lease: Lease, signal?: AbortSignal): Promise<Lease> {
    return this.answer(signal, () => {
      if (this.lease) throw new KubeApiError(409, 'AlreadyExists', 'exists', undefined);
      return this.store(lease);
    });
  }

  update(lease: Lease, signal?: AbortSignal): Promise<Lease> {
    return this.answer(signal, () => {
      if (lease.metadata?.resourceVersion !== this.lease?.metadata?.resourceVersion)
        throw new KubeApiError(409, 'Conflict', 'stale', undefined);
      return this.store(lease);
    });
  }

  private async answer<T>(signal: AbortSignal | undefined, answer: () => T): Promise<T> {
    if (this.failing) throw new Error('connection refused');
    if (!this.hang) return answer();
    return new Promise((_resolve, reject) => {
      if (!signal) return; // hangs for ever: the elector must not depend on the call ending
      signal.addEventListener('abort', () => {
        this.aborted++;
        reject(new Error('aborted'));
      });
    });
  }

  private store(lease: Lease): Lease {
    this.lease = {
      ...structuredClone(lease),
      metadata: { ...lease.metadata, resourceVersion: String(++this.version) },
    };
    return structuredClone(this.lease);
  }
}

/** The controller's Lease with election timings shrunk for tests: leaseDuration 15 and renewDeadline 10 retry periods. */
export const testTimings = (retryPeriodMs: number) => ({
  namespace: 'juneau-system',
  name: 'juneau-controller',
  leaseDurationMs: 15 * retryPeriodMs,
  renewDeadlineMs: 10 * retryPeriodMs,
  retryPeriodMs,
});

/** Starts a LeaderElector on `leases` and returns it once it leads, with the signal it was handed. */
export async function startLeading(
  leases: MemoryLeases,
  options: LeaderElectionOptions,
): Promise<{ elector: LeaderElector; signal: AbortSignal }> {
  let signal: AbortSignal | undefined;
  const elector = new LeaderElector(leases, { ...options, onStartedLeading: (s) => (signal = s) });
  elector.start();
  while (!elector.isLeader || !signal) await sleep(5);
  return { elector, signal };
}
