/**
 * Juneau at 10,000 addresses (bench/README.md, "bench/scale"), on one throwaway real control plane
 * (test/cluster/harness.ts: etcd, kube-apiserver, kube-controller-manager with the real
 * EndpointSlice controller):
 *   1. two juneau-controller processes (the bundled binary, build/bin/juneau-controller.js, leader
 *      election on) on N LoadBalancer Services and N ElasticIPs, the leader SIGKILLed when half
 *      are Ready: time to all Ready, each replica's peak RSS, no address held twice;
 *   2. admission latency (the webhook server the controller runs) with those ARPAdvertisements present;
 *   3. the floor: N other Services and N other ElasticIPs, created once the controllers are gone,
 *      brought to Ready/Available by a client loop doing the controller's writes, nothing decided;
 *   4. (root) one node's juneau-agent with N ARPAdvertisements, XDP attached in a netns.
 *
 *   sudo npx tsx bench/scale/run.ts [--count 10000] [--requests 200] [--samples 200] [--no-agent] [--profile DIR]
 *   (--no-controller: the agent part alone; --no-floor: the controllers and admission without the floor;
 *   --heap DIR: the controllers' heap snapshots without the CPU profiles of --profile)
 *
 * Exits 1 on a correctness failure (an address held twice, an object never Ready, a map entry
 * missing); timings are printed, never judged. See bench/README.md.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { RestClient } from '../../runtime/kube/rest';
import { startCluster } from '../../test/cluster/harness';
import { CRD_MANIFEST } from '../../test/cluster/paths';
import { measureAdmission, populateAdvertisements } from './admission';
import { measureAgent, type AgentFigures } from './agent';
import { failures, log, mib, seconds, loadAverage } from './common';
import { checkAddresses, createObjects, runControllers, runFloor, setupSides, sides } from './control-plane';

const { values: flags } = parseArgs({
  options: {
    count: { type: 'string', default: '10000' },
    requests: { type: 'string', default: '200' },
    samples: { type: 'string', default: '200' },
    'no-agent': { type: 'boolean', default: false },
    'no-controller': { type: 'boolean', default: false },
    'no-floor': { type: 'boolean', default: false },
    'admission-only': { type: 'boolean', default: false },
    profile: { type: 'string' },
    heap: { type: 'string' },
  },
});
const COUNT = Number(flags.count);
const load = loadAverage;

async function main(): Promise<void> {
  if (!fs.existsSync(CRD_MANIFEST)) throw new Error(`${CRD_MANIFEST} is missing: run \`npx cdk8s synth\` first`);
  const profileDir = flags.profile && path.resolve(flags.profile);
  if (profileDir) fs.mkdirSync(profileDir, { recursive: true });
  log(`bench/scale: ${COUNT} Services + ${COUNT} ElasticIPs; ${os.cpus().length} CPUs, load average ${load()}`);
  // Each Service with externalTrafficPolicy Local takes a health-check NodePort: 2 x N need a wider range than the default 2,768.
  const cluster = await startCluster({
    crdFiles: [CRD_MANIFEST],
    log: (l) => log(`  ${l}`),
    timeoutMs: 180_000,
    extraArgs: { 'kube-apiserver': ['--service-node-port-range=20000-49999'] },
  });
  process.once('SIGINT', () => void cluster.stop().then(() => process.exit(130)));
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-bench-scale-'));
  const lines: string[] = [];
  try {
    const admin = new RestClient(cluster.kubeConfig, { requestTimeoutMs: 120_000 });
    if (flags['admission-only']) {
      // Admission alone, with N ARPAdvertisements written directly (no controllers, no floor, no agent).
      await setupSides(admin);
      const used = await populateAdvertisements(admin, COUNT);
      const adm = await measureAdmission(admin, used, Number(flags.requests));
      lines.push(
        `admission (ARPAdvertisement create, dry run) with ${adm.population} ARPAdvertisements; webhook informers synced in ${adm.syncMs} ms:`,
        '| variant | p50 ms | p99 ms | mean ms |',
        '|---|---:|---:|---:|',
      );
      for (const [name, v] of Object.entries(adm.variants))
        lines.push(`| ${name} | ${v.p50.toFixed(1)} | ${v.p99.toFixed(1)} | ${v.mean.toFixed(1)} |`);
      return;
    }
    if (!flags['no-controller']) {
      await setupSides(admin);
      let t = Date.now();
      await createObjects(admin, sides.controller, COUNT);
      log(
        `setup: ${COUNT} Services with ready EndpointSlices and ${COUNT} ElasticIPs in ${seconds(Date.now() - t)} (untimed); load ${load()}`,
      );
      const heapDir = flags.heap && path.resolve(flags.heap);
      if (heapDir) fs.mkdirSync(heapDir, { recursive: true });
      const profile = profileDir ? { dir: profileDir, cpu: true } : heapDir ? { dir: heapDir, cpu: false } : undefined;
      const run = await runControllers(admin, cluster, COUNT, logDir, profile, 3_600_000);
      log(`controllers: ${2 * COUNT} objects Ready in ${seconds(run.ms)}; load ${load()}`);
      if (run.adDuplicates.length)
        for (const d of run.adDuplicates.slice(0, 10))
          log(`FAIL: two ARPAdvertisements for one address during the run: ${d}`);
      if (run.adDuplicates.length)
        failures.push(`${run.adDuplicates.length} addresses had two ARPAdvertisements during the run`);
      const addresses = await checkAddresses(admin, COUNT);
      const adm = await measureAdmission(admin, new Set(addresses), Number(flags.requests));
      log(`admission measured; load ${load()}`);
      lines.push(
        `two controllers, leader SIGKILLed at ${seconds(run.killedAtMs)}: all Ready after ${seconds(run.ms)}, of which the Lease takeover ${seconds(run.takeoverMs)}`,
        `controller peak RSS: ${Object.entries(run.peakKiB)
          .map(([n, k]) => `${n} ${mib(k)}`)
          .join(', ')}`,
        `ARPAdvertisement duplicates seen during the run: ${run.adDuplicates.length}`,
      );
      if (!flags['no-floor']) {
        // The floor's objects are created only now, with the controllers gone, so the controllers
        // never met (nor cached) them; the controllers' objects stay, so the API server holds at
        // least as much during the floor as during the controllers' run.
        t = Date.now();
        await createObjects(admin, sides.floor, COUNT);
        log(
          `setup: the floor's ${COUNT} Services and ${COUNT} ElasticIPs in ${seconds(Date.now() - t)} (untimed); load ${load()}`,
        );
        const floorMs = await runFloor(admin, cluster, COUNT);
        log(`floor: ${2 * COUNT} objects Ready in ${seconds(floorMs)}; load ${load()}`);
        const working = run.ms - run.takeoverMs;
        lines.push(
          '',
          `| ${COUNT} Services + ${COUNT} ElasticIPs -> all Ready | time | / floor |`,
          '|---|---:|---:|',
          `| floor (client loop, 4 + 4 in flight) | ${seconds(floorMs)} | 1.00 |`,
          `| two controllers, leader SIGKILLed at ${seconds(run.killedAtMs)} | ${seconds(run.ms)} | ${(run.ms / floorMs).toFixed(2)} |`,
          `| ... less the Lease takeover (${seconds(run.takeoverMs)}) | ${seconds(working)} | ${(working / floorMs).toFixed(2)} |`,
        );
      }
      lines.push(
        '',
        `admission (ARPAdvertisement create, dry run) with ${adm.population} ARPAdvertisements; webhook informers synced in ${adm.syncMs} ms:`,
        '| variant | p50 ms | p99 ms | mean ms |',
        '|---|---:|---:|---:|',
      );
      for (const [name, v] of Object.entries(adm.variants))
        lines.push(`| ${name} | ${v.p50.toFixed(1)} | ${v.p99.toFixed(1)} | ${v.mean.toFixed(1)} |`);
    }
    if (!flags['no-agent']) {
      if (process.getuid?.() !== 0)
        throw new Error('the agent part needs root (network namespaces, XDP); run with sudo or pass --no-agent');
      const a: AgentFigures = await measureAgent(admin, cluster, COUNT, Number(flags.samples), profileDir);
      lines.push(
        '',
        `agent with ${a.count} ARPAdvertisements (${a.samples} creates and deletes):`,
        `  cold start to ready (empty pins): ${seconds(a.coldReadyMs)}`,
        `  create -> map entry: p50 ${a.createP50.toFixed(1)} ms, p99 ${a.createP99.toFixed(1)} ms (the API write alone: p50 ${a.apiWriteP50.toFixed(1)} ms)`,
        `  delete -> entry gone: p50 ${a.deleteP50.toFixed(1)} ms, p99 ${a.deleteP99.toFixed(1)} ms`,
        `  RSS ${mib(a.rssKiB)}, peak ${mib(a.peakKiB)}`,
        `  restart (SIGKILL, start) to ready re-adopting ${a.entriesAfterRestart} pinned entries: ${seconds(a.readoptMs)}`,
      );
    }
  } finally {
    log(`\ncontroller logs in ${logDir}${profileDir ? `; profiles in ${profileDir}` : ''}`);
    await cluster.stop();
    // What was measured is printed even when a later part failed.
    log('');
    for (const l of lines) log(l);
  }
  log(`\nload average at the end: ${load()}`);
  if (failures.length) {
    log(`\n${failures.length} correctness failure(s):\n${failures.map((f) => `  - ${f}`).join('\n')}`);
    process.exit(1);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench/scale: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
