// Server-side apply with per-component field managers, the status subresource, and finalizers.
import {
  FieldManagers,
  type FieldManager,
  addFinalizer,
  applyObject,
  applyStatus,
  removeFinalizer,
} from '../../runtime/kube/apply';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import { KubeApiError, isConflict } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { testRest, useNamespace } from './fixture';

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}
interface Service extends KubeObject {
  spec?: { type?: string; ports?: Array<{ port: number; protocol?: string }> };
  status?: { loadBalancer?: { ingress?: Array<{ ip: string; ipMode?: string }> } };
}
const managers = (
  o: KubeObject & {
    metadata?: { managedFields?: Array<{ manager: string; operation: string; subresource?: string }> };
  },
) =>
  (o.metadata?.managedFields ?? [])
    .map((f) => `${f.manager}/${f.operation}${f.subresource ? '/' + f.subresource : ''}`)
    .sort();

describe('apply helpers on a real API server', () => {
  const rest = testRest();
  const namespace = useNamespace();
  let ns: string;
  beforeEach(() => (ns = namespace()));

  it('server-side applies as juneau-controller, shares an object with juneau-agent, and detects conflicts', async () => {
    /** Applies `data` to the ConfigMap `shared` as `manager`. */
    const applyShared = (data: Record<string, string>, manager: FieldManager, options?: { force: boolean }) =>
      applyObject<ConfigMap>(
        rest,
        Resources.configMaps,
        { metadata: { name: 'shared', namespace: ns }, data },
        manager,
        options,
      );
    const created = await applyShared({ owner: 'controller' }, FieldManagers.controller, { force: false });
    expect(created.data).toEqual({ owner: 'controller' });
    const both = await applyShared({ iface: 'eth0' }, FieldManagers.agent, { force: false });
    expect(both.data).toEqual({ owner: 'controller', iface: 'eth0' });
    expect(managers(both)).toEqual(['juneau-agent/Apply', 'juneau-controller/Apply']);

    const conflict = await applyShared({ owner: 'agent' }, FieldManagers.agent, { force: false }).catch(
      (e: unknown) => e,
    );
    expect(conflict).toBeInstanceOf(KubeApiError);
    expect((conflict as KubeApiError).code).toBe(409);
    expect((conflict as KubeApiError).message).toContain('juneau-controller');

    // The controller re-applies without a field: it is removed (it owned it alone).
    const pruned = await applyShared({}, FieldManagers.controller);
    expect(pruned.data).toEqual({ iface: 'eth0' });
  });

  it('writes Service status through the status subresource (server-side apply)', async () => {
    await rest.create<Service>(Resources.services, {
      metadata: { name: 'web', namespace: ns },
      spec: { type: 'LoadBalancer', ports: [{ port: 80 }] },
    });
    const applied = await applyStatus<Service['status'], Service>(
      rest,
      Resources.services,
      { namespace: ns, name: 'web' },
      { loadBalancer: { ingress: [{ ip: '192.0.2.10', ipMode: 'VIP' }] } },
      FieldManagers.controller,
    );
    expect(applied.status?.loadBalancer?.ingress).toEqual([{ ip: '192.0.2.10', ipMode: 'VIP' }]);
    expect(managers(applied)).toContain('juneau-controller/Apply/status');
  });

  it('adds and removes a finalizer, refusing to overwrite a concurrent change', async () => {
    const cm = await rest.create<ConfigMap>(Resources.configMaps, {
      metadata: { name: 'fin', namespace: ns, finalizers: ['example.com/other'] },
    });
    const added = await addFinalizer(rest, Resources.configMaps, cm, 'juneau.io/cleanup', FieldManagers.controller);
    expect(added.metadata?.finalizers).toEqual(['example.com/other', 'juneau.io/cleanup']);
    expect(await addFinalizer(rest, Resources.configMaps, added, 'juneau.io/cleanup', FieldManagers.controller)).toBe(
      added,
    ); // no write
    // From the stale first copy: the merge patch carries its resourceVersion, so it is refused.
    const stale = await addFinalizer(
      rest,
      Resources.configMaps,
      cm,
      'juneau.io/second',
      FieldManagers.controller,
    ).catch((e: unknown) => e);
    expect(isConflict(stale)).toBe(true);
    const removed = await removeFinalizer(
      rest,
      Resources.configMaps,
      added,
      'juneau.io/cleanup',
      FieldManagers.controller,
    );
    expect(removed.metadata?.finalizers).toEqual(['example.com/other']);
    await removeFinalizer(rest, Resources.configMaps, removed, 'example.com/other', FieldManagers.controller);
  });

  it('SLB-4: a ServiceLoadBalancer whose advertisingNodes is emptied by an apply reads [] (atomic list; an emptied set would vanish)', async () => {
    const SLB = JuneauResources.serviceLoadBalancers;
    await rest.create(SLB, {
      apiVersion: 'juneau.loutres.me/v1alpha1',
      kind: 'ServiceLoadBalancer',
      metadata: { name: 'web', namespace: ns },
      spec: {},
    } as KubeObject);
    const seen: unknown[] = [];
    for (const advertisingNodes of [['node-a', 'node-b'], ['node-b'], []]) {
      const r = await applyStatus<
        { advertisingNodes?: string[] },
        KubeObject & { status?: { advertisingNodes?: string[] } }
      >(rest, SLB, { namespace: ns, name: 'web' }, { advertisingNodes }, FieldManagers.controller);
      seen.push(r.status?.advertisingNodes);
    }
    expect(seen).toEqual([['node-a', 'node-b'], ['node-b'], []]);
  });
});
