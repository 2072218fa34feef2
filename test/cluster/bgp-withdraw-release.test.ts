// BGP-5 from the releasing side (runtime/controller/bgp/withdrawn.ts), the whole controller
// in-process on the real API server: an ElasticIP, a NATGateway or a ServiceLoadBalancer being deleted keeps its
// address's claim while a node's BGPNodeState reports the address announced, and releases it once
// the report drops it. No agent runs: the test writes the node's BGPNodeState as its agent would
// (bgp-fixture.ts); the agents' side (withdrawing what is being deleted) is in the unit tests of
// runtime/agent/bgp/decide.ts and runtime/agent/nat/desired.ts, and the box's bgp suite.
import { API_VERSION, type ElasticIP, type NATGateway, type ServiceLoadBalancer } from '../../api';
import { JuneauController } from '../../runtime/controller/controller';
import { JuneauResources } from '../../runtime/kube/resources';
import { deleteIgnoringNotFound, getOrUndefined, RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { reportNodeState } from './bgp-fixture';
import { createLoadBalancerService, deleteNodes, ensureNode, testKubeConfig, useNamespace, waitFor } from './fixture';
import { controllerRecorder, PassLog } from './in-process-controller';

const rest = new RestClient(testKubeConfig());
const suffix = Math.random().toString(36).slice(2, 7);
const NODE = `bgpw-${suffix}-n1`;
const POOL = `bgpw-${suffix}`;
const NET = `bgpw-${suffix}`;
const PEER = `bgpw-tor-${suffix}`;

const metrics = new PassLog();
const recorder = controllerRecorder(rest, 'bgp-withdraw');
let controller: JuneauController;

/** The uid of the holder of the address's claim, if it is claimed. */
const claimHolder = async (address: string) =>
  (
    await getOrUndefined<KubeObject & { spec?: { holder?: { uid?: string } } }>(
      rest,
      JuneauResources.allocationClaims,
      undefined,
      `ipv4.${address}`,
    )
  )?.spec?.holder?.uid;
const announce = (addresses: string[]) =>
  reportNodeState(rest, NODE, { peer: PEER, state: 'Established', announced: addresses });
/** How many passes of `reconciler` asked to come back (the finalizer waiting is the only such result here). */
const requeues = async (reconciler: string) =>
  (await metrics.reconcileTotal.get()).values
    .filter((v) => v.labels.controller === reconciler && v.labels.result === 'requeue')
    .reduce((sum, v) => sum + v.value, 0);

/**
 * Deletes the object while NODE reports `address` announced; once a finalizer pass has waited
 * (a requeue counted after the delete), the claim is still there; NODE's report drops the address,
 * and the claim goes. Returns how long the release took after the report.
 */
async function releasedOnlyAfterWithdrawal(
  reconciler: string,
  address: string,
  uid: string,
  remove: () => Promise<unknown>,
  gone: () => Promise<boolean>,
): Promise<number> {
  await announce([address]);
  const before = await requeues(reconciler);
  await remove();
  await waitFor(async () => (await requeues(reconciler)) >= before + 2, {
    what: `two ${reconciler} passes waiting for the withdrawal`,
  });
  expect(await claimHolder(address)).toBe(uid);
  expect(await gone()).toBe(false);
  const withdrawn = Date.now();
  await announce([]);
  // Released: gone, or already taken by the next holder (a Service's new ServiceLoadBalancer).
  await waitFor(async () => (await claimHolder(address)) !== uid, { what: `claim ipv4.${address} released` });
  const took = Date.now() - withdrawn;
  await waitFor(gone, { what: 'the object gone' });
  return took;
}

beforeAll(async () => {
  await ensureNode(NODE, { internalIP: '192.0.2.141' });
  await rest.create(JuneauResources.addressPools, {
    apiVersion: API_VERSION,
    kind: 'AddressPool',
    metadata: { name: POOL },
    spec: { advertiseMode: 'bgp', addresses: ['198.18.84.0/29'] },
  });
  await rest.create(JuneauResources.externalNetworks, {
    apiVersion: API_VERSION,
    kind: 'ExternalNetwork',
    metadata: { name: NET },
    spec: { type: 'bgp', addressPools: [POOL] },
  });
  controller = new JuneauController({ rest: new RestClient(testKubeConfig()), recorder, metrics });
  await controller.start();
});

afterAll(async () => {
  await controller?.stop();
  await recorder.stop();
  await deleteIgnoringNotFound(rest, JuneauResources.bgpNodeStates, undefined, NODE);
  await deleteIgnoringNotFound(rest, JuneauResources.externalNetworks, undefined, NET);
  await deleteIgnoringNotFound(rest, JuneauResources.addressPools, undefined, POOL);
  await deleteNodes([NODE]);
});

describe('withdraw before release on bgp networks', () => {
  const ns = useNamespace();

  test('BGP-5: an ElasticIP deleted while a node reports its address announced keeps the claim until the report drops it', async () => {
    const namespace = ns();
    await rest.create(JuneauResources.elasticIPs, {
      apiVersion: API_VERSION,
      kind: 'ElasticIP',
      metadata: { name: 'db', namespace },
      spec: { externalNetwork: NET },
    });
    const eip = await waitFor(
      async () => {
        const e = await getOrUndefined<KubeObject & ElasticIP>(rest, JuneauResources.elasticIPs, namespace, 'db');
        return e?.status?.address ? e : undefined;
      },
      { what: 'the ElasticIP with an address' },
    );
    const took = await releasedOnlyAfterWithdrawal(
      'elasticip',
      eip.status!.address!,
      eip.metadata!.uid!,
      () => rest.delete(JuneauResources.elasticIPs, namespace, 'db'),
      async () => (await getOrUndefined(rest, JuneauResources.elasticIPs, namespace, 'db')) === undefined,
    );
    console.log(`BGP-5: ElasticIP claim released ${took} ms after the node's report dropped the address`);
  });

  test('BGP-5: a NATGateway deleted while a node reports its address announced keeps the claim until the report drops it', async () => {
    const namespace = ns();
    await rest.create(JuneauResources.natGateways, {
      apiVersion: API_VERSION,
      kind: 'NATGateway',
      metadata: { name: 'egress', namespace },
      spec: { externalNetwork: NET, podSelector: {} },
    });
    const ngw = await waitFor(
      async () => {
        const g = await getOrUndefined<KubeObject & NATGateway>(rest, JuneauResources.natGateways, namespace, 'egress');
        return g?.status?.address ? g : undefined;
      },
      { what: 'the NATGateway with an address' },
    );
    const took = await releasedOnlyAfterWithdrawal(
      'natgateway',
      ngw.status!.address!,
      ngw.metadata!.uid!,
      () => rest.delete(JuneauResources.natGateways, namespace, 'egress'),
      async () => (await getOrUndefined(rest, JuneauResources.natGateways, namespace, 'egress')) === undefined,
    );
    console.log(`BGP-5: NATGateway claim released ${took} ms after the node's report dropped the address`);
  });

  test('BGP-5: a ServiceLoadBalancer deleted while a node reports its VIP announced keeps the claim until the report drops it', async () => {
    const namespace = ns();
    await createLoadBalancerService(namespace, 'web', { network: NET });
    const slb = await waitFor(
      async () => {
        const s = await getOrUndefined<KubeObject & ServiceLoadBalancer>(
          rest,
          JuneauResources.serviceLoadBalancers,
          namespace,
          'web',
        );
        return s?.status?.vip ? s : undefined;
      },
      { what: 'the ServiceLoadBalancer with a VIP' },
    );
    const uid = slb.metadata!.uid!;
    const took = await releasedOnlyAfterWithdrawal(
      'serviceloadbalancer',
      slb.status!.vip!,
      uid,
      () => rest.delete(JuneauResources.serviceLoadBalancers, namespace, 'web'),
      async () =>
        (await getOrUndefined<KubeObject>(rest, JuneauResources.serviceLoadBalancers, namespace, 'web'))?.metadata
          ?.uid !== uid,
    );
    console.log(`BGP-5: ServiceLoadBalancer claim released ${took} ms after the node's report dropped the VIP`);
  });
});
