/**
 * The node half of bench/scale: the bundled juneau-agent in a node network namespace of the netns
 * rig (test/netns/rig.ts), XDP attached (generic mode) on its eth0, against the run's control
 * plane (ApiBridge carries the API server into the namespace), with N ARPAdvertisements for its
 * node. It measures the cold start to `ready` with N addresses, the time from an ARPAdvertisement
 * change (create or delete) to the entry in the pinned map (polled by single lookups), the agent's
 * RSS, and the restart: SIGKILL, start again, time to `ready` re-adopting the N pinned entries.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { API_VERSION } from '../../api';
import { ArpMaps, PIN_SUBDIR, removePins } from '../../runtime/agent/bpf';
import { JuneauResources, Resources } from '../../runtime/kube/resources';
import type { RestClient } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { ApiBridge } from '../../test/cluster/agent-harness';
import { type Cluster } from '../../test/cluster/harness';
import { REPO_ROOT } from '../../test/cluster/paths';
import { Rig } from '../../test/netns/rig';
import { fail, forEachConcurrent, ipv4, log, memoryOf, percentile, seconds, waitUntil } from './common';
import { createArpNetwork } from '../../test/cluster/arp-network';

const AGENT_BIN = path.join(REPO_ROOT, 'build', 'bin', 'juneau-agent.js');
const CPU_PROF_PRELOAD = path.join(REPO_ROOT, 'bench', 'scale', 'cpu-prof-after-ready.cjs');
const NETWORK = 'agent-net';
/** A /17 on eth0 next to the rig's /24, so N addresses are on the interface's subnet (EN-12). */
const BASE = '10.112.0.0';

export interface AgentFigures {
  readonly count: number;
  readonly coldReadyMs: number;
  readonly createP50: number;
  readonly createP99: number;
  readonly deleteP50: number;
  readonly deleteP99: number;
  readonly apiWriteP50: number;
  readonly samples: number;
  readonly rssKiB: number;
  readonly peakKiB: number;
  readonly readoptMs: number;
  readonly entriesAfterRestart: number;
}

class Agent {
  private child: ChildProcess | undefined;
  private out = '';
  private exited: Promise<unknown> = Promise.resolve();
  constructor(
    private readonly netns: string,
    private readonly args: string[],
    private readonly nodeFlags: string[],
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}
  get pid(): number {
    return this.child!.pid!;
  }
  start(): void {
    this.out = '';
    // nsenter execs node: the pid is the agent's own (its /proc/status, its signals).
    this.child = spawn(
      'nsenter',
      [`--net=/var/run/netns/${this.netns}`, process.execPath, ...this.nodeFlags, AGENT_BIN, ...this.args],
      { stdio: ['ignore', 'ignore', 'pipe'], env: this.env },
    );
    this.child.stderr!.on('data', (d: Buffer) => (this.out = (this.out + d.toString()).slice(-200_000)));
    const child = this.child;
    this.exited = new Promise((resolve) => child.once('exit', resolve));
  }
  /** Resolves when the agent logs `ready` (its informers synced and the maps reconciled). */
  ready(timeoutMs: number): Promise<true> {
    return waitUntil(
      'the agent to log ready',
      timeoutMs,
      () => {
        if (this.child?.exitCode !== null) throw new Error(`agent exited:\n${this.out.slice(-3000)}`);
        return this.out.includes('"msg":"ready');
      },
      20,
    );
  }
  async stop(signal: NodeJS.Signals): Promise<void> {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    await this.exited;
  }
}

export async function measureAgent(
  rest: RestClient,
  cluster: Cluster,
  count: number,
  samples: number,
  profileDir: string | undefined,
): Promise<AgentFigures> {
  const rig = new Rig(1);
  const node = `scale-agent-${rig.id}`;
  const pinDir = path.join(rig.pinDir(0), PIN_SUBDIR);
  let bridge: ApiBridge | undefined;
  let agent: Agent | undefined;
  let maps: ArpMaps | undefined;
  try {
    await rig.setup();
    const ns = rig.node(0);
    await rig.in(ns, 'ip', 'addr', 'add', `${ipv4(BASE, 1)}/17`, 'dev', 'eth0');
    await rest.create(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: node } });
    await rest.patch(
      Resources.nodes,
      undefined,
      node,
      'merge',
      { status: { addresses: [{ type: 'InternalIP', address: rig.nodeIp(0) }] } },
      { subresource: 'status' },
    );
    await createArpNetwork(rest, { pool: NETWORK, network: NETWORK, addresses: [`${BASE}/17`] });
    const ad = (i: number) =>
      ({
        apiVersion: API_VERSION,
        kind: 'ARPAdvertisement',
        metadata: { name: `agent-${i}` },
        spec: { externalNetwork: NETWORK, address: ipv4(BASE, 16 + i), nodeName: node },
      }) as unknown as KubeObject;
    const t = Date.now();
    await forEachConcurrent(count, 32, async (i) => void (await rest.create(JuneauResources.arpAdvertisements, ad(i))));
    log(`  ${count} ARPAdvertisements for node ${node} in ${seconds(Date.now() - t)} (untimed)`);

    bridge = new ApiBridge(cluster.ports.apiserver);
    await bridge.start(ns);
    // Not --cpu-prof for the agent: the profiler's SIGPROF interrupts the kernel's verifier, which
    // then fails the program load with EAGAIN (seen three times here); CPU_PROF_PRELOAD starts the
    // profiler once the agent is ready, and writes it on SIGHUP.
    const nodeFlags = profileDir
      ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${profileDir}`, `--require=${CPU_PROF_PRELOAD}`]
      : [];
    const env = profileDir ? { ...process.env, JUNEAU_CPU_PROF_DIR: profileDir } : process.env;
    const args = [
      '--node-name',
      node,
      '--kubeconfig',
      cluster.kubeconfigPath,
      `--bpffs=${rig.pinDir(0)}`,
      '--xdp-mode=generic',
      '--lease-namespace=default',
      '--metrics-addr=0',
      '--health-addr=0',
      '--answer-expiry=120s',
      '--lease-duration=120s',
      '--log-level=info',
    ];
    agent = new Agent(ns, args, nodeFlags, env);
    const t0 = Date.now();
    agent.start();
    await agent.ready(600_000);
    const coldReadyMs = Date.now() - t0;
    maps = ArpMaps.openPinned(pinDir);
    const entries = maps.addressKeys().length;
    if (entries !== count) fail(`agent map holds ${entries} entries after ready, not ${count}`);
    log(`  agent ready with ${entries} entries after ${seconds(coldReadyMs)} (cold: empty pins)`);

    // Change -> map: create ARPAdvertisement count+k, wait for its entry; delete it, wait for the entry to go.
    const create: number[] = [];
    const remove: number[] = [];
    const apiWrite: number[] = [];
    for (let k = 0; k < samples; k++) {
      const i = count + k;
      const address = ipv4(BASE, 16 + i);
      const t1 = process.hrtime.bigint();
      const posted = rest
        .create(JuneauResources.arpAdvertisements, ad(i))
        .then(() => apiWrite.push(Number(process.hrtime.bigint() - t1) / 1e6));
      await waitUntil(`${address} in the map`, 30_000, () => maps!.lookupAddress(address) !== undefined, 0);
      create.push(Number(process.hrtime.bigint() - t1) / 1e6);
      await posted;
      const t2 = process.hrtime.bigint();
      const deleted = rest.delete(JuneauResources.arpAdvertisements, undefined, `agent-${i}`);
      await waitUntil(`${address} out of the map`, 30_000, () => maps!.lookupAddress(address) === undefined, 0);
      remove.push(Number(process.hrtime.bigint() - t2) / 1e6);
      await deleted;
    }
    const mem = memoryOf(agent.pid) ?? { rss: 0, hwm: 0 };
    if (profileDir) {
      const profile = path.join(profileDir, `agent-${agent.pid}.cpuprofile`);
      process.kill(agent.pid, 'SIGHUP');
      await waitUntil('the agent CPU profile', 60_000, () => fs.existsSync(profile), 100);
      log(`  agent CPU profile (from ready to the last sample): ${profile}`);
      process.kill(agent.pid, 'SIGUSR2');
    }

    // Restart: SIGKILL (the pins stay and keep answering), start again, time to ready.
    await agent.stop('SIGKILL');
    const t3 = Date.now();
    agent.start();
    await agent.ready(600_000);
    const readoptMs = Date.now() - t3;
    const entriesAfterRestart = maps.addressKeys().length;
    if (entriesAfterRestart !== count)
      fail(`agent map holds ${entriesAfterRestart} entries after the restart, not ${count}`);
    await agent.stop('SIGTERM');
    return {
      count,
      coldReadyMs,
      createP50: percentile(create, 50),
      createP99: percentile(create, 99),
      deleteP50: percentile(remove, 50),
      deleteP99: percentile(remove, 99),
      apiWriteP50: percentile(apiWrite, 50),
      samples,
      rssKiB: mem.rss,
      peakKiB: mem.hwm,
      readoptMs,
      entriesAfterRestart,
    };
  } finally {
    await agent?.stop('SIGKILL');
    maps?.close();
    await bridge?.stop();
    try {
      if (fs.existsSync(pinDir)) removePins(pinDir);
    } finally {
      await rig.destroy();
    }
  }
}
