// The CNI plugin juneau-cni on the cluster in a box (CNI-1..CNI-3, EIP-13, DIR-1): Juneau installed
// from the built image and the manifest as synthesized (the agents install the plugin into each
// node's /opt/cni/bin and chain it into /etc/cni/net.d, test/box/mounts.ts), the examples'
// direct ElasticIP `web-eip` held by pod `web` on its eth0, nothing added by hand.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFile } from 'node:child_process';
import { REPO_ROOT } from '../cluster/paths';
import { elapsedSince, figure } from '../shared/figures';
import { bashIn, cmd } from './exec';
import { mountNsFile, nodeCniDirs, NODE_CNI_BIN_DIR } from './mounts';
import { peerIn, peerInPod, podConnects, Running, runningIn, type PeerResult } from './peers';
import { pidsOf } from './upstream';
import { INSTALL } from '../../api/constants';
import {
  agentPods,
  arpNetworkYaml,
  describeOnBox,
  DIST,
  echoPod,
  elasticIpYaml,
  getPod,
  podReady,
  routerGet,
  until,
} from './session';
import { sharedEchoBox } from './echo-box';

const DIRECT = { 'juneau.loutres.me/elastic-ip': 'web-eip' };

describeOnBox('juneau-cni: a direct ElasticIP inside the pod, the pod held back while its NIC cannot hold it', () => {
  const echoBox = sharedEchoBox('juneau-cni-box-', { nodes: 2, label: 'cni box' });
  const { kubectl } = echoBox;
  let eip = '';
  const nodeName = (i: number) => echoBox.box.nodes[i].name;

  /** The pod's network namespace, through its echo server's process (found from the host by POD_NAME). */
  const podNetns = (name: string) => {
    const pids = pidsOf('juneau-echo/server.js', (pid) =>
      fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`POD_NAME=${name}`),
    );
    expect(pids).toHaveLength(1);
    return `/proc/${pids[0]}/ns/net`;
  };
  const eth0Addresses = async (name: string) =>
    (
      JSON.parse(await bashIn(podNetns(name), 'ip -j -4 addr show dev eth0')) as Array<{
        addr_info: Array<{ local: string; prefixlen: number }>;
      }>
    )[0].addr_info.map((a) => `${a.local}/${a.prefixlen}`);
  const podEvents = async (name: string) =>
    (
      JSON.parse(
        await kubectl([
          'get',
          'events',
          '-n',
          'default',
          '--field-selector',
          `involvedObject.name=${name}`,
          '-o',
          'json',
        ]),
      ) as { items: Array<{ reason: string; message: string; type: string }> }
    ).items;
  const conflist = (i: number) => {
    const dir = nodeCniDirs(echoBox.box.nodes[i]).conf;
    return JSON.parse(fs.readFileSync(path.join(dir, '10-box.conflist'), 'utf8')) as {
      plugins: Array<{ type: string }>;
    };
  };

  beforeAll(async () => {
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      `${arpNetworkYaml(echoBox.box.segment)}---\n${elasticIpYaml('web-eip', 'box-net')}`,
    );
  });

  test('CNI-1: every agent installed juneau-cni into its node: the binary in the bin dir, last in the conflist chain', async () => {
    for (const [i, node] of echoBox.box.nodes.entries()) {
      await until(`juneau-cni chained on ${node.name}`, async () =>
        conflist(i).plugins.some((p) => p.type === 'juneau-cni') ? true : undefined,
      );
      expect(conflist(i).plugins.map((p) => p.type)).toEqual(['bridge', 'juneau-cni']);
      expect(fs.statSync(path.join(nodeCniDirs(node).bin, 'juneau-cni')).mode & 0o111).not.toBe(0);
    }
  });

  test('CNI-1: an agent replaced (its pod deleted) installs again without chaining twice: one juneau-cni, the conflist byte for byte as before', async () => {
    const node = echoBox.box.nodes[0];
    const file = path.join(nodeCniDirs(node).conf, '10-box.conflist');
    const before = fs.readFileSync(file, 'utf8');
    const [old] = await agentPods(kubectl, node.name);
    await kubectl(['-n', INSTALL.namespace, 'delete', 'pod', old.metadata.name, '--wait=true']);
    const fresh = await until(`a new agent Ready on ${node.name}`, async () => {
      const [p] = await agentPods(kubectl, node.name);
      return p && p.metadata.uid !== old.metadata.uid && p.status.containerStatuses?.[0]?.ready ? p : undefined;
    });
    // The positive control: the new agent did check the chain (its report of the installed plugin).
    await until('the new agent reporting juneau-cni chained', async () =>
      (await kubectl(['-n', INSTALL.namespace, 'logs', fresh.metadata.name, '-c', 'agent'])).includes(
        'juneau-cni installed and chained',
      )
        ? true
        : undefined,
    );
    expect(conflist(0).plugins.map((p) => p.type)).toEqual(['bridge', 'juneau-cni']);
    expect(fs.readFileSync(file, 'utf8')).toBe(before);
  });

  test('CNI-1, DIR-1, EIP-4: inside pod web the ElasticIP is on eth0; a server bound to it is reached from the router; a connection the pod opens to the router arrives from it', async () => {
    await kubectl(['apply', '--server-side', '-f', '-'], echoPod('web', nodeName(0), DIRECT));
    await podReady(kubectl, 'web');
    eip = JSON.parse(await kubectl(['get', 'elasticip', 'web-eip', '-o', 'jsonpath={.status}'])).address as string;
    const podIp = (await getPod(kubectl, 'web')).status.podIP!;
    expect(await eth0Addresses('web')).toEqual([`${podIp}/24`, `${eip}/32`]);
    expect(await bashIn(podNetns('web'), 'ip -4 route show default')).toContain(`src ${eip}`);
    expect((await podEvents('web')).map((e) => e.reason)).toContain('ElasticIPConfigured');

    // A server in the pod bound to the ElasticIP itself, reached from the router.
    const server = peerInPod(echoBox, 'web', ['listen', eip, '9000', '1000']);
    await server.waitFor(/"listening":true/);
    const page = await until(`HTTP to ${eip}`, async () => (await routerGet(echoBox.router, eip)) || undefined, 60_000);
    expect(page).toBe(`client=${echoBox.routerIp} pod=web node=${nodeName(0)}`);
    const [inPod, atRouter] = await Promise.all([
      server.result<PeerResult>(),
      peerIn(echoBox.router, ['connect', eip, '9000', '1000']).result<PeerResult>(),
    ]);
    expect({ peer: inPod.peer, received: inPod.received, sha: inPod.receivedSha256 }).toEqual({
      peer: echoBox.routerIp,
      received: 1000,
      sha: atRouter.sentSha256,
    });
    // The way out: from the ElasticIP, not the pod address.
    const { heard } = await podConnects(
      echoBox,
      'web',
      { netns: echoBox.router, address: echoBox.routerIp, port: 9001 },
      100,
    );
    expect(heard.peer).toBe(eip);
  });

  test('CNI-2, EIP-13, EIP-11: a second pod naming web-eip stays ContainerCreating with an event naming what it waits for; deleting web starts it, holding the address', async () => {
    await kubectl(['apply', '--server-side', '-f', '-'], echoPod('web2', nodeName(1), DIRECT));
    const waited = await until('an event on web2 naming what it waits for', async () =>
      (await podEvents('web2')).find((e) => e.reason === 'ElasticIPHeldElsewhere'),
    );
    expect(waited.message).toContain('NetworkInterface default/web2.eth0');
    expect(waited.message).toContain('held by NetworkInterface web.eth0');
    const held = await getPod(kubectl, 'web2');
    expect(held.status.phase).toBe('Pending');
    expect((held.status.containerStatuses?.[0] as { state?: unknown } | undefined)?.state).toEqual({
      waiting: { reason: 'ContainerCreating' },
    });
    // The positive control: the first pod runs with the address meanwhile.
    expect((await getPod(kubectl, 'web')).status.phase).toBe('Running');

    const t0 = Date.now();
    await kubectl(['delete', 'pod', 'web', '--wait=true']);
    await podReady(kubectl, 'web2');
    figure('cni box: first holder deleted -> the second pod Ready holding the ElasticIP', elapsedSince(t0));
    expect(await eth0Addresses('web2')).toContain(`${eip}/32`);
    const page = await until(
      `HTTP to ${eip} answered by web2`,
      async () => {
        const got = await routerGet(echoBox.router, eip);
        return got.includes('pod=web2') ? got : undefined;
      },
      60_000,
    );
    expect(page).toBe(`client=${echoBox.routerIp} pod=web2 node=${nodeName(1)}`);
  });

  test("bad input, CNI-2, EIP-13: a pod naming a missing ElasticIP stays ContainerCreating with Events naming it (the controller's and the plugin's), its NetworkInterface Pending with a condition naming spec.elasticIP; the other pods are not held", async () => {
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      echoPod('lost', nodeName(0), { 'juneau.loutres.me/elastic-ip': 'no-such-eip' }),
    );
    const events = await until('the Events of pod lost', async () => {
      const e = await podEvents('lost');
      return e.some((x) => x.reason === 'ElasticIPNotFound') && e.some((x) => x.reason === 'WaitingForElasticIP')
        ? e
        : undefined;
    });
    expect(events.find((e) => e.reason === 'ElasticIPNotFound')!.message).toContain('no-such-eip');
    // The plugin's, carrying the NetworkInterface's reason and message.
    expect(events.find((e) => e.reason === 'WaitingForElasticIP')!.message).toContain(
      'waiting for NetworkInterface default/lost.eth0 to be Ready to hold ElasticIP no-such-eip: it is Pending (WaitingForElasticIP: spec.elasticIP: ElasticIP no-such-eip',
    );
    const nic = JSON.parse(await kubectl(['get', 'networkinterface', 'lost.eth0', '-o', 'json'])) as {
      spec: { elasticIP?: string };
      status?: {
        phase?: string;
        conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
      };
    };
    expect(nic.spec.elasticIP).toBe('no-such-eip');
    expect(nic.status?.phase).toBe('Pending');
    expect(nic.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'WaitingForElasticIP',
      message: expect.stringContaining('spec.elasticIP: ElasticIP no-such-eip'),
    });
    const lost = await getPod(kubectl, 'lost');
    expect(lost.status.phase).toBe('Pending');
    expect((lost.status.containerStatuses?.[0] as { state?: unknown } | undefined)?.state).toEqual({
      waiting: { reason: 'ContainerCreating' },
    });
    await kubectl(['delete', 'pod', 'lost', '--wait=true']);
  });

  test('EN-8, CNI-2: a direct ElasticIP of a network whose status.networkID is 0 (no subnet-vni AllocationPool): the pod stays ContainerCreating with an Event naming why and gets no NetworkInterface; once the network has its ID the pod starts holding the address', async () => {
    // networkID comes from the subnet-vni AllocationPool, which the controller creates at start
    // when absent (runtime/controller/controller.ts); taken away, a new network waits for it (EN-7).
    const vni = JSON.parse(await kubectl(['get', 'allocationpool', 'subnet-vni', '-o', 'json'])) as {
      spec: { start: number; end: number };
    };
    await kubectl(['delete', 'allocationpool', 'subnet-vni', '--wait=true']);
    let restored = false;
    const restore = async () => {
      if (restored) return;
      restored = true;
      await kubectl(
        ['create', '-f', '-'],
        JSON.stringify({
          apiVersion: 'juneau.loutres.me/v1alpha1',
          kind: 'AllocationPool',
          metadata: { name: 'subnet-vni' },
          spec: vni.spec,
        }),
      );
    };
    try {
      const segment = echoBox.box.segment;
      await kubectl(
        ['apply', '--server-side', '-f', '-'],
        `${arpNetworkYaml(segment, { pool: 'late-pool', network: 'late-net', addresses: `${segment}.230-${segment}.235` })}---\n${elasticIpYaml('late-eip', 'late-net')}`,
      );
      const network = await until('ExternalNetwork late-net reporting why it has no networkID', async () => {
        const n = JSON.parse(await kubectl(['get', 'externalnetwork', 'late-net', '-o', 'json'])) as {
          status?: { networkID?: number; conditions?: Array<{ type: string; status: string; reason: string }> };
        };
        return n.status?.conditions?.some((c) => c.type === 'NetworkIDAssigned') ? n : undefined;
      });
      expect({
        networkID: network.status?.networkID ?? 0,
        condition: network.status?.conditions?.find((c) => c.type === 'NetworkIDAssigned'),
      }).toEqual({
        networkID: 0,
        condition: expect.objectContaining({ status: 'False', reason: 'WaitingForSubnetVniPool' }),
      });
      // NAT use does not wait (EN-8): the ElasticIP has its address already.
      const lateEip = await until('ElasticIP late-eip with an address', async () => {
        const e = JSON.parse(await kubectl(['get', 'elasticip', 'late-eip', '-o', 'json'])) as {
          status?: { address?: string };
        };
        return e.status?.address;
      });

      await kubectl(
        ['apply', '--server-side', '-f', '-'],
        echoPod('late', nodeName(0), { 'juneau.loutres.me/elastic-ip': 'late-eip' }),
      );
      const events = await until('the Events of pod late', async () => {
        const e = await podEvents('late');
        return e.some((x) => x.reason === 'WaitingForNetworkID') &&
          e.some((x) => x.reason === 'WaitingForNetworkInterface')
          ? e
          : undefined;
      });
      expect(events.find((e) => e.reason === 'WaitingForNetworkID')!.message).toContain(
        'ExternalNetwork late-net of ElasticIP late-eip has no status.networkID yet',
      );
      expect(events.find((e) => e.reason === 'WaitingForNetworkInterface')!.message).toContain(
        'NetworkInterface default/late.eth0 (ElasticIP late-eip) does not exist yet',
      );
      // The controller's Event is written by the pass that decided not to create the NetworkInterface.
      expect(await kubectl(['get', 'networkinterface', 'late.eth0', '-o', 'name', '--ignore-not-found'])).toBe('');
      const held = await getPod(kubectl, 'late');
      expect(held.status.phase).toBe('Pending');
      expect((held.status.containerStatuses?.[0] as { state?: unknown } | undefined)?.state).toEqual({
        waiting: { reason: 'ContainerCreating' },
      });

      const t0 = Date.now();
      await restore();
      await podReady(kubectl, 'late');
      figure('cni box: subnet-vni back -> the waiting pod Ready holding its ElasticIP (EN-8)', elapsedSince(t0));
      const id = Number(await kubectl(['get', 'externalnetwork', 'late-net', '-o', 'jsonpath={.status.networkID}']));
      expect(id).toBeGreaterThanOrEqual(vni.spec.start);
      expect(await eth0Addresses('late')).toContain(`${lateEip}/32`);
      const page = await until(
        `HTTP to ${lateEip}`,
        async () => (await routerGet(echoBox.router, lateEip)) || undefined,
        60_000,
      );
      expect(page).toBe(`client=${echoBox.routerIp} pod=late node=${nodeName(0)}`);
    } finally {
      await restore();
    }
    await kubectl(['delete', 'pod', 'late', '--wait=true']);
    await kubectl(['delete', 'elasticip', 'late-eip', '--wait=true', '--timeout=60s']);
    await kubectl(['delete', 'externalnetwork', 'late-net', '--wait=true']);
    await kubectl(['delete', 'addresspool', 'late-pool', '--wait=true']);
  });

  test('bad input, NIC-1: malformed JSON in juneau.loutres.me/networks is refused at admission naming the annotation, nothing created; a plain pod on the same node starts', async () => {
    // On the install as synthesized the webhook refuses the Pod, so no sandbox is ever set up for
    // it; the plugin's own answer to such a Pod (one admitted while the webhook was down) is in
    // test/unit/agent/cni-decide.test.ts.
    const refused = await kubectl(
      ['apply', '--server-side', '-f', '-'],
      echoPod('garbled', nodeName(0), { 'juneau.loutres.me/networks': '[{"interface": "eth0",' }),
    ).then(
      () => 'admitted',
      (err: Error) => err.message,
    );
    expect(refused).toContain('metadata.annotations["juneau.loutres.me/networks"]');
    expect(refused).toContain('is not valid JSON');
    expect(await kubectl(['get', 'pod', 'garbled', '-o', 'name', '--ignore-not-found'])).toBe('');
    await kubectl(['apply', '--server-side', '-f', '-'], echoPod('beside', nodeName(0), {}));
    await podReady(kubectl, 'beside');
    await kubectl(['delete', 'pod', 'beside', '--wait=true']);
  });

  test('CNI-3, EIP-15: the pod deleted, the address leaves its namespace (eth0 still there) before its NetworkInterface is released; the ElasticIP deletion then completes', async () => {
    const podIp = (await getPod(kubectl, 'web2')).status.podIP!;
    // Watch the pod's namespace from the host (the watcher keeps the namespace open past the sandbox).
    // stdbuf: a line as soon as it happens (ip's stdout to a pipe is block-buffered).
    const monitor = runningIn(podNetns('web2'), 'stdbuf', ['-oL', 'ip', '-o', '-4', 'monitor', 'address']);
    await new Promise((r) => setTimeout(r, 500));
    const deleted = (ip: string) => new RegExp(`^Deleted .* inet ${ip.replace(/\./g, '\\.')}/`, 'm');
    // The NetworkInterface watched as it happens: its DELETED event is seen in the same process as
    // the address's, so "still there when the address left" is read at that moment, not by a later get.
    const nicWatch = new Running(echoBox.kubectlBin, [
      ...echoBox.kubectlArgs,
      'get',
      'networkinterface',
      'web2.eth0',
      '--watch',
      '--output-watch-events',
      '-o',
      'jsonpath={.type} {.object.metadata.name}{"\\n"}',
    ]);
    await nicWatch.waitFor(/^ADDED web2\.eth0$/m);
    const nicDeleted = /^DELETED web2\.eth0$/m;
    let nicGoneWhenAddressLeft = true;
    let tRemoved = 0;
    let nicGoneAfter = '';
    try {
      await kubectl(['delete', 'pod', 'web2', '--wait=false']);
      await monitor.waitFor(deleted(eip));
      tRemoved = Date.now();
      nicGoneWhenAddressLeft = nicDeleted.test(nicWatch.lines.join('\n'));
      // The positive control: the pod address goes when the runtime's bridge plugin deletes eth0, after.
      await monitor.waitFor(deleted(podIp));
      await nicWatch.waitFor(nicDeleted, 120_000);
      nicGoneAfter = elapsedSince(tRemoved);
    } finally {
      // It holds the pod's namespace open, and Jest would wait for it.
      monitor.child.kill();
      nicWatch.child.kill();
      console.log(`cni box: the pod's address events:\n${monitor.lines.join('\n')}`);
    }
    const order = monitor.lines.filter((l) => deleted(eip).test(l) || deleted(podIp).test(l));
    expect(order.map((l) => (deleted(eip).test(l) ? 'ElasticIP' : 'pod address'))).toEqual([
      'ElasticIP',
      'pod address',
    ]);
    expect(nicGoneWhenAddressLeft).toBe(false);
    figure('cni box: ElasticIP removed from the pod -> its NetworkInterface gone', nicGoneAfter);
    const tDelete = Date.now();
    await kubectl(['delete', 'elasticip', 'web-eip', '--wait=true', '--timeout=60s']);
    figure('cni box: ElasticIP deleted after its last holder (EIP-15)', elapsedSince(tDelete));
  });

  test('pods without Juneau NICs still start; the added ADD latency of juneau-cni for them is printed', async () => {
    await kubectl(['apply', '--server-side', '-f', '-'], echoPod('plain', nodeName(0), {}));
    const plain = await podReady(kubectl, 'plain');
    expect((await podEvents('plain')).map((e) => e.reason)).not.toContain('ElasticIPConfigured');
    // The plugin as the runtime runs it (in the node's namespaces), for that pod: pass-through.
    const node = echoBox.box.nodes[0];
    const prev = { cniVersion: '0.4.0', interfaces: [], ips: [{ version: '4', address: `${plain.status.podIP}/24` }] };
    const conf = JSON.stringify({ cniVersion: '0.4.0', name: 'x', type: 'juneau-cni', prevResult: prev });
    const script = [
      `export CNI_COMMAND=ADD CNI_CONTAINERID=t CNI_NETNS=/nonexistent CNI_IFNAME=eth0`,
      `export CNI_ARGS='K8S_POD_NAMESPACE=default;K8S_POD_NAME=plain;K8S_POD_UID=${plain.metadata.uid}'`,
      `for i in $(seq 20); do s=$(date +%s%N); echo '${conf}' | ${NODE_CNI_BIN_DIR}/juneau-cni >/tmp/juneau-cni-out.$$ || exit 1; e=$(date +%s%N); echo $(( (e - s) / 1000 )); done`,
      `cat /tmp/juneau-cni-out.$$; rm -f /tmp/juneau-cni-out.$$`,
    ].join('\n');
    const out = await cmd('nsenter', [
      `--net=/var/run/netns/${node.netns}`,
      `--mount=${mountNsFile(node)}`,
      'bash',
      '-c',
      script,
    ]);
    const lines = out.trim().split('\n');
    expect(JSON.parse(lines.pop()!)).toEqual(prev);
    const micros = lines.map(Number).sort((a, b) => a - b);
    figure(
      'cni box: juneau-cni ADD for a pod without Juneau NICs (pass-through), median of 20',
      `${(micros[10] / 1000).toFixed(1)} ms`,
    );
  });

  test("CNI-1: kubectl juneau uninstall takes juneau-cni out of every node's chain and bin dir", async () => {
    await kubectl(['delete', 'pod', 'plain', '--wait=true']);
    const files = [DIST('juneau-crds.k8s.yaml'), DIST('juneau-install.k8s.yaml')].join(',');
    const r = await new Promise<{ code: number; out: string }>((resolve) =>
      execFile(
        process.execPath,
        [
          path.join(REPO_ROOT, 'build', 'bin', 'kubectl-juneau.js'),
          '--kubeconfig',
          echoBox.status.kubeconfigPath,
          'uninstall',
          '-f',
          files,
          '--timeout',
          '300s',
        ],
        { env: { ...process.env, KUBECTL: path.join(echoBox.status.binDir, 'kubectl') } },
        (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, out: stdout + stderr }),
      ),
    );
    expect(r).toEqual({ code: 0, out: expect.stringContaining('uninstall: done') });
    for (const [i, node] of echoBox.box.nodes.entries()) {
      expect({ node: node.name, chain: conflist(i).plugins.map((p) => p.type) }).toEqual({
        node: node.name,
        chain: ['bridge'],
      });
      expect({ node: node.name, bin: fs.existsSync(path.join(nodeCniDirs(node).bin, 'juneau-cni')) }).toEqual({
        node: node.name,
        bin: false,
      });
    }
    // The nodes keep starting pods without it.
    await kubectl(['apply', '--server-side', '-f', '-'], echoPod('after', nodeName(0), {}));
    await podReady(kubectl, 'after');
  });
});
