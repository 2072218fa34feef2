// EndpointSlices from the real EndpointSlice controller for Pods whose status the test sets (there
// is no kubelet). SLB-4 relies on them: advertisingNodes are nodes with at least one Ready, Serving,
// non-terminating endpoint, read from EndpointSlice `nodeName` and `conditions`.
import { Resources } from '../../runtime/kube/resources';
import {
  createRunningPod,
  deleteNodes,
  deletePodNow,
  type EndpointSlice,
  ensureNode,
  setPodReady,
  testRest,
  useNamespace,
  waitFor,
  waitForMatch,
} from './fixture';

const byIP = (slices: EndpointSlice[]) =>
  new Map(slices.flatMap((s) => (s.endpoints ?? []).map((e) => [e.addresses[0], e] as const)));

describe('EndpointSlices of a selector Service (SLB-4 depends on them)', () => {
  const ns = useNamespace();
  const nodes: string[] = [];
  afterAll(() => deleteNodes(nodes));

  it('list endpoints with nodeName and ready/serving/terminating conditions that follow the Pods', async () => {
    const rest = testRest();
    const namespace = ns();
    const [w1, w2] = [`${namespace}-w1`, `${namespace}-w2`];
    nodes.push(w1, w2);
    await ensureNode(w1, { internalIP: '192.0.2.11' });
    await ensureNode(w2, { internalIP: '192.0.2.12' });

    await rest.create(Resources.services, {
      metadata: { name: 'web', namespace },
      spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
    });
    const ports = [{ name: 'http', containerPort: 8080 }];
    const pods = [
      { name: 'web-1', app: 'web', nodeName: w1, podIP: '10.244.1.10', ready: true },
      { name: 'web-2', app: 'web', nodeName: w2, podIP: '10.244.2.10', ready: false },
      { name: 'other', app: 'other', nodeName: w1, podIP: '10.244.1.99', ready: true },
    ];
    for (const { app, ...pod } of pods) await createRunningPod({ namespace, labels: { app }, ports, ...pod });

    const slices = () =>
      rest
        .list<EndpointSlice>(Resources.endpointSlices, { namespace, labelSelector: 'kubernetes.io/service-name=web' })
        .then((l) => l.items);

    const first = await waitForMatch(
      () => slices(),
      (s) => byIP(s).size === 2,
      'EndpointSlice with both web pods',
    );
    expect(first.every((s) => s.addressType === 'IPv4')).toBe(true);
    expect(
      first.every((s) =>
        s.metadata?.ownerReferences?.some((o) => o.kind === 'Service' && o.name === 'web' && o.controller),
      ),
    ).toBe(true);
    expect(
      first.every(
        (s) => s.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'] === 'endpointslice-controller.k8s.io',
      ),
    ).toBe(true);
    expect(first[0].ports).toEqual([expect.objectContaining({ name: 'http', port: 8080, protocol: 'TCP' })]); // named targetPort resolved
    let eps = byIP(first);
    expect(eps.has('10.244.1.99')).toBe(false);
    expect(eps.get('10.244.1.10')).toMatchObject({
      nodeName: w1,
      targetRef: { kind: 'Pod', name: 'web-1', namespace },
      conditions: { ready: true, serving: true, terminating: false },
    });
    expect(eps.get('10.244.2.10')).toMatchObject({
      nodeName: w2,
      conditions: { ready: false, serving: false, terminating: false },
    });

    // web-2 becomes Ready.
    await setPodReady(namespace, 'web-2', true);
    await waitFor(async () => byIP(await slices()).get('10.244.2.10')?.conditions?.ready === true, {
      what: 'web-2 ready in the slice',
    });

    // A graceful delete leaves web-1 Terminating (no kubelet finishes it): still serving, not ready.
    await rest.delete(Resources.pods, namespace, 'web-1', {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      gracePeriodSeconds: 300,
    });
    await waitFor(async () => byIP(await slices()).get('10.244.1.10')?.conditions?.terminating === true, {
      what: 'web-1 terminating in the slice',
    });
    eps = byIP(await slices());
    expect(eps.get('10.244.1.10')).toMatchObject({
      nodeName: w1,
      conditions: { ready: false, serving: true, terminating: true },
    });
    expect(eps.get('10.244.2.10')).toMatchObject({
      nodeName: w2,
      conditions: { ready: true, serving: true, terminating: false },
    });

    // Finishing the deletion (grace period 0) removes the endpoint.
    await deletePodNow(namespace, 'web-1');
    await waitFor(
      async () => {
        const m = byIP(await slices());
        return !m.has('10.244.1.10') && m.has('10.244.2.10');
      },
      { what: 'web-1 gone from the slice' },
    );
  });
});
