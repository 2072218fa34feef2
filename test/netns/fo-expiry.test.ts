// FO-2 on real XDP: an interface's answers expire when its heartbeat in juneau_config is older
// than the configured expiry, and a restart (a new loader process adopting the pins, as a
// restarted agent does) within the expiry loses no answer. The node's kernel holds the address on
// a kube-ipvs0-like interface with arp_ignore=0 (the incident behind OPS-1): an expired node must not hand the
// request to it, the guard still drops it. The heartbeat is written from this (Node.js) process
// with the agent's clock (runtime/agent/bpf/clock.ts) and read by the program with
// bpf_ktime_get_ns(): the test proves both clocks agree, to within a probe interval.
import { monotonicNowNs } from '../../runtime/agent/bpf/clock';
import { poolItemsToPrefixes } from '../../runtime/agent/bpf/prefixes';
import { CLIENT_IP, Rig, SUBNET, describeAsRoot, repliesFor } from './rig';
import { ARP_REQUEST } from './pcap';

jest.setTimeout(60_000);

const POOL = [`${SUBNET}.0/25`];
const VIP = `${SUBNET}.60`;
const EXPIRY_MS = 1_500;
const GAP_MS = 50;
/** The restart test's expiry: the restarted loader (a tsx process) must fit in it on a loaded machine. */
const RESTART_EXPIRY_MS = 5_000;

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

  /** Probes every GAP_MS for `ms`; returns, per probe, ms after `since` it was sent and whether it was answered. */
  async function probeFor(ms: number, since: number, during: () => Promise<void> = async () => undefined) {
    const frames = await rig.capture(async () => {
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
      return { at: req.timeMs - since, answered: replies.some((r) => r.timeMs >= req.timeMs && r.timeMs < next) };
    });
  }

  test('FO-2: answers stop once the heartbeat is older than the expiry; the guard still drops the request, so the kernel does not answer either', async () => {
    const dropsBefore = rig.maps(0).stats().JUNEAU_DROP_EXPIRED;
    expect(rig.maps(0).refreshHeartbeat(ifindex, monotonicNowNs())).toBe(true);
    const since = Date.now();
    const probes = await probeFor(EXPIRY_MS + 1_000, since);
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
});
