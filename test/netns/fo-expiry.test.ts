// FO-2 on real XDP: an interface's answers expire when its heartbeat in juneau_config is older
// than the configured expiry, and a restart (a new loader process adopting the pins, as a
// restarted agent does) within the expiry loses no answer. The node's kernel holds the address on
// a kube-ipvs0-like interface with arp_ignore=0 (the incident behind OPS-1): an expired node must not hand the
// request to it, the guard still drops it. The heartbeat is written from this (Node.js) process
// with the agent's clock (runtime/agent/bpf/clock.ts) and read by the program with
// bpf_ktime_get_ns(): the test proves both clocks agree, to within a probe interval.
//
// SEC-11: an address's expiry class. An ElasticIP's address (held: FO-3 never moves it) is still
// answered when the heartbeat has stopped for 15 s, past the default 10 s expiry (an API-server
// outage), while a ServiceLoadBalancer's VIP (moveable) expires; the expiry counters count the
// VIP's requests only. The classes come from the agent's ARP loop (ArpSync over the fake API, on
// these real maps) reading the controller's owner-kind label. SEC-15: a fresh config entry starts
// expired, and the agent's first proven heartbeat opens it. SEC-16: an interface whose heartbeat
// is older than the orphan bound fails open: the guard stops dropping, and the kernel answers.
import { monotonicNowNs } from '../../runtime/agent/bpf/clock';
import { poolItemsToPrefixes } from '../../runtime/agent/bpf/prefixes';
import { AnswerHeartbeat } from '../../runtime/agent/liveness/heartbeat';
import { OWNER_LABELS } from '../../api/constants';
import type { KubeObject } from '../../runtime/kube/types';
import { FakeApi, agentOn, arpAd } from '../unit/agent-fakes';
import { CLIENT_IP, Rig, SUBNET, describeAsRoot, repliesFor } from './rig';
import { ARP_REQUEST } from './pcap';

jest.setTimeout(60_000);

const POOL = [`${SUBNET}.0/25`];
const VIP = `${SUBNET}.60`;
const EXPIRY_MS = 1_500;
const GAP_MS = 50;
/** The restart test's expiry: the restarted loader (a tsx process) must fit in it on a loaded machine. */
const RESTART_EXPIRY_MS = 5_000;
/** SEC-11: the agent's default --answer-expiry, and an outage longer than it. */
const DEFAULT_EXPIRY_MS = 10_000;
const OUTAGE_MS = 15_000;
const EIP = `${SUBNET}.70`;
const SLB_VIP = `${SUBNET}.71`;

/** An ARPAdvertisement the controller wrote for an owner of `kind` (its owner-kind label). */
const ownedAd = (name: string, address: string, kind: 'ElasticIP' | 'ServiceLoadBalancer'): KubeObject => {
  const ad = arpAd(name, address, 'node-a');
  return { ...ad, metadata: { ...ad.metadata, labels: { [OWNER_LABELS.kind]: kind } } } as KubeObject;
};

describeAsRoot('FO-2 answers expire with their agent (real XDP)', () => {
  const rig = new Rig(1);
  let ifindex = 0;
  let mac = '';

  beforeAll(async () => {
    await rig.setup();
    const ns = rig.node(0);
    await rig.in(ns, 'ip', 'link', 'add', 'kube-ipvs0', 'type', 'veth', 'peer', 'name', 'kube-ipvs0p');
    await rig.in(ns, 'ip', 'addr', 'add', `${VIP}/32`, 'dev', 'kube-ipvs0');
    for (const scope of ['all', 'eth0']) await rig.sysctl(ns, `net.ipv4.conf.${scope}.arp_ignore`, '0');
    const attached = await rig.attach(0, { mode: 'generic', answerExpiryMs: EXPIRY_MS });
    ifindex = attached.ifindex;
    mac = attached.mac;
    rig.maps(0).syncGuard({ drop: poolItemsToPrefixes(POOL), allow: [rig.nodeIp(0)] });
    rig.maps(0).syncAddresses([VIP]);
  }, 90_000);

  afterAll(() => rig.destroy(), 60_000);

  /**
   * Probes every GAP_MS for `ms`; returns, per probe, ms after `since` it was sent and whether it
   * was answered. `since` as a function is called once the capture listens, just before the first
   * probe (what it starts, a heartbeat, is then not eaten by the capture's own start-up).
   */
  async function probeFor(
    ms: number,
    since: number | (() => number),
    during: () => Promise<void> = async () => undefined,
  ) {
    let origin = typeof since === 'number' ? since : 0;
    const frames = await rig.capture(async () => {
      if (typeof since === 'function') origin = since();
      await Promise.all([
        rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: Math.ceil(ms / GAP_MS), gapMs: GAP_MS }),
        during(),
      ]);
    });
    const requests = frames.filter((f) => f.arp?.op === ARP_REQUEST && f.arp.tip === VIP && f.arp.sip === CLIENT_IP);
    const replies = repliesFor(frames, VIP);
    expect(new Set(replies.map((r) => r.arp!.sha))).toEqual(replies.length ? new Set([mac]) : new Set());
    // A reply follows its request within microseconds: pair each request with the next reply before the next request.
    return requests.map((req, i) => {
      const next = requests[i + 1]?.timeMs ?? Infinity;
      return { at: req.timeMs - origin, answered: replies.some((r) => r.timeMs >= req.timeMs && r.timeMs < next) };
    });
  }

  test('FO-2: answers stop once the heartbeat is older than the expiry; the guard still drops the request, so the kernel does not answer either', async () => {
    const dropsBefore = rig.maps(0).stats().JUNEAU_DROP_EXPIRED;
    let refreshed = false;
    const probes = await probeFor(EXPIRY_MS + 1_000, () => {
      refreshed = rig.maps(0).refreshHeartbeat(ifindex, monotonicNowNs());
      return Date.now();
    });
    expect(refreshed).toBe(true);
    const answered = probes.filter((p) => p.answered);
    const unanswered = probes.filter((p) => !p.answered);
    // Every probe before the expiry is answered, none after it (one probe gap of slack each way
    // for the heartbeat write and the capture clock).
    expect(probes.filter((p) => p.at < EXPIRY_MS - GAP_MS).every((p) => p.answered)).toBe(true);
    expect(probes.filter((p) => p.at > EXPIRY_MS + GAP_MS).some((p) => p.answered)).toBe(false);
    expect(answered.length).toBeGreaterThan(10);
    expect(unanswered.length).toBeGreaterThan(10);
    expect(rig.maps(0).stats().JUNEAU_DROP_EXPIRED - dropsBefore).toBe(BigInt(unanswered.length));
    process.stdout.write(
      `FO-2: last answer ${Math.round(Math.max(...answered.map((p) => p.at)))} ms after the heartbeat, first silence ${Math.round(Math.min(...unanswered.map((p) => p.at)))} ms (expiry ${EXPIRY_MS} ms)\n`,
    );
  });

  test('FO-2: a restart within the expiry loses no answer: the new loader keeps the pinned heartbeat, the refresh after it extends the answers', async () => {
    await rig.attach(0, { mode: 'generic', answerExpiryMs: RESTART_EXPIRY_MS });
    const heartbeat = monotonicNowNs();
    rig.maps(0).refreshHeartbeat(ifindex, heartbeat);
    const since = Date.now();
    let adopted: bigint | undefined;
    let refreshedAt = 0;
    const probes = await probeFor(RESTART_EXPIRY_MS + 1_000, since, async () => {
      // The restarted agent: a new process attaches again, adopting maps and heartbeat...
      await rig.attach(0, { mode: 'generic', answerExpiryMs: RESTART_EXPIRY_MS });
      adopted = rig.maps(0).interfaceConfig(ifindex)?.heartbeatNs;
      // ...and, once its informers have synced (here: within the expiry), refreshes it.
      rig.maps(0).refreshHeartbeat(ifindex, monotonicNowNs());
      refreshedAt = Date.now() - since;
    });
    expect(adopted).toBe(heartbeat);
    expect(refreshedAt).toBeLessThan(RESTART_EXPIRY_MS);
    // Judged up to the refreshed heartbeat's own expiry; the window runs past the first
    // heartbeat's expiry, where only the refresh kept probes answered.
    const judged = probes.filter((p) => p.at < refreshedAt + RESTART_EXPIRY_MS - GAP_MS);
    expect(judged.filter((p) => p.at > RESTART_EXPIRY_MS + GAP_MS).length).toBeGreaterThan(5);
    expect(judged.filter((p) => !p.answered)).toEqual([]);
  });

  test('FO-2: a restart does not revive answers that already expired (the pinned heartbeat is kept, not renewed)', async () => {
    const stale = monotonicNowNs() - BigInt(EXPIRY_MS + 1_000) * 1_000_000n;
    rig.maps(0).refreshHeartbeat(ifindex, stale);
    await rig.attach(0, { mode: 'generic', answerExpiryMs: EXPIRY_MS });
    expect(rig.maps(0).interfaceConfig(ifindex)?.heartbeatNs).toBe(stale);
    const probes = await probeFor(500, Date.now());
    expect(probes.filter((p) => p.answered)).toEqual([]);
  });

  test('SEC-11: with the heartbeat stopped 15 s (past the 10 s expiry), the ElasticIP address is still answered and the ServiceLoadBalancer VIP is not; the expiry counters count the VIP only', async () => {
    await rig.attach(0, { mode: 'generic', answerExpiryMs: DEFAULT_EXPIRY_MS });
    const maps = rig.maps(0);
    const api = new FakeApi();
    const iface = { name: 'eth0', mac, addresses: [{ address: rig.nodeIp(0), prefixLength: 24 }] };
    const agent = agentOn(api, maps, iface);
    api.objects.set('arpadvertisements', [
      ownedAd('eip', EIP, 'ElasticIP'),
      ownedAd('slb', SLB_VIP, 'ServiceLoadBalancer'),
    ]);
    api.objects.set('addresspools', [
      { metadata: { name: 'p' }, spec: { advertiseMode: 'arp', addresses: POOL } } as KubeObject,
    ]);
    api.open();
    try {
      await agent.start();
      expect([...maps.heldAddresses()]).toEqual([EIP]);
      expect([...maps.addresses().keys()].sort()).toEqual([EIP, SLB_VIP]);
      const probe = async (tip: string) =>
        repliesFor(await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip, count: 5, gapMs: 20 })), tip);

      // Positive control: both answered while the heartbeat is fresh.
      expect(maps.refreshHeartbeat(ifindex, monotonicNowNs())).toBe(true);
      expect((await probe(EIP)).length).toBe(5);
      expect((await probe(SLB_VIP)).length).toBe(5);

      // The API server went away 15 s ago: no proof since.
      expect(maps.refreshHeartbeat(ifindex, monotonicNowNs() - BigInt(OUTAGE_MS) * 1_000_000n)).toBe(true);
      const before = maps.stats();
      const eip = await probe(EIP);
      const middle = maps.stats();
      const slb = await probe(SLB_VIP);
      const after = maps.stats();
      expect(eip.map((r) => r.arp!.sha)).toEqual(Array(5).fill(mac));
      expect(slb).toEqual([]);
      // The ElasticIP's requests: answered after the expiry, none counted as expired.
      expect(middle.JUNEAU_EVENT_HELD_ANSWERED - before.JUNEAU_EVENT_HELD_ANSWERED).toBe(5n);
      expect(middle.JUNEAU_DROP_EXPIRED + middle.JUNEAU_PASS_EXPIRED).toBe(
        before.JUNEAU_DROP_EXPIRED + before.JUNEAU_PASS_EXPIRED,
      );
      // The VIP's: expired, and dropped by the guard (the kernel's kube-ipvs0 does not hold it, so
      // PASS_EXPIRED would show a guard hole).
      expect(after.JUNEAU_DROP_EXPIRED - middle.JUNEAU_DROP_EXPIRED).toBe(5n);
      expect(after.JUNEAU_PASS_EXPIRED - middle.JUNEAU_PASS_EXPIRED).toBe(0n);
      expect(after.JUNEAU_EVENT_HELD_ANSWERED).toBe(middle.JUNEAU_EVENT_HELD_ANSWERED);

      // The ElasticIP is released and the address goes to a Service: now moveable, it expires too.
      api.emit('arpadvertisements', 'DELETED', ownedAd('eip', EIP, 'ElasticIP'));
      api.emit('arpadvertisements', 'ADDED', ownedAd('slb2', EIP, 'ServiceLoadBalancer'));
      await new Promise((resolve) => setImmediate(resolve));
      expect([...maps.heldAddresses()]).toEqual([]);
      expect(await probe(EIP)).toEqual([]);
    } finally {
      await agent.stop();
      maps.syncAddresses([VIP]);
      maps.syncExpiryClasses([]);
    }
  });

  test('SEC-15: a fresh config entry starts expired, not answering, and the first proven heartbeat opens it', async () => {
    rig.maps(0).refreshHeartbeat(ifindex, monotonicNowNs());
    expect(rig.maps(0).removeInterfaceConfig(ifindex)).toBe(true);
    await rig.attach(0, { mode: 'generic', answerExpiryMs: RESTART_EXPIRY_MS });
    const fresh = rig.maps(0).interfaceConfig(ifindex)!;
    expect(monotonicNowNs() - fresh.heartbeatNs!).toBeGreaterThan(BigInt(RESTART_EXPIRY_MS) * 1_000_000n);
    const probe = async () =>
      repliesFor(await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 5, gapMs: 20 })), VIP);
    const before = rig.maps(0).stats().JUNEAU_DROP_EXPIRED;
    expect(await probe()).toEqual([]);
    expect(rig.maps(0).stats().JUNEAU_DROP_EXPIRED - before).toBe(5n);
    // The agent's heartbeat, its view proven current now: one tick opens the answers.
    new AnswerHeartbeat({
      maps: rig.maps(0),
      ifindex,
      expiryMs: RESTART_EXPIRY_MS,
      provenAtNs: () => monotonicNowNs(),
    }).tick();
    expect((await probe()).map((r) => r.arp!.sha)).toEqual(Array(5).fill(mac));
  });

  test('SEC-16: past the orphan bound the interface fails open: the guard stops dropping (the kernel answers from kube-ipvs0) and nothing is answered by the program', async () => {
    await rig.attach(0, { mode: 'generic', answerExpiryMs: EXPIRY_MS, orphanAfterMs: 3 * EXPIRY_MS });
    expect(rig.maps(0).interfaceConfig(ifindex)?.orphanExpiries).toBe(3);
    const probe = async () =>
      repliesFor(await rig.capture(() => rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: 5, gapMs: 20 })), VIP);
    // Positive control: expired but not orphaned, the guard still drops.
    rig.maps(0).refreshHeartbeat(ifindex, monotonicNowNs() - BigInt(2 * EXPIRY_MS) * 1_000_000n);
    let before = rig.maps(0).stats();
    expect(await probe()).toEqual([]);
    expect(rig.maps(0).stats().JUNEAU_DROP_EXPIRED - before.JUNEAU_DROP_EXPIRED).toBe(5n);
    // Orphaned: every request passes, and the kernel, holding the VIP on kube-ipvs0, answers.
    rig.maps(0).refreshHeartbeat(ifindex, monotonicNowNs() - BigInt(3 * EXPIRY_MS + 500) * 1_000_000n);
    before = rig.maps(0).stats();
    expect((await probe()).length).toBe(5);
    const after = rig.maps(0).stats();
    expect(after.JUNEAU_PASS_ORPHANED - before.JUNEAU_PASS_ORPHANED).toBe(5n);
    expect(after.JUNEAU_TX_REPLY - before.JUNEAU_TX_REPLY).toBe(0n);
    expect(after.JUNEAU_DROP_EXPIRED - before.JUNEAU_DROP_EXPIRED).toBe(0n);
    // A heartbeat (a returning agent) closes it again.
    rig.maps(0).refreshHeartbeat(ifindex, monotonicNowNs());
    before = rig.maps(0).stats();
    expect((await probe()).length).toBe(5);
    expect(rig.maps(0).stats().JUNEAU_TX_REPLY - before.JUNEAU_TX_REPLY).toBe(5n);
  });
});
