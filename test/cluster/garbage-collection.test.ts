// ownerReference garbage collection by the real kube-controller-manager, namespaced and
// cluster-scoped, background and foreground. Kubernetes' own behaviour, which Juneau relies on
// (SLB-1: a Service owns its ServiceLoadBalancer; EN-7: an ExternalNetwork owns its subnet-vni
// claim). No SPEC ID is claimed here: ARP-6's ownerReference case is for ARPAdvertisements of an
// ExternalNetworkAttachment, a kind that does not exist yet; ARP-6's finalizer case is proven in
// controller-slb.test.ts and eip-direct-nat.test.ts.
import { Resources, type ResourceType } from '../../runtime/kube/resources';
import type { KubeObject, OwnerReference } from '../../runtime/kube/types';
import { ignoreNotFound, isNotFound, TestResources, testRest, useNamespace, waitFor } from './fixture';

const GC_TIMEOUT = { timeoutMs: 30_000 };
const rest = testRest();
const owner = (kind: string, apiVersion: string, o: KubeObject): OwnerReference => ({
  apiVersion,
  kind,
  name: o.metadata!.name!,
  uid: o.metadata!.uid!,
});
/** Resolves true once the object is gone (NotFound), false while it exists. */
const gone = (type: ResourceType, namespace: string | undefined, name: string) =>
  rest.get(type, namespace, name).then(() => false, isNotFound);

describe('ownerReference garbage collection by the real kube-controller-manager', () => {
  const ns = useNamespace();
  const configMap = (name: string, ownerRef?: OwnerReference) =>
    rest.create(Resources.configMaps, {
      metadata: { name, namespace: ns(), ownerReferences: ownerRef ? [ownerRef] : undefined },
    });

  it('a namespaced object whose owner is deleted is garbage-collected', async () => {
    const namespace = ns();
    const parent = await configMap('parent');
    await configMap('child', owner('ConfigMap', 'v1', parent));
    await configMap('bystander');

    await rest.delete(Resources.configMaps, namespace, 'parent');

    await waitFor(() => gone(Resources.configMaps, namespace, 'child'), {
      ...GC_TIMEOUT,
      what: 'child ConfigMap collected',
    });
    await expect(rest.get(Resources.configMaps, namespace, 'bystander')).resolves.toBeDefined();
  });

  it('an object created with an ownerReference to an owner that no longer exists is garbage-collected', async () => {
    const namespace = ns();
    const parent = await configMap('gone');
    await rest.delete(Resources.configMaps, namespace, 'gone');
    await configMap('orphan', owner('ConfigMap', 'v1', parent));
    await waitFor(() => gone(Resources.configMaps, namespace, 'orphan'), {
      ...GC_TIMEOUT,
      what: 'orphan ConfigMap collected',
    });
  });

  it('a cluster-scoped object whose cluster-scoped owner is deleted is garbage-collected, also with foreground deletion', async () => {
    const ROLES = TestResources.clusterRoles;
    const suffix = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
    const names = {
      owner: `jt-owner-${suffix}`,
      child: `jt-child-${suffix}`,
      fgOwner: `jt-fg-owner-${suffix}`,
      fgChild: `jt-fg-child-${suffix}`,
    };
    const role = (name: string, ownerRef?: OwnerReference) =>
      rest.create(ROLES, {
        metadata: { name, labels: { 'juneau.test/gc': suffix }, ownerReferences: ownerRef ? [ownerRef] : undefined },
        rules: [],
      });
    try {
      const o = await role(names.owner);
      await role(names.child, owner('ClusterRole', 'rbac.authorization.k8s.io/v1', o));
      await rest.delete(ROLES, undefined, names.owner);
      await waitFor(() => gone(ROLES, undefined, names.child), {
        ...GC_TIMEOUT,
        what: 'child ClusterRole collected',
      });

      // Foreground: the owner stays (with the foregroundDeletion finalizer) until its blocking dependents are gone.
      const fo = await role(names.fgOwner);
      await role(names.fgChild, {
        ...owner('ClusterRole', 'rbac.authorization.k8s.io/v1', fo),
        blockOwnerDeletion: true,
      });
      await rest.delete(ROLES, undefined, names.fgOwner, {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        propagationPolicy: 'Foreground',
      });
      await waitFor(
        async () =>
          (await Promise.all([names.fgOwner, names.fgChild].map((name) => gone(ROLES, undefined, name)))).every(
            Boolean,
          ),
        { ...GC_TIMEOUT, what: 'foreground-deleted owner and its child gone' },
      );
    } finally {
      for (const name of Object.values(names)) await rest.delete(ROLES, undefined, name).catch(ignoreNotFound);
    }
  });
});
