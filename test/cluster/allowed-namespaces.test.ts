// SEC-9 on the real API server, the whole controller in-process: an ExternalNetwork whose
// spec.allowedNamespaces does not select a namespace gives its ElasticIPs and LoadBalancer
// Services no address, with condition reason NamespaceNotAllowed naming the network and the
// namespace; a selected namespace gets one; relabeling the namespace re-triggers its requests.
import { API_VERSION, type ElasticIP, type ServiceLoadBalancer } from '../../api';
import { JuneauController } from '../../runtime/controller/controller';
import { deleteIgnoringNotFound } from '../../runtime/kube/rest';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import type { KubeObject } from '../../runtime/kube/types';
import { createLoadBalancerService, useNamespace, waitFor } from './fixture';
import { condition, createEip, createPool, getAs, getEip, rest } from './eip-harness';
import { controllerRecorder, sweepingController } from './in-process-controller';
import { apply, startTestWebhook, type Manifest, type TestWebhook } from './webhook-fixture';

const suffix = Math.random().toString(36).slice(2, 7);
const POOL = `allowns-${suffix}`;
const NET = `allowns-net-${suffix}`;
const TEAM = 'juneau.loutres.me/test-team';

const getSlb = (ns: string, name: string) => getAs<ServiceLoadBalancer>(JuneauResources.serviceLoadBalancers, ns, name);
const labelNamespace = (ns: string, value: string) =>
  rest.patch(Resources.namespaces, undefined, ns, 'merge', { metadata: { labels: { [TEAM]: value } } });

let controller: JuneauController;
const recorder = controllerRecorder(rest, 'allowns');

beforeAll(async () => {
  await createPool(POOL, ['198.18.231.0/29']);
  await rest.create(JuneauResources.externalNetworks, {
    apiVersion: API_VERSION,
    kind: 'ExternalNetwork',
    metadata: { name: NET },
    spec: {
      type: 'arp',
      addressPools: [POOL],
      allowedNamespaces: { matchExpressions: [{ key: TEAM, operator: 'In', values: ['blue'] }] },
    },
  });
  // No ALLOC-2 sweep within the file: what re-triggers a request is a watch.
  controller = sweepingController(recorder, 600_000);
  await controller.start();
});

afterAll(async () => {
  await controller?.stop();
  await recorder.stop();
  await deleteIgnoringNotFound(rest, JuneauResources.externalNetworks, undefined, NET);
  await deleteIgnoringNotFound(rest, JuneauResources.addressPools, undefined, POOL);
});

/** An object once `pick` finds what is awaited in it. */
const until = <T>(get: () => Promise<T | undefined>, ok: (o: T | undefined) => boolean, what: string) =>
  waitFor(
    async () => {
      const o = await get();
      return ok(o) ? o : undefined;
    },
    { what },
  );

const refused = (o: ElasticIP | ServiceLoadBalancer | undefined) =>
  condition(o as ElasticIP, 'Allocated')?.reason === 'NamespaceNotAllowed';

describe('SEC-9: ExternalNetwork spec.allowedNamespaces', () => {
  const ns = useNamespace();

  it('SEC-9, EIP-1: an ElasticIP in a namespace the network does not allow gets no address and a condition naming both; relabeling the namespace gives it one', async () => {
    const namespace = ns();
    await labelNamespace(namespace, 'red');
    await createEip(namespace, 'outside', NET);
    const eip = await until(() => getEip(namespace, 'outside'), refused, 'the NamespaceNotAllowed condition');
    expect(eip.status?.address).toBeUndefined();
    expect(eip.status?.phase).toBe('Error');
    expect(condition(eip, 'Allocated')?.message).toContain(
      `ExternalNetwork ${NET} does not allow namespace ${namespace}`,
    );

    await labelNamespace(namespace, 'blue');
    const allowed = await until(
      () => getEip(namespace, 'outside'),
      (e) => !!e?.status?.address,
      'an address',
    );
    expect(allowed.status?.address).toMatch(/^198\.18\.231\./);
    expect(condition(allowed, 'Allocated')?.status).toBe('True');
  });

  it('SEC-9, SLB-2: a LoadBalancer Service in a namespace the network does not allow gets no VIP and a condition naming both; relabeling the namespace gives it one', async () => {
    const namespace = ns();
    await createLoadBalancerService(namespace, 'web', { network: NET });
    const slb = await until(() => getSlb(namespace, 'web'), refused, 'the NamespaceNotAllowed condition');
    expect(slb.status?.vip).toBeUndefined();
    expect(condition(slb as unknown as ElasticIP, 'Allocated')?.message).toContain(
      `ExternalNetwork ${NET} does not allow namespace ${namespace}`,
    );
    const service = await rest.get<KubeObject & { status?: { loadBalancer?: { ingress?: unknown[] } } }>(
      Resources.services,
      namespace,
      'web',
    );
    expect(service.status?.loadBalancer?.ingress ?? []).toEqual([]);

    await labelNamespace(namespace, 'blue');
    const allowed = await until(
      () => getSlb(namespace, 'web'),
      (s) => !!s?.status?.vip,
      'a VIP',
    );
    expect(allowed.status?.vip).toMatch(/^198\.18\.231\./);
  });

  it('SEC-9: in an allowed namespace an ElasticIP and a Service get addresses at once', async () => {
    const namespace = ns();
    await labelNamespace(namespace, 'blue');
    await createEip(namespace, 'inside', NET);
    await createLoadBalancerService(namespace, 'api', { network: NET });
    const eip = await until(
      () => getEip(namespace, 'inside'),
      (e) => !!e?.status?.address,
      'an address',
    );
    const slb = await until(
      () => getSlb(namespace, 'api'),
      (s) => !!s?.status?.vip,
      'a VIP',
    );
    expect(eip.status?.address).not.toBe(slb.status?.vip);
  });
});

describe('SEC-9: the ElasticIP webhook refuses a network the namespace may not use', () => {
  const ns = useNamespace();
  let webhook: TestWebhook;
  beforeAll(async () => {
    webhook = await startTestWebhook('allowns');
  });
  afterAll(async () => {
    await webhook?.stop();
  });
  const elasticIP = (namespace: string, name: string): Manifest => ({
    apiVersion: API_VERSION,
    kind: 'ElasticIP',
    metadata: { name, namespace, labels: webhook.labels },
    spec: { externalNetwork: NET },
  });

  it('SEC-9: kubectl apply of an ElasticIP naming the network from a namespace it does not select is refused, naming both; from a selected one it is created', async () => {
    const namespace = ns();
    await labelNamespace(namespace, 'red');
    const refusedApply = await apply(elasticIP(namespace, 'refused'));
    expect(refusedApply.ok).toBe(false);
    expect(refusedApply.output).toContain(
      `denied the request: spec.externalNetwork: ${JSON.stringify(NET)} ExternalNetwork ${NET} does not allow namespace ${namespace}`,
    );
    expect(await getEip(namespace, 'refused')).toBeUndefined();
    // Positive control: the same object once the namespace is selected.
    await labelNamespace(namespace, 'blue');
    const accepted = await apply(elasticIP(namespace, 'accepted'));
    expect(accepted.output).toContain('created');
    expect(accepted.ok).toBe(true);
  });
});
