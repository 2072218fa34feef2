// The real juneau-agent programs the ElasticIP data plane from the real API server (NAT-1, NAT-4,
// NAT-5, DIR-1): the NAT rig of test/netns (router, node, pod, server namespaces), the agent in
// the node namespace with the node's InternalIP on ext0. No Juneau controller runs in the cluster
// project, so the test writes the statuses the controller would (ElasticIP.status.attachment,
// ElasticIPAttachment.status.nodeName/phase, NetworkInterface spec and status).
import { JuneauResources } from '../../runtime/kube/resources';
import { describeAsRoot } from '../netns/rig';
import { EIP, POD, ROUTER_EXT } from '../netns/nat-rig';
import { useAgentNat } from './agent-nat-harness';
import { waitFor } from './fixture';
import { kubectlJuneau } from './agent-harness';

jest.setTimeout(120_000);

const EIP_DIRECT = '192.0.2.51';

describeAsRoot('juneau-agent programs the ElasticIP NAT from the API server (NAT-1, NAT-4, NAT-5, DIR-1)', () => {
  const t = useAgentNat({
    nodePrefix: 'nat',
    namespace: 'agent-nat',
    crd: 'elasticipattachments',
    agentArgs: ['--nat-pod-ifaces=pod0'],
    setup: async () => {
      // The pod network's job for a direct ElasticIP: the pod holds the address itself.
      await rig.in(rig.pod, 'ip', 'addr', 'add', `${EIP_DIRECT}/32`, 'dev', 'lo');
      await rig.in(
        rig.router,
        'ip',
        'neigh',
        'replace',
        EIP_DIRECT,
        'lladdr',
        rig.nodeExtMac,
        'dev',
        'r0',
        'nud',
        'permanent',
      );
      await t.createNic('web', { address: POD });
      await t.createAttachment('web', EIP, 'web', false);
    },
  });
  const { rig, node, rest } = t;

  const bindings = () => JSON.stringify({ nat: t.maps.bindings(), direct: t.maps.directBindings() });
  const waitForBindings = (nat: object[], direct: object[] = []) =>
    waitFor(() => bindings() === JSON.stringify({ nat, direct }), {
      what: `NAT maps = ${JSON.stringify({ nat, direct })}`,
    });

  test('NAT-1: nothing is translated until the attachment is Attached on this node; then a connection to the ElasticIP reaches the pod', async () => {
    // Reconciled once with everything listed (readiness), and the Pending attachment left out.
    expect(await rig.in(rig.node, 'curl', '-s', 'http://127.0.0.1:9202/readyz')).toContain('[+]nat-reconciled ok');
    expect(bindings()).toBe(JSON.stringify({ nat: [], direct: [] }));
    await t.patchStatus(JuneauResources.elasticIPAttachments, t.ns, 'web', { phase: 'Attached', nodeName: node });
    await waitForBindings([{ elasticIP: EIP, address: POD }]);
    const server = await rig.serve<{ client: string; received: number }>(rig.pod, 'tcp-server', '8080');
    expect(await rig.tool(rig.router, 'tcp-client', EIP, '8080', '100000')).toEqual({
      banner: `client=${ROUTER_EXT}`,
      sent: 100000,
      echoed: 100000,
      intact: true,
    });
    expect(await server.result).toEqual({ client: ROUTER_EXT, received: 100000 });
  });

  test('NAT-5: kubectl juneau bpf dump nat shows the binding with its counters, and the agent exports them as metrics', async () => {
    const dump = ['bpf', 'dump', 'nat', `--bpffs=${rig.pinDir}`];
    const rows = JSON.parse(await kubectlJuneau(...dump, '-o', 'json')) as Array<{
      elasticIP: string;
      address: string;
      kind: string;
      inPackets: number;
      outPackets: number;
      inBytes: number;
      outBytes: number;
    }>;
    expect(rows).toEqual([expect.objectContaining({ elasticIP: EIP, address: POD, kind: 'nat' })]);
    const [row] = rows;
    const [entry] = t.maps.entries();
    expect(row.inPackets).toBeGreaterThan(0);
    expect(row.inPackets).toBeLessThanOrEqual(Number(entry.inPackets));
    const text = await kubectlJuneau(...dump);
    expect(text).toMatch(/^ELASTIC IP\s+ADDRESS\s+KIND\s+IN PACKETS\s+IN BYTES\s+OUT PACKETS\s+OUT BYTES/);
    expect(text).toContain(EIP);
    const metrics = await waitFor(async () => {
      const out = await rig.in(rig.node, 'curl', '-s', 'http://127.0.0.1:9201/metrics');
      return /juneau_agent_nat_packets_total\{elastic_ip="192\.0\.2\.50",direction="out"\} [1-9]/.test(out) && out;
    });
    expect(metrics).toMatch(/juneau_agent_nat_bytes_total\{elastic_ip="192\.0\.2\.50",direction="in"\} [1-9]/);
    expect(metrics).toContain('juneau_agent_nat_bindings{kind="nat"} 1');
    expect(await rig.in(rig.node, 'curl', '-s', 'http://127.0.0.1:9202/readyz')).toContain('[+]nat-reconciled ok');
    expect(await rig.in(rig.node, 'curl', '-s', 'http://127.0.0.1:9202/livez')).toContain('[+]nat-attached ok');
  });

  test('NAT-4: an agent SIGKILLed during a transfer: the transfer completes; the next agent adopts the maps with their counters', async () => {
    const before = t.maps.entries()[0];
    const server = await rig.serve<{ client: string; received: number }>(rig.pod, 'tcp-server', '8081');
    const transfer = rig.tool<{ intact: boolean; echoed: number }>(rig.router, 'tcp-client', EIP, '8081', '20000000');
    await waitFor(() => t.maps.entries()[0].inPackets > before.inPackets + 1000n, { what: 'the transfer under way' });
    expect(await t.agent.stop('SIGKILL')).toBeNull();
    expect(await transfer).toMatchObject({ intact: true, echoed: 20000000 });
    expect((await server.result).received).toBe(20000000);
    await t.agent.startReady();
    expect(bindings()).toBe(JSON.stringify({ nat: [{ elasticIP: EIP, address: POD }], direct: [] }));
    expect(t.maps.entries()[0].inPackets).toBeGreaterThan(before.inPackets + 1000n);
  });

  test('NAT-4: the attachment moved to another node: this node stops translating and keeps no entry of it', async () => {
    await t.patchStatus(JuneauResources.elasticIPAttachments, t.ns, 'web', { nodeName: 'another-node' });
    await t.waitForNoEntries('no NAT entry of the moved attachment: binding, reverse entry, counters');
    expect(await rig.tool(rig.router, 'ping', EIP, '1')).toEqual({ replies: [] });
  });

  test('DIR-1: a NetworkInterface of this node holding an ElasticIP directly: packets for it reach the pod', async () => {
    await t.createAttachedEip('direct', 'ext', {
      address: EIP_DIRECT,
      attachment: { kind: 'NetworkInterface', name: 'direct.eth0' },
    });
    await t.createNic('direct', { address: POD, elasticIP: 'direct' });
    await t.patchStatus(JuneauResources.networkInterfaces, t.ns, 'direct.eth0', { phase: 'Ready' });
    await waitForBindings([], [{ elasticIP: EIP_DIRECT, address: POD }]);
    const server = await rig.serve<{ client: string }>(rig.pod, 'tcp-server', '8082');
    expect(await rig.tool(rig.router, 'tcp-client', EIP_DIRECT, '8082', '1000')).toMatchObject({
      banner: `client=${ROUTER_EXT}`,
      intact: true,
    });
    expect((await server.result).client).toBe(ROUTER_EXT);
    await rest.delete(JuneauResources.networkInterfaces, t.ns, 'direct.eth0');
    await waitForBindings([]);
  });
});
