// The NATGateway with real pods on real nodes (NGW-1..NGW-4, NAT-2 wins, the delete order), on the
// cluster in a box: Juneau installed from the built image and the synthesized manifest as is, the
// box's arp network on the nodes' segment, echo pods (scripts/images/echo.ts) on all three nodes,
// and the router namespace as "the outside": a TCP and a UDP server there print the source
// address each connection arrives from, and a capture there sees each ping's source.
//
// The router routes the pods' ranges to their nodes (a routed pod network: the box's CNI does not
// masquerade), so a pod that is not selected reaches it from its own address and gets its reply.
import * as fs from 'node:fs';
import { INSTALL } from '../../api/constants';
import { ECHO_HTTP_PORT } from '../../scripts/images/echo';
import { NGW } from '../../runtime/agent/ngw/desired';
import { elapsedSince, figure } from '../shared/figures';
import { bashIn, cmd, inNetns } from './exec';
import {
  addServerBehind,
  capturingFragNeeded,
  peerIn,
  peerInPod,
  podConnects,
  runningIn,
  type KubectlCommand,
  type PeerResult,
} from './peers';
import { arpAnswers, macOf, neighbourMac, watchLines } from './router-view';
import { agentPidsInNetns, pidsOf } from './upstream';
import { agentLeaseName } from '../../runtime/agent/liveness/lease';
import { addAgentArgs, describeOnBox, echoPod, getFromPod, until } from './session';
import { kubectlJuneau, sharedEchoBox, webBehindElasticIp } from './echo-box';

const OTHER_NS = 'team-b';
/** The selected pods of `default`, one per node (app label = name), and the NATGateway's selector. */
const SELECTED = ['sel-0', 'sel-1', 'sel-2'];
const SELECTOR = { matchExpressions: [{ key: 'app', operator: 'In', values: [...SELECTED, 'web', 'sel-ns'] }] };
const TCP_PORT = 9400;
/** The server behind the router, on a link of MTU 1280 (NGW-7). */
const SERVER_PREFIX = '198.51.100';
const LINK_MTU = 1280;
const UDP_PORT = 9401;
/** NGW-5: the server that holds every connection (the port range made two ports). */
const HOLD_PORT = 9403;
/** NGW-8: the server the long-lived connections counted by kubectl juneau ngw and the metrics go to. */
const COUNT_PORT = 9404;

interface PodJsonIP {
  status: { podIP?: string };
  spec: { nodeName?: string };
}

/** An echo pod `name` on `node` in `namespace` (labelled app: name). */
function podIn(namespace: string, name: string, node: string, annotations: Record<string, string> = {}): string {
  const pod = JSON.parse(echoPod(name, node, annotations)) as { metadata: { namespace: string } };
  pod.metadata.namespace = namespace;
  return JSON.stringify(pod);
}

const natGatewayYaml = (name: string) => `apiVersion: juneau.loutres.me/v1alpha1
kind: NATGateway
metadata: { name: ${name}, namespace: default }
spec:
  externalNetwork: box-net
  podSelector: ${JSON.stringify(SELECTOR)}
`;

/** A TCP server in the router that echoes and, at SIGTERM (or after 60 s), prints the peers it saw. */
function holdingServer(netns: string, address: string, port: number) {
  const server = runningIn(netns, process.execPath, [
    '-e',
    `const peers = []; const srv = require('node:net').createServer((s) => { peers.push({ from: s.remoteAddress, port: s.remotePort }); s.on('data', (d) => s.write(d)); s.on('error', () => {}); });
srv.listen(${port}, '${address}', () => console.log('{"listening":true}'));
process.on('SIGTERM', () => { console.log(JSON.stringify({ peers })); process.exit(0); });
setTimeout(() => { console.log(JSON.stringify({ peers })); process.exit(0); }, 60000);`,
  ]);
  return {
    listening: () => server.waitFor(/"listening":true/),
    /** Stops it: the peers it saw. */
    peers: async () => {
      server.child.kill('SIGTERM');
      const { stdout } = await server.done;
      const last = stdout
        .split('\n')
        .filter((l) => l.startsWith('{"peers"'))
        .at(-1)!;
      return (JSON.parse(last) as { peers: Array<{ from: string; port: number }> }).peers;
    },
  };
}

/** What `kubectl juneau ngw -o json` prints (runtime/cli/ngw.ts NgwView). */
interface NgwJson {
  node: string;
  address: string;
  translated: boolean;
  portRange: { min: number; max: number };
  flows: Record<'tcp' | 'udp' | 'icmp' | 'total', number>;
  portsInUse: Record<'tcp' | 'udp' | 'icmp', number>;
  drops: { insertFailed: number; conntrackDrop: number; tunnelRefused: number };
  flowList?: Array<{
    protocol: string;
    source: string;
    port: number;
    destination: string;
    destinationPort: number;
    state?: string;
  }>;
  flowsNotListed?: number;
}

interface GatewayStatus {
  phase?: string;
  address?: string;
  nodeName?: string;
  selectedPods?: number;
}

describeOnBox('the NATGateway with real pods on real nodes, the router as the outside (NGW)', () => {
  const echoBox = sharedEchoBox('juneau-natgw-box-', { nodes: 3, label: 'natgw box' });
  const { kubectl } = echoBox;
  let address = '';
  let gatewayNode = '';
  let natEip = '';
  /** kubectl exec into a pod of `namespace`. */
  const execIn = (namespace: string): KubectlCommand => ({
    kubectlBin: echoBox.kubectlBin,
    kubectlArgs: [...echoBox.kubectlArgs, '-n', namespace],
  });
  const podOf = async (namespace: string, name: string) =>
    JSON.parse(await kubectl(['-n', namespace, 'get', 'pod', name, '-o', 'json'])) as PodJsonIP;
  const nodeNetns = (name: string) => echoBox.box.nodes.find((n) => n.name === name)!.netns;

  /** The pod's network namespace, through its echo server's process (POD_NAME is unique here). */
  const podNetns = (name: string) => {
    const pids = pidsOf('juneau-echo/server.js', (pid) =>
      fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`POD_NAME=${name}`),
    );
    expect(pids).toHaveLength(1);
    return `/proc/${pids[0]}/ns/net`;
  };

  /** The source a TCP connection from the pod reaches the router from (1000 bytes each way, both checked). */
  async function tcpSource(namespace: string, pod: string, port = TCP_PORT): Promise<string> {
    const { heard, said } = await podConnects(
      execIn(namespace),
      pod,
      { netns: echoBox.router, address: echoBox.routerIp, port },
      1000,
    );
    expect({ got: said.received, sha: said.receivedSha256 }).toEqual({ got: 1000, sha: heard.sentSha256 });
    expect({ got: heard.received, sha: heard.receivedSha256 }).toEqual({ got: 1000, sha: said.sentSha256 });
    return heard.peer;
  }

  /** The source a UDP datagram from the pod reaches the router from; the pod got the router's answer. */
  async function udpSource(namespace: string, pod: string): Promise<string> {
    const server = runningIn(echoBox.router, process.execPath, [
      '-e',
      `const s = require('node:dgram').createSocket('udp4');
s.on('message', (m, r) => { console.log(JSON.stringify({ from: r.address })); s.send(m, r.port, r.address, () => process.exit(0)); });
s.bind(${UDP_PORT}, '${echoBox.routerIp}', () => console.log('{"listening":true}'));
setTimeout(() => process.exit(2), 30000);`,
    ]);
    await server.waitFor(/"listening":true/);
    const client = `const s = require('node:dgram').createSocket('udp4'); const msg = Buffer.from('ngw');
s.on('message', (m) => { console.log(m.equals(msg) ? 'ANSWERED' : 'WRONG'); process.exit(0); });
let n = 0; const send = () => { if (++n > 10) { console.log('NO ANSWER'); process.exit(1); } s.send(msg, ${UDP_PORT}, '${echoBox.routerIp}'); };
send(); setInterval(send, 1000);`;
    const answered = await kubectl(['-n', namespace, 'exec', pod, '--', 'node', '-e', client]);
    const { code, stdout } = await server.done;
    expect({ code, answered: answered.trim() }).toEqual({ code: 0, answered: 'ANSWERED' });
    return (JSON.parse(stdout.split('\n').find((l) => l.startsWith('{"from"'))!) as { from: string }).from;
  }

  /** The sources of the echo requests the router heard while the pod pinged it 3 times (all answered). */
  async function pingSources(pod: string): Promise<string[]> {
    const capture = runningIn(echoBox.router, 'timeout', [
      '20',
      'tcpdump',
      '-n',
      '-l',
      '-i',
      'eth0',
      `icmp[icmptype] == icmp-echo and dst host ${echoBox.routerIp}`,
    ]);
    await capture.waitFor(/listening on/);
    const ping = await bashIn(podNetns(pod), `ping -c 3 -i 0.2 -W 2 ${echoBox.routerIp} || true`);
    expect(ping).toMatch(/3 packets transmitted, 3 received/);
    await until('the capture saw the 3 echo requests', async () =>
      capture.lines.filter((l) => l.includes('ICMP echo request')).length >= 3 ? true : undefined,
    );
    capture.child.kill('SIGTERM');
    await capture.done;
    return [
      ...new Set(capture.lines.filter((l) => l.includes('ICMP echo request')).map((l) => /IP (\S+) >/.exec(l)![1]!)),
    ];
  }

  /** What the NATGateway data path left in node `name`'s network namespace: tunnels, rules, routes, the nftables table. */
  async function ngwStateOn(name: string): Promise<string[]> {
    const netns = nodeNetns(name);
    const links = (JSON.parse(await inNetns(netns, 'ip', ['-j', 'link', 'show'])) as Array<{ ifname: string }>)
      .filter((l) => l.ifname.startsWith(NGW.devicePrefix))
      .map((l) => `link ${l.ifname}`);
    // `ip rule show proto N` lists every rule (iproute2 6.1 does not filter rules by protocol).
    const tagged = (line: string) => line.includes(` proto ${NGW.protocol}`);
    const rules = (await inNetns(netns, 'ip', ['rule', 'show']))
      .split('\n')
      .filter(tagged)
      .map((r) => `rule ${r.trim()}`);
    const routes = (await inNetns(netns, 'ip', ['route', 'show', 'table', 'all']))
      .split('\n')
      .filter(tagged)
      .map((r) => `route ${r.trim()}`);
    const tables = (await inNetns(netns, 'nft', ['list', 'tables']))
      .split('\n')
      .filter((t) => t.includes(NGW.nftTable))
      .map((t) => `nftables ${t.trim()}`);
    return [...links, ...rules, ...routes, ...tables];
  }

  /** `kubectl juneau ARGS` as a user runs it: the bundled plugin beside the box's kubectl. */
  const juneau = kubectlJuneau(echoBox);
  const ngwJson = async (args: readonly string[] = []): Promise<NgwJson> => {
    const r = await juneau(['ngw', 'default/egress', '-o', 'json', ...args]);
    if (r.code !== 0) throw new Error(`kubectl juneau ngw: exit ${r.code}: ${r.stderr}`);
    return JSON.parse(r.stdout) as NgwJson;
  };
  let metricsToken = '';
  /** The samples of the NATGateway egress in node `name`'s agent /metrics (HTTPS, a token bound to juneau-metrics-reader). */
  async function agentNgwMetrics(name: string): Promise<Record<string, number>> {
    if (!metricsToken) {
      await kubectl(['create', 'serviceaccount', 'ngw-scraper']);
      await kubectl([
        'create',
        'clusterrolebinding',
        'ngw-scraper',
        '--clusterrole=juneau-metrics-reader',
        '--serviceaccount=default:ngw-scraper',
      ]);
      metricsToken = (await kubectl(['create', 'token', 'ngw-scraper'])).trim();
    }
    const ip = echoBox.box.nodes.find((n) => n.name === name)!.ip;
    const text = await inNetns(nodeNetns(name), 'curl', [
      '-sk',
      '-H',
      `Authorization: Bearer ${metricsToken}`,
      `https://${ip}:9201/metrics`,
    ]);
    const out: Record<string, number> = {};
    for (const line of text.split('\n')) {
      const m = /^juneau_agent_ngw_(\w+)\{([^}]*)\} (\S+)$/.exec(line);
      if (!m) continue;
      const labels = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
      if (labels.namespace !== undefined && (labels.namespace !== 'default' || labels.name !== 'egress')) continue;
      out[`${m[1]}${labels.protocol ? `/${labels.protocol}` : labels.reason ? `/${labels.reason}` : ''}`] = Number(
        m[3],
      );
    }
    return out;
  }

  const gatewayStatus = async (): Promise<GatewayStatus> =>
    (JSON.parse(await kubectl(['get', 'natgateway', 'egress', '-o', 'json'])) as { status?: GatewayStatus }).status ??
    {};

  beforeAll(async () => {
    const { box } = echoBox;
    const nodes = box.nodes.map((n) => n.name);
    // A routed pod network seen from the outside: the router reaches each node's pod range through it.
    for (const n of box.nodes) await inNetns(echoBox.router, 'ip', ['route', 'add', n.podCidr, 'via', n.ip]);
    // NAT-2 wins: `web` is selected too, and has its ElasticIP through NAT (node 1).
    natEip = await webBehindElasticIp(echoBox, nodes[1]!);
    await kubectl(['create', 'namespace', OTHER_NS]);
    const pods: Array<[string, string, string]> = [
      ...SELECTED.map((p, i): [string, string, string] => ['default', p, nodes[i]!]),
      ['default', 'plain', nodes[0]!],
      [OTHER_NS, 'sel-ns', nodes[2]!],
    ];
    for (const [ns, name, node] of pods) await kubectl(['apply', '--server-side', '-f', '-'], podIn(ns, name, node));
    for (const [ns, name] of pods)
      await until(`pod ${ns}/${name} Ready`, async () => {
        const p = JSON.parse(await kubectl(['-n', ns, 'get', 'pod', name, '-o', 'json'])) as {
          status: { phase: string; containerStatuses?: Array<{ ready: boolean }> };
        };
        return p.status.phase === 'Running' && p.status.containerStatuses?.[0]?.ready ? true : undefined;
      });
    const t0 = Date.now();
    await kubectl(['apply', '--server-side', '-f', '-'], natGatewayYaml('egress'));
    const status = await until('NATGateway egress Ready', async () => {
      const s = await gatewayStatus();
      return s.phase === 'Ready' && s.address && s.nodeName ? s : undefined;
    });
    address = status.address!;
    gatewayNode = status.nodeName!;
    // The first connection from a pod of another node through the gateway: the data path is built.
    // A port per attempt: a failed attempt's listener may still hold its own.
    let attempt = 0;
    await until(
      'a TCP connection from sel-0 arriving from the gateway address',
      async () =>
        (await tcpSource('default', 'sel-0', TCP_PORT + 100 + attempt++).catch(() => '')) === address
          ? true
          : undefined,
      120_000,
    );
    figure(
      'natgw box: NATGateway applied -> Ready and a pod of another node leaving from its address',
      elapsedSince(t0),
    );
  });

  test('NGW-4: selected pods on every node reach the router from the gateway address over TCP, UDP and ping, and get their replies', async () => {
    const seen: Record<string, { tcp: string; udp: string; ping: string[] }> = {};
    for (const p of SELECTED)
      seen[p] = { tcp: await tcpSource('default', p), udp: await udpSource('default', p), ping: await pingSources(p) };
    const want = Object.fromEntries(SELECTED.map((p) => [p, { tcp: address, udp: address, ping: [address] }]));
    expect(seen).toEqual(want);
    // One of them runs on the gateway node itself, the others are carried there.
    const nodes = await Promise.all(SELECTED.map(async (p) => (await podOf('default', p)).spec.nodeName));
    expect(nodes).toContain(gatewayNode);
    expect(new Set(nodes).size).toBe(3);
  });

  test('NGW-1, NGW-4: a pod of the namespace the selector does not select, and a selected-looking pod of another namespace, arrive from their own address', async () => {
    const seen: Record<string, { tcp: string; udp: string; ping: string[] }> = {};
    const want: typeof seen = {};
    for (const [ns, p] of [
      ['default', 'plain'],
      [OTHER_NS, 'sel-ns'],
    ] as const) {
      const ip = (await podOf(ns, p)).status.podIP!;
      seen[p] = { tcp: await tcpSource(ns, p), udp: await udpSource(ns, p), ping: await pingSources(p) };
      want[p] = { tcp: ip, udp: ip, ping: [ip] };
    }
    expect(seen).toEqual(want);
  });

  test('NGW-4: traffic from a selected pod to another pod and to a ClusterIP Service keeps the pod address', async () => {
    const from = (await podOf('default', 'sel-0')).status.podIP!;
    const target = await podOf('default', 'sel-1');
    const page = await getFromPod(kubectl, 'sel-0', `http://${target.status.podIP}:${ECHO_HTTP_PORT}/`);
    expect(page).toBe(`client=${from} pod=sel-1 node=${target.spec.nodeName}`);
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'sel-2', namespace: 'default' },
        spec: { selector: { app: 'sel-2' }, ports: [{ port: 80, targetPort: ECHO_HTTP_PORT }] },
      }),
    );
    const clusterIP = (
      JSON.parse(await kubectl(['get', 'service', 'sel-2', '-o', 'json'])) as { spec: { clusterIP: string } }
    ).spec.clusterIP;
    const node2 = (await podOf('default', 'sel-2')).spec.nodeName;
    const viaService = await until(`HTTP from sel-0 to the Service ${clusterIP}`, async () => {
      const got = await getFromPod(kubectl, 'sel-0', `http://${clusterIP}/`);
      return got.startsWith('client=') ? got : undefined;
    });
    expect(viaService).toBe(`client=${from} pod=sel-2 node=${node2}`);
  });

  test('NGW-4, NAT-2: a selected pod that has an ElasticIP through NAT leaves from its ElasticIP, not the gateway address', async () => {
    expect(await tcpSource('default', 'web')).toBe(natEip);
    expect(natEip).not.toBe(address);
  });

  test('NGW-3, NGW-8: ARP for the gateway address is answered by exactly one MAC, the gateway node’s; kubectl get natgateway shows it', async () => {
    const answers = await arpAnswers(echoBox.router, address, 3);
    expect(answers.byMac).toEqual({ [await macOf(nodeNetns(gatewayNode))]: 3 });
    const row = (await kubectl(['get', 'natgateway', 'egress', '--no-headers'])).trim().split(/\s+/);
    // NAME, EXTERNALNETWORK, ADDRESS, NODE, PODS (sel-0..2 and web; plain and team-b's not), PHASE.
    expect(row).toEqual(['egress', 'box-net', address, gatewayNode, '4', 'Ready']);
  });

  test(`NGW-7: a selected pod carried to the gateway learns the MTU ${LINK_MTU} of a hop beyond it: the router's "fragmentation needed" to the gateway address reaches the pod naming its own address, and 300 kB over TCP cross the link from the gateway address`, async () => {
    const { server, serverIp } = await addServerBehind(
      echoBox.router,
      echoBox.box,
      echoBox.routerIp,
      SERVER_PREFIX,
      LINK_MTU,
    );
    echoBox.namespaces.push(server);
    // A selected pod on a node that is not the gateway: its packets cross the tunnel first.
    const name = SELECTED[(SELECTED.length + echoBox.box.nodes.findIndex((n) => n.name === gatewayNode) + 1) % 3]!;
    const p = await podOf('default', name);
    expect(p.spec.nodeName).not.toBe(gatewayNode);
    const podIp = p.status.podIP!;
    const netns = podNetns(name);
    const capture = capturingFragNeeded(netns);
    await capture.waitFor(/listening on/);
    const ping = await bashIn(netns, `ping -M do -s 1400 -c 1 -W 2 ${serverIp} || true`);
    expect(ping).toContain(`Frag needed and DF set (mtu = ${LINK_MTU})`);
    const seen = (await capture.done).stdout.replace(/\s+/g, ' ');
    // Outer header to the pod, the embedded header naming the pod's address (not the gateway address the router saw).
    expect(seen).toContain(
      `${echoBox.routerIp} > ${podIp}: ICMP ${serverIp} unreachable - need to frag (mtu ${LINK_MTU})`,
    );
    expect(seen).toContain(`${podIp} > ${serverIp}: ICMP echo request`);
    expect(seen).not.toMatch(/bad cksum|wrong/i);
    await bashIn(netns, 'ip route flush cache');
    const sink = peerIn(server, ['listen', serverIp, '9402', '0']);
    await sink.waitFor(/"listening":true/);
    const t0 = Date.now();
    const source = peerInPod(execIn('default'), name, ['connect', serverIp, '9402', String(300_000)]);
    const [heard, said] = await Promise.all([sink.result<PeerResult>(), source.result<PeerResult>()]);
    figure(
      `natgw box: 300 kB over TCP from a pod through the tunnel and the gateway across the MTU ${LINK_MTU} link`,
      elapsedSince(t0),
    );
    expect({ peer: heard.peer, received: heard.received, sha: heard.receivedSha256 }).toEqual({
      peer: address,
      received: 300_000,
      sha: said.sentSha256,
    });
    expect(await bashIn(netns, `ip route get ${serverIp}`)).toContain(`mtu ${LINK_MTU}`);
  });

  test("NGW-8: kubectl juneau ngw reads the gateway node's conntrack: long-lived connections of selected pods on two nodes counted as flows and ports in use, each listed with the pod's source and the port the router saw; the gateway node's agent /metrics say the same", async () => {
    const gatewayNetns = nodeNetns(gatewayNode);
    // One pod on the gateway node, one carried there through the tunnel.
    const onGateway = SELECTED[echoBox.box.nodes.findIndex((n) => n.name === gatewayNode)]!;
    const carried = SELECTED[(echoBox.box.nodes.findIndex((n) => n.name === gatewayNode) + 1) % 3]!;
    const perPod = 3;
    // A clean slate: the earlier tests' flows (TIME_WAIT, UDP, ICMP) translated to the address deleted.
    await inNetns(gatewayNetns, 'conntrack', ['-D', '--reply-dst', address]).catch(() => '');
    const server = holdingServer(echoBox.router, echoBox.routerIp, COUNT_PORT);
    await server.listening();
    const client = `const net = require('node:net'); let open = 0;
for (let i = 0; i < ${perPod}; i++) net.connect(${COUNT_PORT}, '${echoBox.routerIp}')
  .once('connect', () => { if (++open === ${perPod}) console.log(JSON.stringify({ open })); })
  .once('error', (e) => { console.log(JSON.stringify({ error: e.message })); process.exit(1); });
setTimeout(() => process.exit(0), 90000);`;
    const clients = [onGateway, carried].map((p) => runningIn(podNetns(p), process.execPath, ['-e', client]));
    try {
      for (const c of clients) await c.waitFor(new RegExp(`"open":${perPod}`));
      const flows = perPod * clients.length;
      const t0 = Date.now();
      const seen = await ngwJson(['--flows']);
      figure(
        'natgw box: NGW-8 kubectl juneau ngw --flows (API, kubectl exec into the gateway agent, conntrack)',
        elapsedSince(t0),
      );
      expect({ node: seen.node, address: seen.address, translated: seen.translated }).toEqual({
        node: gatewayNode,
        address,
        translated: true,
      });
      expect({ flows: seen.flows, portsInUse: seen.portsInUse }).toEqual({
        flows: { tcp: flows, udp: 0, icmp: 0, total: flows },
        portsInUse: { tcp: flows, udp: 0, icmp: 0 },
      });
      const podIps = await Promise.all(
        [onGateway, carried].map(async (p) => (await podOf('default', p)).status.podIP!),
      );
      const listed = seen.flowList!;
      expect(seen.flowsNotListed).toBe(0);
      expect(new Set(listed.map((f) => `${f.protocol} ${f.destination}:${f.destinationPort} ${f.state}`))).toEqual(
        new Set([`tcp ${echoBox.routerIp}:${COUNT_PORT} ESTABLISHED`]),
      );
      expect([...new Set(listed.map((f) => f.source.split(':')[0]))].sort()).toEqual([...podIps].sort());
      // The table output says the same.
      const shown = await juneau(['ngw', 'default/egress']);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toContain(`flows:          ${flows} (tcp ${flows}, udp 0, icmp 0)`);
      const range = seen.portRange.max - seen.portRange.min + 1;
      expect(shown.stdout).toContain(`ports in use:   tcp ${flows}/${range}, udp 0/${range}, icmp 0/${range}`);
      // The agent's metrics, read at its poll: the same figures once it has polled since the connections opened.
      const t1 = Date.now();
      const metrics = await until(
        'the gateway agent metrics counting the connections',
        async () => {
          const m = await agentNgwMetrics(gatewayNode).catch(() => ({}) as Record<string, number>);
          return m['flows/tcp'] === flows ? m : undefined;
        },
        30_000,
      );
      figure('natgw box: NGW-8 connections open -> the gateway agent /metrics count them', elapsedSince(t1));
      expect(metrics).toMatchObject({
        'flows/tcp': flows,
        'flows/udp': 0,
        'flows/icmp': 0,
        'ports_in_use/tcp': flows,
        port_range_ports: range,
      });
      // The ports listed are the ones the router saw the connections come from, from the gateway address.
      const peers = await server.peers();
      expect(peers.map((p) => p.from)).toEqual(Array(flows).fill(address));
      expect(listed.map((f) => f.port).sort()).toEqual(peers.map((p) => p.port).sort());
    } finally {
      for (const c of clients) c.child.kill('SIGTERM');
      await Promise.all(clients.map((c) => c.done.catch(() => undefined)));
    }
  });

  test("NGW-5: with the agents' --ngw-port-range of two ports, a pod's third connection to one destination is dropped and counted on the gateway node; the first two keep working; a Warning Event on the NATGateway names the node and the range; kubectl juneau ngw and the agent's metrics count the refused packets", async () => {
    await addAgentArgs(kubectl, ['--ngw-port-range=40000-40001']);
    // The agents restarted; the gateway is the node the status names now (kept, unless its Lease lapsed meanwhile).
    const now = await until('NATGateway egress Ready after the agents restarted', async () => {
      const s = await gatewayStatus();
      return s.phase === 'Ready' && s.nodeName ? s : undefined;
    });
    gatewayNode = now.nodeName!;
    const gatewayNetns = nodeNetns(gatewayNode);
    // nft lists an ip table's rule as `snat to ADDRESS:RANGE` (no `ip`): the address and range are what is looked for.
    await until('the gateway node translating to the two ports', async () =>
      (await inNetns(gatewayNetns, 'nft', ['list', 'table', 'ip', NGW.nftTable]).catch(() => '')).includes(
        `${address}:40000-40001`,
      )
        ? true
        : undefined,
    );
    const name = SELECTED[(echoBox.box.nodes.findIndex((n) => n.name === gatewayNode) + 1) % 3]!;
    const insertFailed = async () => {
      const lines = (await inNetns(gatewayNetns, 'cat', ['/proc/net/stat/nf_conntrack'])).trim().split('\n');
      const at = lines[0]!.trim().split(/\s+/).indexOf('insert_failed');
      return lines.slice(1).reduce((sum, l) => sum + parseInt(l.trim().split(/\s+/)[at]!, 16), 0);
    };
    const server = holdingServer(echoBox.router, echoBox.routerIp, HOLD_PORT);
    await server.listening();
    const before = await insertFailed();
    const client = `const net = require('node:net');
const open = () => new Promise((resolve) => { const s = net.connect(${HOLD_PORT}, '${echoBox.routerIp}');
  const t = setTimeout(() => { s.destroy(); resolve(undefined); }, 4000);
  s.once('connect', () => { clearTimeout(t); resolve(s); }); s.once('error', () => { clearTimeout(t); resolve(undefined); }); });
const echo = (s) => new Promise((resolve) => { let got = 0; s.on('data', (d) => { got += d.length; if (got >= 1000) resolve(got); }); s.write(Buffer.alloc(1000, 7)); setTimeout(() => resolve(got), 4000); });
(async () => { const socks = []; for (let i = 0; i < 3; i++) socks.push(await open());
  const connected = socks.map((s) => !!s); const echoed = [];
  for (const s of socks) echoed.push(s ? await echo(s) : 0);
  console.log(JSON.stringify({ connected, echoed })); process.exit(0); })();`;
    const out = JSON.parse(await kubectl(['exec', name, '--', 'node', '-e', client])) as unknown;
    const dropped = (await insertFailed()) - before;
    const peers = await server.peers();
    figure(
      'natgw box: NGW-5 ports 40000-40001, third connection refused: conntrack insert_failed on the gateway node',
      dropped,
    );
    expect(out).toEqual({ connected: [true, true, false], echoed: [1000, 1000, 0] });
    expect(peers.map((p) => p.from)).toEqual([address, address]);
    expect(peers.map((p) => p.port).sort()).toEqual([40000, 40001]);
    expect(dropped).toBeGreaterThanOrEqual(1);
    // The gateway node's agent says so: one Event (at the transition, not per refused packet).
    const t0 = Date.now();
    const exhausted = await until('a PortsExhausted Event on NATGateway egress', async () => {
      const list = JSON.parse(
        await kubectl([
          'get',
          'events',
          '--field-selector',
          'reason=PortsExhausted,involvedObject.kind=NATGateway,involvedObject.name=egress',
          '-o',
          'json',
        ]),
      ) as { items: Array<{ type: string; message: string }> };
      return list.items.length > 0 ? list.items : undefined;
    });
    figure('natgw box: NGW-5 third connection refused -> PortsExhausted Event seen', elapsedSince(t0));
    expect(exhausted.map((e) => e.type)).toEqual(['Warning']);
    expect(exhausted[0]!.message).toMatch(
      new RegExp(
        `^NGW-5: the port range 40000-40001 of NATGateway default/egress is exhausted on node ${gatewayNode}: [1-9]\\d* new flow\\(s\\) refused`,
      ),
    );
    // kubectl juneau ngw and the gateway agent's metrics count them (the kernel's node-wide counter).
    const cli = await ngwJson();
    expect({ node: cli.node, portRange: cli.portRange }).toEqual({
      node: gatewayNode,
      portRange: { min: 40000, max: 40001 },
    });
    expect(cli.drops.insertFailed).toBeGreaterThanOrEqual(before + dropped);
    const counted = await until(
      'the gateway agent metrics counting the refused packets',
      async () => {
        const m = await agentNgwMetrics(gatewayNode).catch(() => ({}) as Record<string, number>);
        return (m['refused_packets_total/insert_failed'] ?? 0) >= dropped ? m : undefined;
      },
      30_000,
    );
    figure(
      'natgw box: NGW-5 refused packets counted in juneau_agent_ngw_refused_packets_total{reason="insert_failed"}',
      counted['refused_packets_total/insert_failed']!,
    );
    expect(counted['port_range_ports']).toBe(2);
  });

  test('NGW-6, FO-1: the gateway node crashes (agent SIGKILLed, link cut) on a network with announceOnMove: a surviving node becomes the gateway and a new flow leaves through it within a second of the agent Lease expiry; it announces the move (the router, never flushed, names its MAC before that flow), answers ARP for the address, and new flows of a pod on a surviving node leave from the address through it', async () => {
    const old = echoBox.box.nodes.find((n) => n.name === gatewayNode)!;
    const survivors = echoBox.box.nodes.filter((n) => n !== old).map((n) => n.name);
    const pod = SELECTED[echoBox.box.nodes.findIndex((n) => n.name === survivors[0])]!;
    expect((await podOf('default', pod)).spec.nodeName).toBe(survivors[0]);
    // Both controller replicas off the node this test crashes (as failover.test.ts does): a leader
    // or a webhook endpoint on it would add a controller failover (its 15 s Lease) to NGW-6's.
    await kubectl([
      '-n',
      INSTALL.namespace,
      'patch',
      'deployment',
      'juneau-controller',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { template: { spec: { nodeSelector: { 'kubernetes.io/hostname': survivors[1] } } } } }),
    ]);
    await kubectl(['-n', INSTALL.namespace, 'rollout', 'status', 'deployment/juneau-controller', '--timeout=300s']);
    const announceOnMove = (on: boolean) =>
      kubectl([
        'patch',
        'externalnetwork',
        'box-net',
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { arp: { announceOnMove: on } } }),
      ]);
    await announceOnMove(true);
    // The router knows the old gateway's MAC for the address (what a router would hold).
    await until('the router holding the old gateway MAC for the address', async () => {
      // Its kernel resolves the address for a ping (unanswered: the address is nobody's own).
      await inNetns(echoBox.router, 'ping', ['-c', '1', '-W', '1', address]).catch(() => '');
      return (await neighbourMac(echoBox.router, address)) === (await macOf(old.netns)) ? true : undefined;
    });
    const crashed = Date.now();
    for (const pid of agentPidsInNetns(old.netns)) process.kill(Number(pid), 'SIGKILL');
    // Its last renewal, read after the kill (the agent's clock is this host's): when it expires.
    const lease = JSON.parse(
      await kubectl(['-n', INSTALL.namespace, 'get', 'lease', agentLeaseName(old.name), '-o', 'json']),
    ) as { spec: { renewTime: string; leaseDurationSeconds: number } };
    const expiry = new Date(lease.spec.renewTime).getTime() + lease.spec.leaseDurationSeconds * 1000;
    await cmd('ip', ['link', 'set', 'dev', old.hostVeth, 'down']);
    let moved: GatewayStatus;
    try {
      moved = await until('NATGateway egress Ready on another node', async () => {
        const s = await gatewayStatus();
        return s.phase === 'Ready' && s.nodeName && s.nodeName !== old.name ? s : undefined;
      });
      figure('natgw box: NGW-6 gateway node crash -> status names a new gateway node', elapsedSince(crashed));
      // FO-1: the new gateway announces the move; the router's entry (never flushed here) follows it.
      const newMac = await macOf(nodeNetns(moved.nodeName!));
      await until(
        "the router's neighbour entry for the address naming the new gateway's MAC",
        async () => ((await neighbourMac(echoBox.router, address)) === newMac ? true : undefined),
        10_000,
      );
      const routerLearnt = Date.now();
      // A port per attempt: a failed attempt's listener may still hold its own.
      let attempt = 0;
      await until('a TCP connection from a surviving node’s pod arriving from the gateway address', async () => {
        return (await tcpSource('default', pod, TCP_PORT + 200 + attempt++).catch(() => '')) === address
          ? true
          : undefined;
      });
      const flowAt = Date.now();
      figure(
        'natgw box: NGW-6 gateway node crash -> a new flow leaves from the gateway address',
        elapsedSince(crashed),
      );
      figure(
        `natgw box: NGW-6 the old gateway's agent Lease expiry (${lease.spec.leaseDurationSeconds} s after its last renewal) -> a new flow leaves from the gateway address`,
        `${((flowAt - expiry) / 1000).toFixed(1)} s`,
      );
      figure('natgw box: NGW-6 connection attempts until one left from the gateway address', attempt);
      figure(
        "natgw box: NGW-6 breakdown: crash -> the router's neighbour entry for the address names the new gateway's MAC (announceOnMove)",
        `${((routerLearnt - crashed) / 1000).toFixed(1)} s`,
      );
      expect(moved.address).toBe(address);
      expect(survivors).toContain(moved.nodeName);
      // Issue 29 proof 5: within the Lease expiry plus a second (and the router told at once, above).
      expect(flowAt - expiry).toBeLessThanOrEqual(1_000);
      expect(routerLearnt).toBeLessThanOrEqual(flowAt);
      // Through the new gateway: it is the one node answering ARP for the address.
      const answers = await arpAnswers(echoBox.router, address, 3);
      expect(answers.byMac).toEqual({ [await macOf(nodeNetns(moved.nodeName!))]: 3 });
      expect(await udpSource('default', pod)).toBe(address);
    } finally {
      await cmd('ip', ['link', 'set', 'dev', old.hostVeth, 'up']);
      await announceOnMove(false);
    }
    gatewayNode = moved.nodeName!;
    // The crashed node back (its agent restarted): a pod node again, steering its pod to the new gateway.
    await until(
      `${old.name} steering again as a pod node (its NATGateway rule back)`,
      async () => {
        const state = await ngwStateOn(old.name).catch(() => []);
        return state.filter((l) => l.startsWith('rule')).length === 1 &&
          state.filter((l) => l.startsWith('link')).length === 1
          ? true
          : undefined;
      },
      180_000,
    );
  });

  test('NGW-3, NGW-4: deleting the NATGateway withdraws the address before releasing it, and leaves nothing on any node (tunnels, rules, routes, nftables, ARP answers)', async () => {
    const nodes = echoBox.box.nodes.map((n) => n.name);
    // What there is to take away: the gateway's table and a tunnel to each pod node; each pod node its rule and route.
    const before = Object.fromEntries(await Promise.all(nodes.map(async (n) => [n, await ngwStateOn(n)] as const)));
    for (const n of nodes) {
      expect(before[n]!.filter((s) => s.startsWith('nftables'))).toEqual([`nftables table ip ${NGW.nftTable}`]);
      expect(before[n]!.filter((s) => s.startsWith('link')).length).toBe(n === gatewayNode ? 2 : 1);
      expect(before[n]!.filter((s) => s.startsWith('rule')).length).toBe(n === gatewayNode ? 0 : 1);
    }
    const { kubectlBin, status } = echoBox;
    const events = (kind: string, name: string) =>
      watchLines(
        kubectlBin,
        status.kubeconfigPath,
        [kind, name, '--output-watch-events', '-o', 'jsonpath={.type} {.object.metadata.resourceVersion}{"\\n"}'],
        1,
      );
    const advertisement = await events('arpadvertisement', 'ngw-default-egress');
    const claim = await events('allocationclaim', `ipv4.${address}`);
    const t0 = Date.now();
    await kubectl(['delete', 'natgateway', 'egress', '--wait=true']);
    figure('natgw box: kubectl delete natgateway (finalizer: withdraw, release)', elapsedSince(t0));
    const deletedAt = async (w: Awaited<ReturnType<typeof events>>) => {
      const line = (await w.stop()).find((l) => l.startsWith('DELETED'));
      if (!line) throw new Error('no DELETED event');
      return Number(line.split(' ')[1]);
    };
    const [withdrawn, released] = [await deletedAt(advertisement), await deletedAt(claim)];
    expect(withdrawn).toBeLessThan(released);
    const t1 = Date.now();
    const left = await until(
      'every node without NATGateway state',
      async () => {
        const all = (await Promise.all(nodes.map(async (n) => (await ngwStateOn(n)).map((s) => `${n}: ${s}`)))).flat();
        return all.length === 0 ? all : undefined;
      },
      60_000,
    );
    figure('natgw box: NATGateway deleted -> nothing of its data path on any node', elapsedSince(t1));
    expect(left).toEqual([]);
    expect((await arpAnswers(echoBox.router, address, 2)).byMac).toEqual({});
    // And the pods leave as before it: from their own address.
    expect(await tcpSource('default', 'sel-0')).toBe((await podOf('default', 'sel-0')).status.podIP);
  });
});
