// SEC-4 (H4): a tenant's objects cannot take the agent down. A tenant makes ElasticIPs and
// ElasticIPAttachments as large as the API server allows (~200 KiB of annotations each); the real
// juneau-agent, run with a bounded heap against the real API server, caches only its node's
// objects and only the fields it reads, lists in small pages, and so stays alive through the watch
// events and through a restart (one LIST of them all), answering ARP for its address throughout.
import { JuneauResources } from '../../runtime/kube/resources';
import type { KubeObject } from '../../runtime/kube/types';
import { describeAsRoot } from '../netns/rig';
import { EIP, POD } from '../netns/nat-rig';
import { useAgentNat, type AgentNat } from './agent-nat-harness';
import { createArpNetwork, deleteAllIn, deleteArpNetwork, waitFor } from './fixture';
import { API_VERSION } from '../../api';

jest.setTimeout(600_000);

/** The agent's V8 old-space bound: main's agent (full objects, 500-object pages) dies under it
 * (docs/security/binding.md gives the measured peaks). */
const HEAP_MB = Number(process.env.JUNEAU_SEC4_HEAP_MB ?? 96);
const COUNT = 300;
const ANNOTATION = 'x'.repeat(200 * 1024);
const VIP = '192.0.2.60';

/** The MACs that answer an ARP request for `address` from the router. */
async function arpReplies(t: AgentNat, address: string): Promise<string[]> {
  const out = await t.rig
    .in(t.rig.router, 'arping', '-I', 'r0', '-c', '1', '-w', '3', address)
    .catch((err: { stdout?: string }) => err.stdout ?? ''); // exit 1 when nothing answered
  return [...out.matchAll(/reply from \S+ \[([0-9A-Fa-f:]{17})\]/g)].map((m) => m[1].toLowerCase());
}

/** `COUNT` ElasticIPs and as many attachments, each with ~200 KiB of annotations. */
async function createHugeObjects(t: AgentNat): Promise<void> {
  const huge = (kind: string, name: string, spec: object): KubeObject & { spec: object } => ({
    apiVersion: API_VERSION,
    kind,
    metadata: { namespace: t.ns, name, annotations: { 'tenant.example/blob': ANNOTATION } },
    spec,
  });
  for (let i = 0; i < COUNT; i += 10)
    await Promise.all(
      Array.from({ length: Math.min(10, COUNT - i) }, (_, j) => i + j).flatMap((n) => [
        t.rest.create(JuneauResources.elasticIPs, huge('ElasticIP', `huge-${n}`, { externalNetwork: 'ext' })),
        t.rest.create(
          JuneauResources.elasticIPAttachments,
          huge('ElasticIPAttachment', `huge-${n}`, { elasticIP: `huge-${n}`, networkInterface: `huge-${n}.eth0` }),
        ),
      ]),
    );
}

describeAsRoot(
  `SEC-4: ${COUNT} huge tenant ElasticIPs and attachments leave an agent of ${HEAP_MB} MiB heap alive and answering ARP`,
  () => {
    const names = { pool: `sec4-${process.pid}`, network: `sec4-${process.pid}` };
    const t = useAgentNat({
      nodePrefix: 'nat-heap',
      namespace: 'agent-nat-heap',
      crd: 'elasticipattachments',
      nodeArgs: [`--max-old-space-size=${HEAP_MB}`],
      setup: async (t) => {
        await createArpNetwork(t.rest, { ...names, addresses: [`${VIP}/32`] });
        await t.create(JuneauResources.arpAdvertisements, {
          kind: 'ARPAdvertisement',
          metadata: { name: `sec4-${t.rig.id}` },
          spec: { externalNetwork: names.network, address: VIP, nodeName: t.node },
        });
      },
      cleanup: async (t) => {
        // The ~60 MB of huge objects go before the next file starts, not when the namespace's
        // deletion gets to them: its controller replicas would list and reconcile them first.
        await deleteAllIn(t.ns, [JuneauResources.elasticIPAttachments, JuneauResources.elasticIPs]);
        await t.rest.delete(JuneauResources.arpAdvertisements, undefined, `sec4-${t.rig.id}`).catch(() => undefined);
        await deleteArpNetwork(t.rest, names);
      },
    });

    /** True while the agent runs; once it exited, the failure shows how it ended. */
    const alive = () => {
      if (!t.agent.running) throw new Error(`the agent exited:\n${t.agent.log.slice(-1500)}`);
      return true;
    };
    /** A sound binding made after the huge objects: once it is in the maps, the agent has read the
     * watch stream past them (a watch delivers in order). */
    const bindMarker = async () => {
      await t.createNic('marker', { address: POD });
      await t.createAttachment('marker', EIP, 'marker');
    };
    const markerBound = () =>
      waitFor(() => alive() && t.maps.bindings().some((b) => b.elasticIP === EIP && b.address === POD), {
        what: 'the marker binding written after the huge objects',
        timeoutMs: 180_000,
      });

    test('through the watch events: alive, the objects read past, ARP answered', async () => {
      await waitFor(async () => (await arpReplies(t, VIP)).includes(t.rig.nodeExtMac), { what: `ARP for ${VIP}` });
      await createHugeObjects(t);
      await bindMarker();
      await markerBound();
      expect(t.agent.running).toBe(true);
      expect(await arpReplies(t, VIP)).toEqual([t.rig.nodeExtMac]);
    });

    test('through a restart, one LIST of them all: ready, alive, ARP answered', async () => {
      await t.agent.stop('SIGKILL');
      await t.agent.startReady();
      expect(t.maps.bindings()).toEqual([{ elasticIP: EIP, address: POD }]);
      expect(t.agent.running).toBe(true);
      expect(await arpReplies(t, VIP)).toEqual([t.rig.nodeExtMac]);
    });
  },
);
