// Two juneau-controller *processes* (the bundled binary, as a Deployment runs it) at once against one
// API server, 300 LoadBalancer Services created concurrently with ready Local backends: every VIP
// distinct (EIP-3, ALLOC-1), one leader by the Lease, never two ARPAdvertisements for one address
// (ARP-4); the leader is SIGKILLed mid-run and the standby, after the Lease expires, finishes the
// work and keeps every node choice the old leader made (SLB-7: rendezvous is a pure function of the
// VIP and the candidate nodes). Backends are 9 Pods on 6 Nodes whose status the test sets (no
// kubelet); each Service selects one of three groups of 3 Pods, so it has 3 candidate nodes and the
// real EndpointSlice controller makes one slice per Service.
import { advertisementName } from '../../runtime/controller/arp/names';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type ARPAdvertisement, type AllocationClaim, type ServiceLoadBalancer } from '../../api';
import { RestClient, deleteIgnoringNotFound, isNotFound } from '../../runtime/kube/rest';
import { JuneauResources, Resources, type ResourceType } from '../../runtime/kube/resources';
import type { KubeObject } from '../../runtime/kube/types';
import { OWNER_LABELS } from '../../runtime/controller/resources';
import { highestRandomWeightNode } from '../../runtime/controller/arp/rendezvous';
import {
  createLoadBalancerService,
  createNamespace,
  deleteArpNetwork,
  deleteNamespace,
  deleteNodes,
  createRunningPod,
  ensureNode,
  testKubeConfig,
  waitFor,
  waitForMatch,
  createArpNetwork,
} from './fixture';
import { CONTROLLER_BIN, spawnController, type ControllerProcess } from './controller-process';

const REPO = path.resolve(__dirname, '..', '..');

const SERVICES = 300;
/** The leader is killed once this many Services are Ready (well before all of them are). */
const KILL_AT_READY = 40;
const suffix = Math.random().toString(36).slice(2, 7);
const POOL = `scale-pool-${suffix}`;
const NET = `scale-net-${suffix}`;
/** 512 addresses for 300 Services; no other test file uses 198.18.130.0/23. */
const POOL_CIDR = '198.18.130.0/23';
const LEASE_NAMESPACE = 'default';
const LEASE = `juneau-scale-${suffix}`;
const nodes = [1, 2, 3, 4, 5, 6].map((i) => `scale-${suffix}-n${i}`);
/** Three backend groups, each with one ready Pod on each of 3 nodes (overlapping sets). */
const groups = [
  [nodes[0], nodes[1], nodes[2]],
  [nodes[2], nodes[3], nodes[4]],
  [nodes[4], nodes[5], nodes[0]],
];
const groupOf = (i: number) => i % groups.length;

type Slb = ServiceLoadBalancer & KubeObject;
type Ad = ARPAdvertisement & KubeObject;
type Claim = AllocationClaim & KubeObject;
type Lease = KubeObject & { spec?: { holderIdentity?: string; leaseTransitions?: number } };
type Event = KubeObject & {
  reason?: string;
  reportingController?: string;
  reportingInstance?: string;
  regarding?: { name?: string };
};

const rest = new RestClient(testKubeConfig());
const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'juneau-scale-'));
let namespace = '';

type Replica = ControllerProcess;
const replicas: Replica[] = [];

function startReplica(podName: string): Replica {
  const replica = spawnController({ podName, logDir, leaseNamespace: LEASE_NAMESPACE, lease: LEASE });
  replicas.push(replica);
  return replica;
}

async function stopReplica(r: Replica, signal: NodeJS.Signals): Promise<number | string> {
  if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill(signal);
  const timer = setTimeout(() => r.child.kill('SIGKILL'), 10_000);
  const result = await r.exited;
  clearTimeout(timer);
  return result;
}

function logTails(): string {
  return replicas
    .map((r) => {
      let text = '(no log)';
      try {
        text = fs.readFileSync(r.logFile, 'utf8').trim().split('\n').slice(-15).join('\n');
      } catch {
        /* none */
      }
      return `--- ${r.podName} (${r.logFile}) ---\n${text}`;
    })
    .join('\n');
}

async function listAs<T>(type: ResourceType, options: Parameters<RestClient['list']>[1] = {}): Promise<T[]> {
  return (await rest.list<KubeObject>(type, options)).items as unknown as T[];
}
const listSlbs = () => listAs<Slb>(JuneauResources.serviceLoadBalancers, { namespace });
/** The ARPAdvertisements the controller keeps for this namespace's Services. */
const listAds = () =>
  listAs<Ad>(JuneauResources.arpAdvertisements, { labelSelector: `${OWNER_LABELS.namespace}=${namespace}` });
const listClaims = async () =>
  (await listAs<Claim>(JuneauResources.allocationClaims)).filter(
    (c) => c.spec.pool.kind === 'AddressPool' && c.spec.pool.name === POOL,
  );
const leaseHolder = async () => {
  try {
    return (await rest.get<Lease>(Resources.leases, LEASE_NAMESPACE, LEASE)).spec?.holderIdentity || undefined;
  } catch (err) {
    if (isNotFound(err)) return undefined; // no Lease yet; any other error is the API server's and fails the wait that asked
    throw err;
  }
};
const isReady = (s: Slb) => s.status?.phase === 'Ready';

function duplicates(values: readonly string[]): string[] {
  const seen = new Set<string>();
  return [...new Set(values.filter((v) => (seen.has(v) ? true : (seen.add(v), false))))];
}

function inPool(ip: string): boolean {
  const [a, b, c] = ip.split('.').map(Number);
  return a === 198 && b === 18 && (c === 130 || c === 131);
}

beforeAll(async () => {
  if (!fs.existsSync(CONTROLLER_BIN))
    execFileSync(process.execPath, [path.join(REPO, 'scripts', 'bundle.mjs')], { cwd: REPO, stdio: 'inherit' });
  await Promise.all(nodes.map((n, i) => ensureNode(n, { internalIP: `192.0.2.${161 + i}` })));
  await createArpNetwork(rest, { pool: POOL, network: NET, addresses: [POOL_CIDR] });
  namespace = await createNamespace('controller-scale');
  // Ready backends before any Service exists, so each Service's first EndpointSlice already lists
  // all three of its nodes (no choice is made from a partial candidate set).
  await Promise.all(
    groups.flatMap((members, g) =>
      members.map((node, j) =>
        createRunningPod({
          namespace,
          name: `g${g}-${j}`,
          labels: { group: `g${g}` },
          nodeName: node,
          podIP: `10.130.${g}.${10 + j}`,
          ports: [{ name: 'http', containerPort: 8080 }],
        }),
      ),
    ),
  );
}, 120_000);

afterAll(async () => {
  // The Services go with the namespace; a running controller finalizes their ServiceLoadBalancers
  // (ARPAdvertisement and claim released), so wait for that before stopping the replicas.
  if (namespace) {
    await deleteNamespace(namespace);
    if (replicas.some((r) => r.child.exitCode === null && r.child.signalCode === null)) {
      await waitFor(async () => (await listAds()).length === 0 && (await listClaims()).length === 0, {
        what: 'ARPAdvertisements and claims released',
        timeoutMs: 90_000,
      }).catch((err: unknown) => process.stderr.write(`controller-scale cleanup: ${String(err)}\n`));
    }
  }
  await Promise.all(replicas.map((r) => stopReplica(r, 'SIGTERM')));
  await deleteArpNetwork(rest, { pool: POOL, network: NET });
  await deleteIgnoringNotFound(rest, Resources.leases, LEASE_NAMESPACE, LEASE);
  await deleteNodes(nodes);
  fs.rmSync(logDir, { recursive: true, force: true });
}, 150_000);

describe('two juneau-controller processes, 300 Services', () => {
  it(`EIP-3 / ALLOC-1 / ARP-4 / SLB-7: ${SERVICES} Services created concurrently -> VIPs distinct, one leader, no duplicate ARPAdvertisement; leader SIGKILLed mid-run -> the standby keeps the same node choices and all reach Ready`, async () => {
    try {
      const a = startReplica('scale-a');
      const b = startReplica('scale-b');
      const holderAtStart = await waitFor(leaseHolder, { what: 'a leader', timeoutMs: 30_000 });
      const leader = [a, b].find((r) => holderAtStart.startsWith(`${r.podName}_`));
      expect(leader).toBeDefined();
      const standby = leader === a ? b : a;

      // Sample the run: one holder in the Lease, never two ARPAdvertisements for one address.
      const holdersSeen = new Set<string>();
      const adDuplicatesSeen = new Set<string>();
      const sample = async () => {
        const [slbs, ads, holder] = await Promise.all([listSlbs(), listAds(), leaseHolder()]);
        if (holder) holdersSeen.add(holder);
        duplicates(ads.map((d) => d.spec.address)).forEach((d) => adDuplicatesSeen.add(d));
        return { slbs, ads, holder };
      };

      const t0 = Date.now();
      const created = Promise.all(
        Array.from({ length: SERVICES }, (_, i) =>
          createLoadBalancerService(namespace, `s${i}`, { network: NET, selector: { group: `g${groupOf(i)}` } }),
        ),
      );

      // Mid-run: once some Services are Ready, record their node choices and SIGKILL the leader.
      // Watched while the creates are still in flight, so the kill cannot come after the last one.
      const beforeKillP = waitForMatch(
        () => sample(),
        (s) => s.slbs.filter(isReady).length >= KILL_AT_READY,
        { what: `${KILL_AT_READY} Services Ready under the first leader`, timeoutMs: 120_000, intervalMs: 50 },
      );
      const [beforeKill] = await Promise.all([beforeKillP, created]);
      expect(standby.child.exitCode).toBeNull(); // a candidate, waiting
      expect(await stopReplica(leader!, 'SIGKILL')).toBe('SIGKILL');
      const killedAt = Date.now();
      const choicesBeforeKill = new Map(
        beforeKill.slbs
          .filter(isReady)
          .map((s) => [s.metadata.name!, { vip: s.status!.vip!, node: s.status!.arpAnnouncingNode! }]),
      );
      const notReadyAtKill = SERVICES - choicesBeforeKill.size;
      expect(beforeKill.holder).toBe(holderAtStart);

      // The standby takes the Lease once it expires (15 s, the binary's fixed leaseDuration).
      const newHolder = await waitFor(
        async () => {
          const h = (await sample()).holder;
          return h && h !== holderAtStart ? h : undefined;
        },
        { what: 'the standby to take the Lease', timeoutMs: 40_000, intervalMs: 250 },
      );
      const takeoverMs = Date.now() - killedAt;
      expect(newHolder.startsWith(`${standby.podName}_`)).toBe(true);

      const settled = await waitFor(
        async () => {
          const s = await sample();
          if (s.slbs.length !== SERVICES || !s.slbs.every(isReady) || s.ads.length !== SERVICES) return undefined;
          return s;
        },
        { what: `all ${SERVICES} Services Ready under the new leader`, timeoutMs: 120_000, intervalMs: 250 },
      );
      const totalMs = Date.now() - t0;

      // One leader: the Lease only ever named the first leader, then the standby.
      expect([...holdersSeen].sort()).toEqual([holderAtStart, newHolder].sort());
      // ...and only the leader acted: before the kill, no Event came from the standby.
      const events = await listAs<Event>(Resources.events, { namespace });
      const fromStandbyBeforeKill = events.filter(
        (e) =>
          e.reportingInstance?.startsWith(`${standby.podName}_`) &&
          Date.parse(e.metadata?.creationTimestamp ?? '') < killedAt - 1_000,
      );
      expect(fromStandbyBeforeKill.map((e) => `${e.reason} ${e.regarding?.name}`)).toEqual([]);
      expect(events.some((e) => e.reportingInstance === holderAtStart)).toBe(true);

      // EIP-3 / ALLOC-1: every VIP distinct, inside the pool, one claim each, held by its SLB.
      const { slbs, ads } = settled;
      const vips = slbs.map((s) => s.status!.vip!);
      expect(vips.every(inPool)).toBe(true);
      expect(duplicates(vips)).toEqual([]);
      const claims = await listClaims();
      expect(claims).toHaveLength(SERVICES);
      for (const s of slbs)
        expect(claims.find((c) => c.spec.value === s.status!.vip)?.spec.holder).toMatchObject({
          kind: 'ServiceLoadBalancer',
          namespace,
          name: s.metadata.name,
          uid: s.metadata.uid,
        });

      // ARP-4: never two ARPAdvertisements for one address, during the run or after it (cluster-wide).
      expect([...adDuplicatesSeen]).toEqual([]);
      const allAds = await listAs<Ad>(JuneauResources.arpAdvertisements);
      expect(duplicates(allAds.map((d) => d.spec.address))).toEqual([]);

      // SLB-6/7: one ARPAdvertisement per Service, on its arpAnnouncingNode, and that node is the
      // rendezvous choice among the Service's 3 ready Local nodes, whichever leader made it.
      const adByName = new Map(ads.map((d) => [d.metadata.name!, d]));
      const mismatched: string[] = [];
      for (const s of slbs) {
        const i = Number(s.metadata.name!.slice(1));
        const ad = adByName.get(
          advertisementName({ kind: 'ServiceLoadBalancer', namespace, name: s.metadata.name ?? '' }),
        );
        expect([...(s.status!.advertisingNodes ?? [])].sort()).toEqual([...groups[groupOf(i)]].sort());
        expect(ad?.spec).toMatchObject({
          address: s.status!.vip,
          nodeName: s.status!.arpAnnouncingNode,
          externalNetwork: NET,
        });
        if (s.status!.arpAnnouncingNode !== highestRandomWeightNode(s.status!.vip!, groups[groupOf(i)]))
          mismatched.push(s.metadata.name!);
      }
      expect(mismatched).toEqual([]);
      expect(new Set(slbs.map((s) => s.status!.arpAnnouncingNode)).size).toBe(nodes.length); // spread over every node

      // SLB-7: the new leader kept every choice the old one had made (same VIP, same node).
      const changed = slbs.filter((s) => {
        const before = choicesBeforeKill.get(s.metadata.name!);
        return before && (before.vip !== s.status!.vip || before.node !== s.status!.arpAnnouncingNode);
      });
      expect(changed.map((s) => s.metadata.name)).toEqual([]);
      // The kill was mid-run: the new leader had Services to finish.
      expect(notReadyAtKill).toBeGreaterThan(0);
      expect(events.some((e) => e.reportingInstance === newHolder && e.reason === 'Advertised')).toBe(true);
      // No VIP ever moved (SLB-7): every Service kept 3 ready nodes the whole time.
      expect(events.filter((e) => e.reason === 'AnnouncingNodeChanged').map((e) => e.regarding?.name)).toEqual([]);

      process.stderr.write(
        `controller-scale: ${SERVICES} Services Ready in ${(totalMs / 1000).toFixed(1)} s; leader killed with ${choicesBeforeKill.size} Ready, ` +
          `${notReadyAtKill} not; standby leading after ${(takeoverMs / 1000).toFixed(1)} s\n`,
      );
    } catch (err) {
      if (err instanceof Error) err.message += `\n${logTails()}`;
      throw err;
    }
  }, 300_000);
});
