/**
 * bench/natgw: the NATGateway data path (runtime/agent/ngw/, as the agent builds it) against the
 * same traffic masqueraded by plain nftables on one node, side by side in one run (bench/README.md,
 * "bench/natgw").
 *
 * Rig: test/netns/ngw-rig.ts (three nodes on one segment, a router, a server beyond it). Pod (1,2)
 * is selected by a NATGateway whose gateway is node 2: its packets cross a VXLAN tunnel from node 1
 * to node 2 and leave translated to the gateway address. Pod (1,3) is not selected; node 1
 * masquerades it itself (`nft ... masquerade`, the floor). Same pod node, same server.
 *
 * Per round (the order alternating): new UDP flows per second (each a new socket: new source and
 * destination ports), packets per second of one UDP flood (64-byte datagrams, counted at the
 * server), each variant in turn; then, once, conntrack memory per 100,000 flows (the nf_conntrack
 * slab's growth while the flows' entries live, on every node).
 *
 *   sudo npx tsx bench/natgw/run.ts [--rounds 3] [--flows 20000] [--seconds 3]
 *
 * Needs root, python3, nft and conntrack. Prints every round and the medians; judges nothing.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { NGW_PORT_RANGE } from '../../runtime/agent/ngw/inputs';
import { CLUSTER_RANGES, GATEWAY_ADDRESS, NgwRig, SERVER, nodeAddress, podAddress } from '../../test/netns/ngw-rig';
import { startTool } from '../../test/netns/ns-tools';
import { log, percentile, loadAverage } from '../scale/common';

const { values: flags } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    flows: { type: 'string', default: '20000' },
    seconds: { type: 'string', default: '3' },
  },
});
const ROUNDS = Number(flags.rounds);
const FLOWS = Number(flags.flows);
const SECONDS = Number(flags.seconds);
const TRAFFIC = path.join(__dirname, 'traffic.py');
const SELECTED: [number, number] = [1, 2];
const FLOOR: [number, number] = [1, 3];
const VARIANTS = { natgw: SELECTED, floor: FLOOR } as const;
type Variant = keyof typeof VARIANTS;

const load = loadAverage;

async function main(): Promise<void> {
  log(`bench/natgw: ${ROUNDS} rounds, ${FLOWS} flows, ${SECONDS} s floods; ${os.cpus().length} CPUs, load ${load()}`);
  const rig = new NgwRig();
  const children = new Set<import('node:child_process').ChildProcess>();
  const lines: string[] = [];
  try {
    await rig.setup([SELECTED, FLOOR]);
    await rig.answer(GATEWAY_ADDRESS, 2);
    for (const k of [1, 2, 3])
      rig.apply(k, {
        gateways: [
          {
            name: 'bench/egress',
            address: GATEWAY_ADDRESS,
            gatewayNodeAddress: nodeAddress(2),
            portRange: NGW_PORT_RANGE,
            pods: [{ address: podAddress(...SELECTED), nodeAddress: nodeAddress(1) }],
          },
        ],
        clusterRanges: CLUSTER_RANGES,
        elasticIPPods: [],
      });
    // The floor: node 1 masquerades its unselected pod to its own address, as a CNI would.
    await rig.in(
      rig.node(1),
      'nft',
      `add table ip bench_floor; add chain ip bench_floor post { type nat hook postrouting priority 100; }; add rule ip bench_floor post ip saddr ${podAddress(...FLOOR)} oifname "eth0" masquerade`,
    );
    const nodes = [1, 2, 3].map((k) => rig.node(k));
    const flush = async () => {
      for (const ns of nodes) await rig.in(ns, 'conntrack', '-F').catch(() => '');
    };
    const count = async () => {
      let total = 0;
      for (const ns of nodes)
        total += Number((await rig.in(ns, 'cat', '/proc/sys/net/netfilter/nf_conntrack_count')).trim());
      return total;
    };
    /** The entries on every node once two reads 200 ms apart agree (the last packets are past the hooks). */
    const entries = async () => {
      let last = await count();
      for (;;) {
        await new Promise((r) => setTimeout(r, 200));
        const now = await count();
        if (now === last) return now;
        last = now;
      }
    };
    const traffic = <T>(ns: string, ...args: string[]) =>
      rig.in(ns, 'python3', TRAFFIC, ...args).then((o) => JSON.parse(o.trim().split('\n').pop()!) as T);
    // Every neighbour on both paths resolved first (a first packet waits for ARP; the rest would be dropped).
    for (const v of ['natgw', 'floor'] as const) await traffic(rig.pod(...VARIANTS[v]), 'flows', SERVER, '9000', '20');
    await new Promise((r) => setTimeout(r, 500));

    // Both paths work, and each leaves from the address it should (a TCP banner names the source).
    const fps: Record<Variant, number[]> = { natgw: [], floor: [] };
    const pps: Record<Variant, number[]> = { natgw: [], floor: [] };
    const delivered: Record<Variant, number[]> = { natgw: [], floor: [] };
    const perFlow: Record<Variant, number[]> = { natgw: [], floor: [] };
    let port = 20000;
    for (let round = 0; round < ROUNDS; round++) {
      const order: Variant[] = round % 2 === 0 ? ['natgw', 'floor'] : ['floor', 'natgw'];
      for (const v of order) {
        const pod = rig.pod(...VARIANTS[v]);
        await flush();
        const before = await entries();
        const f = await traffic<{ sent: number; seconds: number }>(pod, 'flows', SERVER, '10000', String(FLOWS));
        const made = (await entries()) - before;
        // The sender's rate: each flow's path (veths, tunnel, both nodes' hooks) runs in its context.
        fps[v].push(f.sent / f.seconds);
        perFlow[v].push(made / f.sent);
        log(
          `round ${round + 1} ${v}: ${f.sent} new flows in ${f.seconds.toFixed(2)} s (${Math.round(f.sent / f.seconds)}/s), ${made} conntrack entries on the nodes; load ${load()}`,
        );
        await flush();
        const p = String(port++);
        const counter = await startTool<{ received: number }>(children, rig.server, TRAFFIC, 'listening', [
          'count',
          p,
          String(SECONDS + 1.5),
        ]);
        const sent = await traffic<{ sent: number }>(pod, 'flood', SERVER, p, String(SECONDS));
        const { received } = await counter.result;
        pps[v].push(received / SECONDS);
        delivered[v].push(received / sent.sent);
        log(
          `round ${round + 1} ${v}: flood ${sent.sent} sent, ${received} received (${Math.round(received / SECONDS)}/s, ${((100 * received) / sent.sent).toFixed(1)} % delivered)`,
        );
      }
    }
    // Conntrack memory: 100,000 flows' entries alive at once, the slab read before and after.
    const slab = () => {
      const line = fs
        .readFileSync('/proc/slabinfo', 'utf8')
        .split('\n')
        .find((l) => l.startsWith('nf_conntrack '));
      const [, active, , size] = line!.split(/\s+/);
      return Number(active) * Number(size);
    };
    const memory: Record<Variant, { bytes: number; entries: number }> = {
      natgw: { bytes: 0, entries: 0 },
      floor: { bytes: 0, entries: 0 },
    };
    for (const v of ['natgw', 'floor'] as const) {
      await flush();
      const [b0, e0] = [slab(), await entries()];
      await traffic(rig.pod(...VARIANTS[v]), 'flows', SERVER, '10000', '100000');
      memory[v] = { bytes: slab() - b0, entries: (await entries()) - e0 };
      log(
        `${v}: 100,000 flows -> ${memory[v].entries} conntrack entries, nf_conntrack slab +${(memory[v].bytes / 1024 / 1024).toFixed(1)} MiB`,
      );
    }
    await flush();
    const median = (x: number[]) => percentile(x, 50);
    const ratio = (a: number[], b: number[]) => (median(a) / median(b)).toFixed(2);
    lines.push(
      `bench/natgw: ${ROUNDS} rounds; load at the end ${load()}`,
      '',
      '| per round | natgw (tunnel + gateway SNAT) | floor (node masquerade) | natgw / floor |',
      '|---|---|---|---:|',
      `| new flows/s | ${fps.natgw.map(Math.round).join(', ')} | ${fps.floor.map(Math.round).join(', ')} | **${ratio(fps.natgw, fps.floor)}x** |`,
      `| packets/s received (64-byte UDP) | ${pps.natgw.map(Math.round).join(', ')} | ${pps.floor.map(Math.round).join(', ')} | **${ratio(pps.natgw, pps.floor)}x** |`,
      `| conntrack entries per new flow (all nodes) | ${perFlow.natgw.map((x) => x.toFixed(2)).join(', ')} | ${perFlow.floor.map((x) => x.toFixed(2)).join(', ')} | |`,
      `| delivered of sent | ${delivered.natgw.map((d) => `${(100 * d).toFixed(1)} %`).join(', ')} | ${delivered.floor.map((d) => `${(100 * d).toFixed(1)} %`).join(', ')} | |`,
      `| conntrack per 100,000 flows (all nodes) | ${memory.natgw.entries} entries, ${(memory.natgw.bytes / 1024 / 1024).toFixed(1)} MiB | ${memory.floor.entries} entries, ${(memory.floor.bytes / 1024 / 1024).toFixed(1)} MiB | |`,
    );
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await rig.destroy();
    for (const line of lines) log(line);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(`bench/natgw failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
