/**
 * FO-3: the agent's per-node Lease `juneau-agent-<node>` in the install namespace, renewed every
 * `renewIntervalMs`. The controller treats a node whose Lease it has not seen renewed for the
 * Lease's `leaseDurationSeconds` (by its own clock, like leader election) as unable to answer,
 * and moves its addresses.
 *
 * The renewal is also the agent's proof that it reaches the API server (FO-2): the heartbeat in
 * the pinned config is never set later than the moment the last successful renewal was *sent*
 * (`lastRenewSentNs`). So a node cut off from the API server stops answering at most
 * `--answer-expiry` after its last renewal, while the controller moves its addresses no earlier
 * than `leaseDurationSeconds` after it observed that renewal; with expiry <= lease duration
 * (checked on the flags), the old node is silent before the new one starts (FO-4).
 */
import { toMicroTime } from '../../kube/conditions';
import { AGENT_LEASE } from '../../../api/constants';
import { silentLogger, type Logger } from '../../kube/log';
import { resourcePath, Resources } from '../../kube/resources';
import { isNotFound, type RestClient } from '../../kube/rest';
import type { Lease } from '../../kube/leader-election';
import { monotonicNowNs } from '../bpf/clock';

/** The Lease's name for a node; the label lets the controller watch only agent Leases. */
export function agentLeaseName(nodeName: string): string {
  return `${AGENT_LEASE.namePrefix}${nodeName}`;
}
export const AGENT_LEASE_LABEL = AGENT_LEASE.label;

export interface AgentLeaseOptions {
  readonly rest: Pick<RestClient, 'request'>;
  readonly namespace: string;
  readonly nodeName: string;
  readonly leaseDurationMs: number;
  readonly renewIntervalMs: number;
  /** Each renewal gives up after this long, so a hung connection does not stall the loop. @default renewIntervalMs */
  readonly requestTimeoutMs?: number;
  readonly logger?: Logger;
}

export class AgentLease {
  private timer: NodeJS.Timeout | undefined;
  private lastSentNs: bigint | undefined;
  private failing = false;
  private stopped = false;
  private inFlight: Promise<void> | undefined;
  private readonly logger: Logger;

  constructor(private readonly options: AgentLeaseOptions) {
    this.logger = options.logger ?? silentLogger;
  }

  get name(): string {
    return agentLeaseName(this.options.nodeName);
  }

  /** CLOCK_MONOTONIC ns at which the last successful renewal was sent; undefined before one. */
  get lastRenewSentNs(): bigint | undefined {
    return this.lastSentNs;
  }

  start(): void {
    const tick = () => {
      if (this.stopped) return;
      this.inFlight = this.renew().finally(() => {
        if (!this.stopped) this.timer = setTimeout(tick, this.options.renewIntervalMs);
      });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.inFlight;
  }

  /** One renewal: patch renewTime, or create the Lease when it does not exist. */
  async renew(): Promise<void> {
    const sentNs = monotonicNowNs();
    const now = toMicroTime(new Date());
    const spec = {
      holderIdentity: this.options.nodeName,
      leaseDurationSeconds: Math.ceil(this.options.leaseDurationMs / 1000),
      renewTime: now,
    };
    const timeoutMs = this.options.requestTimeoutMs ?? this.options.renewIntervalMs;
    try {
      try {
        const path = resourcePath(Resources.leases, this.options.namespace, this.name);
        await this.options.rest.request('PATCH', path, {
          body: { spec },
          contentType: 'application/merge-patch+json',
          timeoutMs,
        });
      } catch (err) {
        if (!isNotFound(err)) throw err;
        const lease: Lease = {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: {
            name: this.name,
            namespace: this.options.namespace,
            labels: { [AGENT_LEASE_LABEL.key]: AGENT_LEASE_LABEL.value },
          },
          spec: { ...spec, acquireTime: now },
        };
        await this.options.rest.request('POST', resourcePath(Resources.leases, this.options.namespace), {
          body: lease,
          timeoutMs,
        });
      }
      this.lastSentNs = sentNs;
      if (this.failing) this.logger.info('agent Lease renewed again', { lease: this.name });
      this.failing = false;
    } catch (err) {
      if (!this.failing)
        this.logger.warn('agent Lease not renewed; the heartbeat stops with it (FO-2)', { lease: this.name, err });
      this.failing = true;
    }
  }
}
