// What a scheduler and a kubelet would do for the pods of one namespace, on a control plane that has
// neither (the cluster harness; the example's nginx image cannot be pulled here either): bind each
// new pod to the one Node, report it Running and Ready with an address, and finish a graceful
// delete as a kubelet does once the containers have stopped. The Kubernetes provider's awaits
// (Pod ready, Service endpoints) and deletes see the same object transitions a real node causes.
import type { V1Pod } from '@kubernetes/client-node';
import { sleep } from '../sleep';
import { clients, isNotFound, mergePatch } from '../cluster/fixture';

export interface FakeKubelet {
  /** The address given to each pod, by name. */
  readonly podIPs: ReadonlyMap<string, string>;
  stop(): Promise<void>;
}

/** Plays scheduler and kubelet for the pods of `namespace` on `nodeName` until stopped. */
export function startFakeKubelet(namespace: string, nodeName: string, firstPodIP: string): FakeKubelet {
  const { core } = clients();
  const podIPs = new Map<string, string>();
  const [a, b, c, d] = firstPodIP.split('.').map(Number);
  let stopped = false;
  const step = async (pod: V1Pod) => {
    const name = pod.metadata!.name!;
    if (pod.metadata?.deletionTimestamp) {
      // The containers are gone at once: the graceful delete completes (grace period 0).
      await core.deleteNamespacedPod({ namespace, name, gracePeriodSeconds: 0 });
      podIPs.delete(name);
      return;
    }
    if (!pod.spec?.nodeName) {
      await core.createNamespacedBinding({
        namespace,
        body: { metadata: { name }, target: { apiVersion: 'v1', kind: 'Node', name: nodeName } },
      });
    }
    if (pod.status?.phase !== 'Running') {
      const ip = `${a}.${b}.${c}.${d + podIPs.size}`;
      podIPs.set(name, ip);
      const now = new Date().toISOString();
      const conditions = ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({
        type,
        status: 'True',
        lastTransitionTime: now,
      }));
      await core.patchNamespacedPodStatus(
        {
          namespace,
          name,
          body: { status: { phase: 'Running', podIP: ip, podIPs: [{ ip }], hostIP: '10.224.0.10', conditions } },
        },
        mergePatch,
      );
    }
  };
  // Polling, not a watch: a kubelet's own status loop is periodic too, and a missed event only delays the next step.
  // A failure ends the loop and is thrown by stop() (the provider's awaits would time out meanwhile).
  const loop = (async () => {
    while (!stopped) {
      const pods = (await core.listNamespacedPod({ namespace })).items;
      for (const pod of pods) {
        try {
          await step(pod);
        } catch (err) {
          if (!isNotFound(err)) throw err; // deleted meanwhile: nothing left to do for it
        }
      }
      await sleep(250);
    }
  })();
  const failure = loop.then(
    () => undefined,
    (err: unknown) => err,
  );
  return {
    podIPs,
    async stop() {
      stopped = true;
      const err = await failure;
      if (err) throw new Error(`the fake kubelet failed: ${String(err)}`);
    },
  };
}
