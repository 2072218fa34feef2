/**
 * Telling an uninstall from a restart when the agent is stopped.
 *
 * The responder stays attached with its maps pinned when the agent stops, so a node keeps
 * answering while its agent restarts, is rescheduled or rolls to a new version (ARCHITECTURE.md
 * "Answer"): SIGTERM alone must never detach. SIGTERM is the same signal for all of these and for
 * an uninstall, and a preStop hook runs on every one of them too, so the signal cannot decide.
 * What differs is the agent's owner: on an uninstall (`kubectl delete -f juneau-install.k8s.yaml`,
 * `kubectl delete namespace`, a Pulumi destroy) the agent's DaemonSet is deleted, or its namespace
 * is; on a restart or a rolling update the DaemonSet is still there and not being deleted.
 *
 * The agent watches exactly those two objects (field selector metadata.name, RBAC limited to
 * their names) from its start, while its credentials work: an uninstall deletes the agent's
 * ServiceAccount and RBAC in the same breath as the DaemonSet, so asking only when SIGTERM comes
 * would often get 401/403. The watch already open keeps delivering, and what it saw last decides.
 * Anything unknown (never synced, no owner configured) keeps the responder: a leftover program
 * answers nothing once its map is empty, a detached one on a restart breaks the promise.
 */
import type { Informer } from '../../kube/informer';
import { Informer as KubeInformer } from '../../kube/informer';
import type { Logger } from '../../kube/log';
import { Resources, type ResourceType } from '../../kube/resources';
import type { ListWatchClient } from '../../kube/informer';
import type { KubeObject } from '../../kube/types';

export const DAEMONSETS: ResourceType = {
  group: 'apps',
  version: 'v1',
  plural: 'daemonsets',
  kind: 'DaemonSet',
  namespaced: true,
};

/** `NAMESPACE/NAME` of the agent's DaemonSet (`--owner-daemonset`). */
export interface OwnerRef {
  readonly namespace: string;
  readonly name: string;
}

export function parseOwnerDaemonSet(value: string): OwnerRef {
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(value);
  if (!m) throw new Error(`--owner-daemonset must be NAMESPACE/NAME, not '${value}'`);
  return { namespace: m[1], name: m[3] };
}

export type StopKind =
  { readonly uninstall: true; readonly why: string } | { readonly uninstall: false; readonly why: string };

/** Watches the DaemonSet and its namespace; `stopKind()` says whether a stop now is an uninstall. */
export class UninstallWatch {
  private readonly daemonSet: Informer<KubeObject>;
  private readonly namespace: Informer<KubeObject>;

  constructor(
    client: ListWatchClient,
    private readonly owner: OwnerRef,
    logger?: Logger,
  ) {
    const byName = `metadata.name=${owner.name}`;
    this.daemonSet = new KubeInformer<KubeObject>(client, {
      type: DAEMONSETS,
      namespace: owner.namespace,
      fieldSelector: byName,
      logger,
    });
    this.namespace = new KubeInformer<KubeObject>(client, {
      type: Resources.namespaces,
      fieldSelector: `metadata.name=${owner.namespace}`,
      logger,
    });
  }

  start(): void {
    this.daemonSet.start();
    this.namespace.start();
  }

  /** Resolves once both objects have been listed (tests; the agent never waits on it). */
  waitForSync(timeoutMs?: number): Promise<void> {
    return Promise.all([this.daemonSet.waitForSync(timeoutMs), this.namespace.waitForSync(timeoutMs)]).then(
      () => undefined,
    );
  }

  async stop(): Promise<void> {
    await Promise.all([this.daemonSet.stop(), this.namespace.stop()]);
  }

  stopKind(): StopKind {
    const what = `DaemonSet ${this.owner.namespace}/${this.owner.name}`;
    if (!this.daemonSet.hasSynced || !this.namespace.hasSynced)
      return { uninstall: false, why: `${what} or its namespace never seen (not synced)` };
    const ns = this.namespace.get(undefined, this.owner.namespace);
    if (!ns || ns.metadata?.deletionTimestamp)
      return { uninstall: true, why: `namespace ${this.owner.namespace} ${ns ? 'is being deleted' : 'is gone'}` };
    const ds = this.daemonSet.get(this.owner.namespace, this.owner.name);
    if (!ds || ds.metadata?.deletionTimestamp)
      return { uninstall: true, why: `${what} ${ds ? 'is being deleted' : 'is gone'}` };
    return { uninstall: false, why: `${what} is in place (a restart or an update)` };
  }
}
