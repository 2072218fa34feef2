// FO-3 on the real control plane: the controller in-process, every node's agent Lease renewed by
// the agent's own Lease code (runtime/agent/liveness/lease.ts, short timings), Pods whose readiness the test
// sets. A node whose Lease stops being renewed is left out of advertisingNodes with the reason in
// the Available condition; the ARPAdvertisement leaves it only when it was the answering node
// (SLB-7 stickiness holds for live nodes), and comes back to nobody when the node recovers.
import { type ARPAdvertisement, type ServiceLoadBalancer } from '../../api';
import { advertisementName } from '../../runtime/controller/arp/names';
import { JuneauController } from '../../runtime/controller/controller';
import { EventRecorder } from '../../runtime/kube/events';
import { JuneauResources, Resources, type ResourceType } from '../../runtime/kube/resources';
import { RestClient, isNotFound } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import {
  createLoadBalancerService,
  createRunningPod,
  testKubeConfig,
  useNamespace,
  waitFor,
  waitForMatch,
} from './fixture';
import { LeasedNodes } from './agent-leases';
import { watchForChanges } from './quiet-watch';

jest.setTimeout(120_000);

const rest = new RestClient(testKubeConfig());
const LEASE_MS = 2_000;
const fleet = new LeasedNodes(rest, 'fo3', { count: 3, leaseMs: LEASE_MS, firstHost: 151, cidr: '198.18.93.0/29' });
const { network: NET, nodes, leases } = fleet;
const recorder = new EventRecorder(rest, {
  reportingController: 'juneau.loutres.me/controller',
  reportingInstance: 'fo3',
  flushIntervalMs: 1_000,
});
let controller: JuneauController;

const getAs = async <T>(type: ResourceType, ns: string | undefined, name: string): Promise<T | undefined> => {
  try {
    return (await rest.get<KubeObject>(type, ns, name)) as unknown as T;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
};
const getSlb = (ns: string) => getAs<ServiceLoadBalancer>(JuneauResources.serviceLoadBalancers, ns, 'web');
const getAd = (ns: string) =>
  getAs<ARPAdvertisement>(
    JuneauResources.arpAdvertisements,
    undefined,
    advertisementName({ kind: 'ServiceLoadBalancer', namespace: ns, name: 'web' }),
  );
const available = (slb: ServiceLoadBalancer | undefined) =>
  slb?.status?.conditions?.find((c) => c.type === 'Available');

beforeAll(async () => {
  await fleet.setUp();
  controller = new JuneauController({ rest: new RestClient(testKubeConfig()), recorder });
  await controller.start();
});

afterAll(async () => {
  await controller?.stop();
  await recorder.stop();
  await fleet.tearDown();
});

describe('FO-3 dead nodes handed over (controller, real API server)', () => {
  const ns = useNamespace();

  test("FO-3 SLB-7: a non-answering node whose Lease expires is left out with the reason, the answering node stays; the answering node's expiry moves the address; a recovered node takes nothing back", async () => {
    const namespace = ns();
    await createLoadBalancerService(namespace, 'web', { network: NET });
    for (const [i, nodeName] of nodes.entries()) {
      await createRunningPod({
        namespace,
        name: `web-${i}`,
        nodeName,
        podIP: `10.244.${i}.10`,
        ready: true,
        labels: { app: 'web' },
        ports: [{ name: 'http', containerPort: 8080 }],
      });
    }
    const first = await waitForMatch(
      () => getSlb(namespace),
      (slb) => slb?.status?.advertisingNodes?.length === 3 && slb.status.arpAnnouncingNode,
      'three advertising nodes and an answering one',
    );
    const chosen = first.status!.arpAnnouncingNode!;
    const [bystander, survivor] = nodes.filter((n) => n !== chosen);

    // A live answering node is kept while another node dies (SLB-7): the ARPAdvertisement's node never changes.
    const quiet = await watchForChanges<ARPAdvertisement>({
      type: JuneauResources.arpAdvertisements,
      name: advertisementName({ kind: 'ServiceLoadBalancer', namespace, name: 'web' }),
      project: (ad) => ad.spec?.nodeName,
    });
    await leases.get(bystander)!.stop();
    const leftOut = await waitFor(
      async () => {
        const slb = await getSlb(namespace);
        return slb?.status?.advertisingNodes?.length === 2 && slb;
      },
      { what: `${bystander} left out` },
    );
    quiet.expectNoChange();
    expect(leftOut.status?.advertisingNodes).toEqual([chosen, survivor].sort());
    expect(leftOut.status?.arpAnnouncingNode).toBe(chosen);
    expect(available(leftOut)?.message).toContain(
      `left out: node ${bystander}: its agent Lease juneau-agent-${bystander} was not renewed`,
    );

    // The answering node dies: the address moves to the one live node left.
    const stoppedAt = Date.now();
    await leases.get(chosen)!.stop();
    const moved = await waitFor(
      async () => ((await getAd(namespace))?.spec.nodeName === survivor ? Date.now() : undefined),
      { what: `the ARPAdvertisement moved to ${survivor}` },
    );
    process.stdout.write(
      `FO-3: answering node's Lease (duration ${LEASE_MS} ms) stopped -> ARPAdvertisement moved after ${moved - stoppedAt} ms\n`,
    );
    expect(moved - stoppedAt).toBeGreaterThanOrEqual(LEASE_MS - 300); // never before the Lease expired (FO-4)
    const after = await waitFor(async () => {
      const slb = await getSlb(namespace);
      return slb?.status?.arpAnnouncingNode === survivor && slb;
    });
    expect(after.status?.advertisingNodes).toEqual([survivor]);
    const events = await waitFor(
      async () => {
        const list = await rest.list<KubeObject & { reason?: string; note?: string }>(Resources.events, { namespace });
        return list.items.find(
          (e) => e.reason === 'AnnouncingNodeChanged' && e.note?.includes(`was ${chosen}, whose agent cannot answer`),
        );
      },
      { what: 'an AnnouncingNodeChanged Event naming the expired Lease' },
    );
    expect(events.note).toContain(`juneau-agent-${chosen}`);

    // The old node recovers: it is advertising again, but the address stays where it is (SLB-7).
    const quietAgain = await watchForChanges<ARPAdvertisement>({
      type: JuneauResources.arpAdvertisements,
      name: advertisementName({ kind: 'ServiceLoadBalancer', namespace, name: 'web' }),
      project: (ad) => ad.spec?.nodeName,
    });
    fleet.revive(chosen);
    await waitFor(async () => (await getSlb(namespace))?.status?.advertisingNodes?.includes(chosen), {
      what: `${chosen} advertising again`,
    });
    quietAgain.expectNoChange();
  });
});
