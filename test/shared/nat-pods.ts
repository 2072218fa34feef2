// The Pods behind NetworkInterfaces for tests of desiredNat (runtime/agent/nat/desired.ts): a NIC
// binds only while the Pod its owner reference names is on the node, Running, with the NIC's
// address (H1). Tests that are about something else give each NIC such a Pod.
import type { NatInputs, PodObject } from '../../runtime/agent/nat/desired';

type Nic = NatInputs['networkInterfaces'][number];

/** The uid tests give the Pod `pod` of namespace `ns`. */
export const podUid = (ns: string, pod: string) => `uid-${ns}-${pod}`;

/** The controller owner reference the pod controller writes on a NIC of Pod `pod`. */
export const podOwner = (ns: string, pod: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  name: pod,
  uid: podUid(ns, pod),
  controller: true,
});

/** A Pod of `nodeName`: Running with `ip` unless `overrides` says otherwise. */
export function pod(
  ns: string,
  name: string,
  nodeName: string,
  ip: string | undefined,
  overrides: { phase?: string; uid?: string; deletionTimestamp?: string; hostNetwork?: boolean } = {},
): PodObject {
  return {
    metadata: {
      namespace: ns,
      name,
      uid: overrides.uid ?? podUid(ns, name),
      ...(overrides.deletionTimestamp ? { deletionTimestamp: overrides.deletionTimestamp } : {}),
    },
    spec: { nodeName, ...(overrides.hostNetwork ? { hostNetwork: true } : {}) },
    status: { phase: overrides.phase ?? 'Running', ...(ip ? { podIP: ip, podIPs: [{ ip }] } : {}) },
  };
}

/** A Running Pod for each NIC of `nodeName`, with the NIC's address. */
export function runningPodsOf(nics: readonly Nic[], nodeName: string): PodObject[] {
  return nics
    .filter((n) => n.spec?.nodeName === nodeName)
    .map((n) => pod(n.metadata?.namespace ?? '', n.spec?.podName ?? '', nodeName, n.spec?.address));
}
