// ownerReference garbage collection by the real kube-controller-manager (ARP-6 relies on it:
// ARPAdvertisements created for an ExternalNetworkAttachment are collected with it; both are
// cluster-scoped, so the cluster-scoped case is covered as well as the namespaced one).
import { V1ClusterRole, V1OwnerReference, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { clients, ignoreNotFound, isNotFound, useNamespace, waitFor } from './fixture';

const GC_TIMEOUT = { timeoutMs: 30_000 };
const owner = (
  kind: string,
  apiVersion: string,
  o: { metadata?: { name?: string; uid?: string } },
): V1OwnerReference => ({
  apiVersion,
  kind,
  name: o.metadata!.name!,
  uid: o.metadata!.uid!,
});

describe('ownerReference garbage collection (ARP-6 depends on it)', () => {
  const ns = useNamespace();

  it('a namespaced object whose owner is deleted is garbage-collected', async () => {
    const { core } = clients();
    const namespace = ns();
    const parent = await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'parent' } } });
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'child', ownerReferences: [owner('ConfigMap', 'v1', parent)] } },
    });
    await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'bystander' } } });

    await core.deleteNamespacedConfigMap({ namespace, name: 'parent' });

    await waitFor(() => core.readNamespacedConfigMap({ namespace, name: 'child' }).then(() => false, isNotFound), {
      ...GC_TIMEOUT,
      what: 'child ConfigMap collected',
    });
    await expect(core.readNamespacedConfigMap({ namespace, name: 'bystander' })).resolves.toBeDefined();
  });

  it('an object created with an ownerReference to an owner that no longer exists is garbage-collected', async () => {
    const { core } = clients();
    const namespace = ns();
    const parent = await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'gone' } } });
    await core.deleteNamespacedConfigMap({ namespace, name: 'gone' });
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'orphan', ownerReferences: [owner('ConfigMap', 'v1', parent)] } },
    });
    await waitFor(() => core.readNamespacedConfigMap({ namespace, name: 'orphan' }).then(() => false, isNotFound), {
      ...GC_TIMEOUT,
      what: 'orphan ConfigMap collected',
    });
  });

  it('a cluster-scoped object whose cluster-scoped owner is deleted is garbage-collected, also with foreground deletion', async () => {
    const rbac = clients().kc.makeApiClient(RbacAuthorizationV1Api);
    const suffix = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
    const names = {
      owner: `jt-owner-${suffix}`,
      child: `jt-child-${suffix}`,
      fgOwner: `jt-fg-owner-${suffix}`,
      fgChild: `jt-fg-child-${suffix}`,
    };
    const role = (name: string, ownerRef?: V1OwnerReference): V1ClusterRole => ({
      metadata: { name, labels: { 'juneau.test/gc': suffix }, ownerReferences: ownerRef ? [ownerRef] : undefined },
      rules: [],
    });
    try {
      const o = await rbac.createClusterRole({ body: role(names.owner) });
      await rbac.createClusterRole({
        body: role(names.child, owner('ClusterRole', 'rbac.authorization.k8s.io/v1', o)),
      });
      await rbac.deleteClusterRole({ name: names.owner });
      await waitFor(() => rbac.readClusterRole({ name: names.child }).then(() => false, isNotFound), {
        ...GC_TIMEOUT,
        what: 'child ClusterRole collected',
      });

      // Foreground: the owner stays (with the foregroundDeletion finalizer) until its blocking dependents are gone.
      const fo = await rbac.createClusterRole({ body: role(names.fgOwner) });
      await rbac.createClusterRole({
        body: role(names.fgChild, {
          ...owner('ClusterRole', 'rbac.authorization.k8s.io/v1', fo),
          blockOwnerDeletion: true,
        }),
      });
      await rbac.deleteClusterRole({ name: names.fgOwner, propagationPolicy: 'Foreground' });
      await waitFor(
        async () =>
          (
            await Promise.all(
              [names.fgOwner, names.fgChild].map((name) =>
                rbac.readClusterRole({ name }).then(() => false, isNotFound),
              ),
            )
          ).every(Boolean),
        { ...GC_TIMEOUT, what: 'foreground-deleted owner and its child gone' },
      );
    } finally {
      for (const name of Object.values(names)) await rbac.deleteClusterRole({ name }).catch(ignoreNotFound);
    }
  });
});
