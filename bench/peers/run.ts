// MetalLB L2 and Juneau side by side on the cluster in a box (bench/README.md, "bench/peers").
// One box, one echo Deployment (backends on 2 of 3 nodes), one `externalTrafficPolicy: Local`
// Service on the same VIP, the same router namespace and the same probes: first MetalLB (its
// speaker and controller from the Go module), then Juneau (the install manifest), each phase on
// the same nodes. Usage: npx tsx bench/peers/run.ts [--box DIR] [--phase metallb|juneau] [--idle SECONDS] [--flood SECONDS]
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildEchoImage, ECHO_HTTP_PORT } from '../../scripts/images/echo';
import { sleep } from '../../test/sleep';
import { REPO_ROOT } from '../../test/cluster/paths';
import { cmd, inNetns } from '../../test/box/exec';
import { BoxState } from '../../test/box/state';
import { addRouter, pidsInNetns, pidsOf } from '../../test/box/upstream';
import { macOf, nodesByMac } from '../../test/box/router-view';
import { backendGone, nodeCrash } from './failover';
import { startMetalLB } from './metallb';
import { arpFlood, arpLatency, cpuDuring, Latency, Prober, summary } from './probes';
import {
  boxCli,
  boxStatus,
  buildUserArtifacts,
  echoDeployment,
  IMAGE,
  installJuneau,
  kubectlFor,
  type Kubectl,
  arpNetworkYaml,
} from '../../test/box/session';

const CONNECTIONS = 200;
const FLUSH_EVERY = 10;
const LATENCY_BATCHES = 8;
const FLOOD_ROUNDS = 3;

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const IDLE_SECONDS = Number(arg('--idle', '60'));
const FLOOD_SECONDS = Number(arg('--flood', '3'));
const log = (line: string) => process.stdout.write(`${line}\n`);

/** Everything a phase needs of the box. */
interface Rig {
  box: BoxState;
  kubectl: Kubectl;
  /** The admin kubeconfig with the box's API server address, reachable from inside the nodes. */
  nodeKubeconfig: string;
  router: string;
  routerIp: string;
  vip: string;
  pool: string;
  prober: Prober;
  backendNodes: string[];
  inRouter(script: string): Promise<string>;
}

export interface Connection {
  ok: boolean;
  mac: string;
  out: string;
}

/** `n` HTTP GETs to the VIP, one TCP connection each, 2 s to answer (the seed's check), the router's neighbour entry flushed every `flushEvery` (traffic.test.ts). */
async function replay(rig: Rig, n: number, flushEvery = FLUSH_EVERY): Promise<Connection[]> {
  const out = await rig.inRouter(`for i in $(seq 0 ${n - 1}); do
  [ $((i % ${flushEvery})) -eq 0 ] && ip neigh flush to ${rig.vip} dev eth0
  page=$(curl -s -m 2 http://${rig.vip}/) && r="ok $page" || r="FAIL $?"
  mac=$(ip neigh show to ${rig.vip} dev eth0 | grep -o 'lladdr [0-9a-f:]*' | cut -d' ' -f2)
  echo "\${r%% *} \${mac:-none} \${r#* }"
done`);
  return out
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [status, mac, ...rest] = l.split(' ');
      return { ok: status === 'ok', mac, out: rest.join(' ') };
    });
}

async function tally(rig: Rig, conns: Connection[]): Promise<Record<string, number>> {
  const byMac = await nodesByMac(rig.box);
  const t: Record<string, number> = {};
  for (const c of conns) {
    const k = `${byMac.get(c.mac) ?? c.mac} ${c.ok ? 'ok' : 'failed'}`;
    t[k] = (t[k] ?? 0) + 1;
  }
  return t;
}

/** The MACs answering one arping for `ip` (iputils prints every reply). */
async function answeringMacs(rig: Rig, ip: string): Promise<string[]> {
  const r = await rig.inRouter(`ip neigh flush to ${ip} dev eth0; arping -c 3 -w 4 -I eth0 ${ip} || true`);
  return [...new Set([...r.matchAll(/reply from \S+ \[([0-9A-Fa-f:]{17})\]/g)].map((m) => m[1].toLowerCase()))];
}

/** The node whose kernel answers a broadcast request first on this bridge (traffic.test.ts explains why it is fixed per box). */
async function firstKernelToAnswer(rig: Rig): Promise<string> {
  const probe = `${rig.box.segment}.239`;
  for (const n of rig.box.nodes) await inNetns(n.netns, 'ip', ['addr', 'add', `${probe}/32`, 'dev', 'lo']);
  const byMac = await nodesByMac(rig.box);
  const firsts: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await rig.inRouter(`ip neigh flush to ${probe} dev eth0; arping -c 1 -w 2 -I eth0 ${probe} || true`);
    firsts.push(byMac.get(/reply from \S+ \[([0-9A-Fa-f:]{17})\]/.exec(r)?.[1].toLowerCase() ?? '') ?? 'none');
  }
  for (const n of rig.box.nodes) await inNetns(n.netns, 'ip', ['addr', 'del', `${probe}/32`, 'dev', 'lo']);
  log(`first kernel to answer a broadcast request, 3 probes: ${firsts.join(', ')}`);
  if (new Set(firsts).size !== 1 || firsts[0] === 'none')
    throw new Error(`no single first answerer on this bridge: ${firsts.join(', ')}`);
  return firsts[0];
}

/** The one Service both peers serve: only what selects the implementation differs. */
function echoService(rig: Rig, peer: 'metallb' | 'juneau'): string {
  const select =
    peer === 'metallb'
      ? `  annotations: { metallb.io/loadBalancerIPs: "${rig.vip}" }\nspec:\n`
      : `  annotations:\n    juneau.loutres.me/load-balancer-external-network: bench-net\n    juneau.loutres.me/load-balancer-requested-ip: "${rig.vip}"\nspec:\n  loadBalancerClass: juneau.loutres.me/load-balancer\n`;
  return `apiVersion: v1
kind: Service
metadata:
  name: echo
  namespace: default
${select}  type: LoadBalancer
  externalTrafficPolicy: Local
  selector: { app: echo }
  ports: [{ name: http, port: 80, protocol: TCP, targetPort: ${ECHO_HTTP_PORT} }]
`;
}

async function waitForHttp(rig: Rig, what: string): Promise<void> {
  const t0 = Date.now();
  for (const until = Date.now() + 300_000; ; await sleep(250)) {
    const page = (await rig.inRouter(`curl -s -m 2 http://${rig.vip}/ || true`)).trim();
    if (page.startsWith(`client=${rig.routerIp} `)) break;
    if (Date.now() > until) throw new Error(`${what}: ${rig.vip} did not answer HTTP within 300 s`);
  }
  log(`${what}: the VIP answered HTTP ${((Date.now() - t0) / 1000).toFixed(1)} s after the Service was applied`);
}

/** arp_ignore/arp_announce as kube-proxy's ipvs mode sets them with `strictARP: true` (1/2) or leaves them (0/0). */
async function strictArp(rig: Rig, on: boolean): Promise<void> {
  for (const n of rig.box.nodes) {
    await inNetns(n.netns, 'sh', [
      '-c',
      `sysctl -qw net.ipv4.conf.all.arp_ignore=${on ? 1 : 0} net.ipv4.conf.all.arp_announce=${on ? 2 : 0}`,
    ]);
  }
}

interface PhaseResult {
  seed: Record<string, { failed: number; byNode: Record<string, number>; macs: number }>;
  latency: Record<string, Latency>;
  flood: Record<string, number[]>;
  cpuIdle: Record<string, number>;
  cpuFlood: Record<string, number>;
  failover: Record<string, number>;
}

async function seedReplay(rig: Rig, label: string, res: PhaseResult): Promise<Connection[]> {
  const macs = await answeringMacs(rig, rig.vip);
  const conns = await replay(rig, CONNECTIONS);
  const byNode = await tally(rig, conns);
  const failed = conns.filter((c) => !c.ok).length;
  res.seed[label] = { failed, byNode, macs: macs.length };
  log(
    `(a) ${label}: ${failed}/${CONNECTIONS} connections failed; MACs answering one arping: ${macs.length}; by the node the router cached: ${JSON.stringify(byNode)}`,
  );
  return conns;
}

/** Latency of `targets` interleaved, then FLOOD_ROUNDS floods of each, the order rotating. */
async function arpFigures(
  rig: Rig,
  targets: Record<string, string>,
  res: PhaseResult,
  cpuOf: Record<string, Record<string, number>>,
): Promise<void> {
  const names = Object.keys(targets);
  const lat = await arpLatency(
    rig.prober,
    names.map((n) => targets[n]),
    LATENCY_BATCHES,
  );
  names.forEach((n, i) => {
    res.latency[n] = lat[i];
    log(`(b) ARP latency, ${n}: ${summary(lat[i])}`);
  });
  for (let r = 0; r < FLOOD_ROUNDS; r++) {
    for (let k = 0; k < names.length; k++) {
      const n = names[(k + r) % names.length];
      let rate = 0;
      const cpu = await cpuDuring(cpuOf[n] ?? {}, async () => {
        rate = await arpFlood(rig.prober, targets[n], FLOOD_SECONDS);
      });
      (res.flood[n] ??= []).push(rate);
      for (const [c, s] of Object.entries(cpu))
        res.cpuFlood[`${c} (flood of ${n})`] = (res.cpuFlood[`${c} (flood of ${n})`] ?? 0) + s / FLOOD_ROUNDS;
      log(
        `(b) flood round ${r + 1}, ${n}: ${Math.round(rate).toLocaleString('en-US')} replies/s${
          Object.keys(cpu).length
            ? `; CPU ${Object.entries(cpu)
                .map(([c, s]) => `${c} ${s.toFixed(2)} s`)
                .join(', ')}`
            : ''
        }`,
      );
    }
  }
}

async function idleCpu(pids: Record<string, number>, res: PhaseResult): Promise<void> {
  const cpu = await cpuDuring(pids, () => sleep(IDLE_SECONDS * 1000));
  for (const [c, s] of Object.entries(cpu)) {
    res.cpuIdle[c] = s;
    log(`(d) CPU over ${IDLE_SECONDS} s idle, ${c}: ${s.toFixed(2)} s`);
  }
}

const newResult = (): PhaseResult => ({ seed: {}, latency: {}, flood: {}, cpuIdle: {}, cpuFlood: {}, failover: {} });

async function crash(
  rig: Rig,
  label: string,
  res: PhaseResult,
  kill: (node: string) => Promise<void>,
  restore: (node: string) => Promise<void>,
): Promise<void> {
  const r = await nodeCrash(rig, kill, restore);
  res.failover[label] = r.seconds;
  log(`(c) ${label}: ${r.from} crashed -> the router served by ${r.to} after ${r.seconds.toFixed(2)} s`);
}

async function failover(rig: Rig, label: string, res: PhaseResult): Promise<void> {
  const r = await backendGone(rig);
  res.failover[label] = r.seconds;
  log(`(c) ${label}: backend removed on ${r.from} -> the router served by ${r.to} after ${r.seconds.toFixed(2)} s`);
}

async function metallbPhase(rig: Rig, work: string): Promise<PhaseResult> {
  const res = newResult();
  const mlb = await startMetalLB({
    box: rig.box,
    kubectl: rig.kubectl,
    kubeconfig: rig.nodeKubeconfig,
    addresses: rig.pool,
    work,
  });
  log(
    `MetalLB ${mlb.version}: controller pid ${mlb.controller.pid}, speakers ${[...mlb.speakers].map(([n, c]) => `${n}=${c.pid}`).join(' ')}`,
  );
  try {
    await rig.kubectl(['apply', '--server-side', '-f', '-'], echoService(rig, 'metallb'));
    await waitForHttp(rig, 'MetalLB');
    await strictArp(rig, false);
    await seedReplay(rig, 'MetalLB, strictARP false', res);
    await strictArp(rig, true);
    await seedReplay(rig, 'MetalLB, strictARP true (arp_ignore=1, arp_announce=2)', res);
    const speakerPids = Object.fromEntries([...mlb.speakers].map(([n, c]) => [`speaker ${n}`, c.pid!]));
    // The kernel's own ARP: a node's address, answered by that node's kernel (no XDP on the nodes in this phase).
    const kernelNode = rig.backendNodes[0];
    const kernelIp = rig.box.nodes.find((n) => n.name === kernelNode)!.ip;
    await arpFigures(rig, { 'MetalLB speaker': rig.vip, kernel: kernelIp }, res, { 'MetalLB speaker': speakerPids });
    await idleCpu({ ...speakerPids, 'MetalLB controller': mlb.controller.pid! }, res);
    await failover(rig, 'MetalLB (strictARP true), backend unready on the answering node', res);
    await crash(
      rig,
      'MetalLB (strictARP true), node crash (speaker SIGKILLed, link cut)',
      res,
      async (node) => {
        mlb.speakers.get(node)!.kill('SIGKILL');
      },
      async (node) => {
        mlb.restartSpeaker(node);
        await rig.kubectl(['wait', '--for=condition=Ready', `node/${node}`, '--timeout=180s']);
      },
    );
  } finally {
    await strictArp(rig, false);
    await rig.kubectl(['delete', 'service', 'echo', '--wait=true']);
    await mlb.stop();
  }
  return res;
}

async function juneauPhase(rig: Rig): Promise<PhaseResult> {
  const res = newResult();
  await installJuneau(rig.kubectl);
  await rig.kubectl(
    ['apply', '--server-side', '-f', '-'],
    arpNetworkYaml('', { pool: 'bench-pool', network: 'bench-net', addresses: rig.pool }),
  );
  await rig.kubectl(['apply', '--server-side', '-f', '-'], echoService(rig, 'juneau'));
  await waitForHttp(rig, 'Juneau');
  const conns = await seedReplay(rig, 'Juneau (guard on), strictARP false', res);
  if (conns.some((c) => !c.ok))
    failures.push(
      `Juneau: ${conns.filter((c) => !c.ok).length}/${CONNECTIONS} incident-replay (OPS-1) connections failed (none may)`,
    );
  if (res.seed['Juneau (guard on), strictARP false'].macs !== 1)
    failures.push(
      `Juneau: ${res.seed['Juneau (guard on), strictARP false'].macs} MACs answered one arping for ${rig.vip} (exactly one must)`,
    );
  const agentPids = Object.fromEntries(
    rig.box.nodes.map((n) => {
      const pids = pidsInNetns(n.netns, 'juneau-agent');
      if (pids.length !== 1) throw new Error(`expected one juneau-agent on ${n.name}, found ${pids.length}`);
      return [`agent ${n.name}`, Number(pids[0])];
    }),
  );
  const kernelNode = rig.backendNodes[0];
  const kernelIp = rig.box.nodes.find((n) => n.name === kernelNode)!.ip;
  await arpFigures(rig, { 'Juneau XDP': rig.vip, 'kernel behind Juneau XDP': kernelIp }, res, {
    'Juneau XDP': agentPids,
  });
  if (res.latency['Juneau XDP'].lost > 0)
    failures.push(`Juneau: ${res.latency['Juneau XDP'].lost} paced ARP probes unanswered (none may be)`);
  // This box's controller replicas: other boxes on the machine run juneau-controller too; a box's
  // containers live under its nodes' cgroups (juneau-box-<id>-node-i).
  const controllers = pidsOf('juneau-controller', (pid) =>
    fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8').includes(`juneau-box-${rig.box.id}-`),
  );
  await idleCpu(
    { ...agentPids, ...Object.fromEntries(controllers.map((p, i) => [`Juneau controller ${i}`, Number(p)])) },
    res,
  );
  await failover(rig, 'Juneau, backend unready on the answering node', res);
  await announceOnMove(rig, true);
  await failover(rig, 'Juneau with spec.arp.announceOnMove, backend unready on the answering node', res);
  const killAgent = async (node: string) => {
    const pids = pidsInNetns(rig.box.nodes.find((n) => n.name === node)!.netns, 'juneau-agent');
    for (const pid of pids) process.kill(Number(pid), 'SIGKILL');
  };
  const agentBack = async (node: string) => {
    await rig.kubectl(['wait', '--for=condition=Ready', `node/${node}`, '--timeout=180s']);
    for (
      const until = Date.now() + 180_000;
      pidsInNetns(rig.box.nodes.find((n) => n.name === node)!.netns, 'juneau-agent').length !== 1;
      await sleep(500)
    ) {
      if (Date.now() > until) throw new Error(`the agent on ${node} did not come back within 180 s`);
    }
    await rig.kubectl([
      '-n',
      'juneau-system',
      'wait',
      '--for=condition=Ready',
      'pod',
      '-l',
      'app.kubernetes.io/name=juneau-agent',
      '--field-selector',
      `spec.nodeName=${node}`,
      '--timeout=180s',
    ]);
  };
  await crash(
    rig,
    'Juneau with spec.arp.announceOnMove, node crash (agent SIGKILLed, link cut)',
    res,
    killAgent,
    agentBack,
  );
  await announceOnMove(rig, false);
  await crash(rig, 'Juneau, node crash (agent SIGKILLed, link cut)', res, killAgent, agentBack);
  return res;
}

/** Sets the ExternalNetwork bench-net's spec.arp.announceOnMove. */
const announceOnMove = (rig: Rig, on: boolean) =>
  rig.kubectl([
    'patch',
    'externalnetwork',
    'bench-net',
    '--type=merge',
    '-p',
    JSON.stringify({ spec: { arp: { announceOnMove: on } } }),
  ]);

const failures: string[] = [];

async function main(): Promise<void> {
  const boxDir = arg('--box', '');
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-bench-peers-'));
  const dir = boxDir || path.join(work, 'cluster');
  const ownBox = !fs.existsSync(path.join(dir, 'box.json'));
  let router = '';
  try {
    if (ownBox) {
      buildUserArtifacts();
      const echo = path.join(work, 'echo.oci.tar');
      fs.writeFileSync(echo, (await buildEchoImage(REPO_ROOT)).archive);
      boxCli(dir, ['up', '--nodes', '3', '--images', `${IMAGE},${echo}`], 'inherit');
    }
    const status = boxStatus(dir, 'inherit');
    const box = status.box;
    const kubectl: Kubectl = kubectlFor(status);
    const port = new URL(status.server).port;
    const nodeKubeconfig = path.join(work, 'nodes.kubeconfig');
    fs.writeFileSync(
      nodeKubeconfig,
      fs.readFileSync(status.kubeconfigPath, 'utf8').replace(/server: \S+/, `server: https://${box.hostIp}:${port}`),
    );
    const routerIp = `${box.segment}.254`;
    // A box kept up from an earlier run still has the bridge ports' xdp_pass that addRouter attaches.
    if (!ownBox) for (const n of box.nodes) await cmd('ip', ['link', 'set', 'dev', n.hostVeth, 'xdpdrv', 'off']);
    router = `jr-${box.id}`; // addRouter's name, set first so that a failure inside it is cleaned up too
    await addRouter(box, routerIp);
    const mac = await macOf(router);
    const rig: Rig = {
      box,
      kubectl,
      nodeKubeconfig,
      router,
      routerIp,
      vip: `${box.segment}.245`,
      pool: `${box.segment}.240-${box.segment}.250`,
      prober: { router, mac, senderIp: `${box.segment}.253`, dir: work },
      backendNodes: [],
      inRouter: (script) =>
        cmd('nsenter', [`--net=/var/run/netns/${router}`, 'bash', '--norc', '-c', script], { timeoutMs: 900_000 }),
    };
    log(
      `box ${box.id}: nodes ${box.nodes.map((n) => `${n.name}=${n.ip}`).join(' ')}; VIP ${rig.vip}; router ${routerIp}; machine load ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    const first = await firstKernelToAnswer(rig);
    rig.backendNodes = box.nodes.map((n) => n.name).filter((n) => n !== first);
    await kubectl(['apply', '--server-side', '-f', '-'], echoDeployment({ nodes: rig.backendNodes }));
    await kubectl(['rollout', 'status', 'deployment/echo', '--timeout=300s']);
    log(`echo backends on ${rig.backendNodes.join(', ')}; ${first} has none`);

    // --phase metallb|juneau: one side only, to iterate on a box kept up with --box.
    const phase = arg('--phase', 'both');
    const metallb = phase === 'juneau' ? newResult() : await metallbPhase(rig, work);
    const juneau = phase === 'metallb' ? newResult() : await juneauPhase(rig);
    report(metallb, juneau);
    const third = metallb.seed['MetalLB, strictARP false'];
    if (third && third.macs < 2)
      failures.push(
        `rig: only ${third.macs} MAC answered the MetalLB VIP with strictARP false (kube-ipvs0 on every node should make every kernel answer)`,
      );
  } finally {
    if (router && fs.existsSync(`/var/run/netns/${router}`)) await cmd('ip', ['netns', 'del', router]);
    if (ownBox && fs.existsSync(path.join(dir, 'box.json'))) boxCli(dir, ['down'], 'inherit');
    if (ownBox) fs.rmSync(work, { recursive: true, force: true });
    else log(`logs in ${work}`);
  }
}

function report(m: PhaseResult, j: PhaseResult): void {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  log('\n== bench/peers: MetalLB L2 and Juneau on the same box ==');
  log('(a) incident replay (OPS-1): TCP connections failed out of 200');
  for (const [k, v] of Object.entries({ ...m.seed, ...j.seed }))
    log(`  ${k.padEnd(58)} ${String(v.failed).padStart(3)}/200   MACs answering: ${v.macs}`);
  log('(b) ARP from the router: paced latency and flood');
  const lat = { ...m.latency, ...j.latency };
  const flood = { ...m.flood, ...j.flood };
  for (const k of Object.keys(lat))
    log(
      `  ${k.padEnd(26)} ${summary(lat[k])}; median flood ${Math.round(median(flood[k])).toLocaleString('en-US')} replies/s`,
    );
  log('(d) CPU seconds');
  for (const [k, v] of Object.entries({ ...m.cpuIdle, ...j.cpuIdle }))
    log(`  idle ${IDLE_SECONDS} s, ${k}: ${v.toFixed(2)}`);
  for (const [k, v] of Object.entries({ ...m.cpuFlood, ...j.cpuFlood }))
    log(`  ${FLOOD_SECONDS} s flood, ${k}: ${v.toFixed(2)}`);
  log('(c) failover as the router sees it: seconds to the first connection served by the other backend node');
  for (const [k, v] of Object.entries({ ...m.failover, ...j.failover })) log(`  ${k.padEnd(80)} ${v.toFixed(2)} s`);
  log(
    `machine load ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
}

main().then(
  () => {
    if (failures.length > 0) {
      for (const f of failures) console.error(`FAILED: ${f}`);
      process.exit(1);
    }
  },
  (e: Error) => {
    console.error(e);
    process.exit(2);
  },
);
