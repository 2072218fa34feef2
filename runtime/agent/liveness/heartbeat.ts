/**
 * FO-2: the agent's heartbeat in the pinned config. While the agent can prove its view of the API
 * server is current, it moves the interface's heartbeat forward; the XDP program stops answering
 * (and keeps guarding) once the heartbeat is older than the expiry. An agent that is killed, hung,
 * or cut off from the API server therefore stops its node from answering within one expiry, while
 * a restart shorter than the expiry loses no answer (the new agent adopts the pinned heartbeat and
 * refreshes it once its informers have synced).
 *
 * What counts as proof is passed in (`provenAtNs`): the CLOCK_MONOTONIC time up to which the view
 * is known current, or undefined while it is not. The heartbeat is never set later than that time,
 * so the program's expiry counts from the last proof, not from the last write.
 */
import type { Logger } from '../../kube/log';
import { silentLogger } from '../../kube/log';

export interface HeartbeatTarget {
  /** ArpMaps.refreshHeartbeat: false when the interface has no config. */
  refreshHeartbeat(ifindex: number, nowNs: bigint): boolean;
}

export interface AnswerHeartbeatOptions {
  readonly maps: HeartbeatTarget;
  readonly ifindex: number;
  readonly expiryMs: number;
  /** The time up to which the agent's view is proven current, or undefined. */
  readonly provenAtNs: () => bigint | undefined;
  readonly logger?: Logger;
}

/** How often the proof is checked: a fifth of the expiry (so four missed checks still leave
 * margin), at most every 100 ms and at least every second. */
export function heartbeatIntervalMs(expiryMs: number): number {
  return Math.min(1_000, Math.max(100, Math.floor(expiryMs / 5)));
}

export class AnswerHeartbeat {
  private timer: NodeJS.Timeout | undefined;
  private lastNs = 0n;
  private proving = false;
  private readonly logger: Logger;

  constructor(private readonly options: AnswerHeartbeatOptions) {
    this.logger = options.logger ?? silentLogger;
  }

  start(): void {
    this.tick();
    this.timer = setInterval(() => this.tick(), heartbeatIntervalMs(this.options.expiryMs));
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** The last heartbeat written (CLOCK_MONOTONIC ns), 0n before the first. */
  get lastHeartbeatNs(): bigint {
    return this.lastNs;
  }

  tick(): void {
    const proven = this.options.provenAtNs();
    if (proven === undefined) {
      if (this.proving)
        this.logger.warn(
          'view of the API server not proven current; the heartbeat stops and answers expire after --answer-expiry',
          { expiryMs: this.options.expiryMs },
        );
      this.proving = false;
      return;
    }
    if (!this.proving)
      this.logger.info('view proven current; the heartbeat moves', { expiryMs: this.options.expiryMs });
    this.proving = true;
    if (proven <= this.lastNs) return;
    try {
      if (this.options.maps.refreshHeartbeat(this.options.ifindex, proven)) this.lastNs = proven;
    } catch (err) {
      this.logger.error('writing the heartbeat failed', { err });
    }
  }
}
