// NATGateway cluster tests: the controller in-process, Nodes with agent Leases the test renews
// (./agent-leases.ts), made Ready and labelled here (no kubelet), and helpers to read NATGateways.
import { API_VERSION, type ARPAdvertisement, type NATGateway } from '../../api';
import { ngwAdvertisementName } from '../../runtime/controller/ngw/plan';
import { JuneauController } from '../../runtime/controller/controller';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import { RestClient } from '../../runtime/kube/rest';
import { LeasedNodes } from './agent-leases';
import { getAs } from './eip-harness';
import { testKubeConfig, waitForMatch } from './fixture';
import { controllerRecorder } from './in-process-controller';

export const rest = new RestClient(testKubeConfig());

/** Sets a Node's Ready condition as a kubelet would. */
export async function setNodeReady(name: string, ready: boolean): Promise<void> {
  const now = new Date().toISOString();
  const conditions = [
    {
      type: 'Ready',
      status: ready ? 'True' : 'False',
      reason: 'Test',
      lastHeartbeatTime: now,
      lastTransitionTime: now,
    },
  ];
  await rest.patch(Resources.nodes, undefined, name, 'merge', { status: { conditions } }, { subresource: 'status' });
}

export async function labelNode(name: string, labels: Record<string, string | null>): Promise<void> {
  await rest.patch(Resources.nodes, undefined, name, 'merge', { metadata: { labels } });
}

/**
 * `count` Ready Nodes labelled `ngw.test/gateway=yes`, each with an agent Lease of `leaseMs`, an
 * arp network over `cidr`, and the controller in-process; set up in beforeAll, torn down in afterAll.
 */
export function useGatewayFleet(
  prefix: string,
  o: { count: number; leaseMs: number; firstHost: number; cidr: string },
) {
  const fleet = new LeasedNodes(rest, prefix, o);
  const recorder = controllerRecorder(rest, prefix);
  let controller: JuneauController | undefined;
  beforeAll(async () => {
    await fleet.setUp();
    for (const n of fleet.nodes) {
      await setNodeReady(n, true);
      await labelNode(n, { 'ngw.test/gateway': 'yes' });
    }
    controller = new JuneauController({ rest: new RestClient(testKubeConfig()), recorder });
    await controller.start();
  });
  afterAll(async () => {
    await controller?.stop();
    await recorder.stop();
    await fleet.tearDown();
  });
  return fleet;
}

export interface GatewaySpec {
  externalNetwork: string;
  requestedIP?: string;
  podSelector?: object;
  nodeSelector?: object;
}

export async function createGateway(ns: string, name: string, spec: GatewaySpec): Promise<void> {
  await rest.create(JuneauResources.natGateways, {
    apiVersion: API_VERSION,
    kind: 'NATGateway',
    metadata: { name, namespace: ns },
    spec: { podSelector: {}, ...spec },
  });
}

export const getGateway = (ns: string, name: string) => getAs<NATGateway>(JuneauResources.natGateways, ns, name);
export const getGatewayAd = (ns: string, name: string) =>
  getAs<ARPAdvertisement>(JuneauResources.arpAdvertisements, undefined, ngwAdvertisementName(ns, name));

/** Waits until the NATGateway's status passes `test` (a phase: that phase, at the current generation). */
export function gatewayWhere(
  ns: string,
  name: string,
  test: string | ((g: NATGateway) => unknown),
  timeoutMs = 30_000,
): Promise<NATGateway> {
  const pass =
    typeof test === 'string'
      ? (g: NATGateway) => g.status?.phase === test && g.status.observedGeneration === g.metadata.generation
      : test;
  return waitForMatch(() => getGateway(ns, name), pass, {
    what: `NATGateway ${ns}/${name} ${typeof test === 'string' ? test : 'status'}`,
    timeoutMs,
  });
}
