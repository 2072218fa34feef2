// SEC-4 (H4): a NAT failure cannot stop ARP answering. The real juneau-agent in a node namespace
// against the real control plane runs its NAT loop in a child process (runtime/agent/nat-process.ts).
// Killed (SIGKILL), or out of heap from its first allocations (--nat-max-heap=16: V8 aborts with
// "Reached heap limit"), the NAT process dies and is restarted, while the agent's real XDP responder
// keeps answering every request and its FO-2 heartbeat keeps moving past several expiries, so the
// node never goes silent the way an agent OOM-killed as a whole does (its answers expire).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ArpMaps, PIN_SUBDIR, monotonicNowNs } from '../../runtime/agent/bpf';
import { JuneauResources } from '../../runtime/kube/resources';
import { RestClient, isNotFound } from '../../runtime/kube/rest';
import type { KubeObject } from '../../runtime/kube/types';
import { CLIENT_IP, Rig, SUBNET, describeAsRoot, repliesFor } from '../netns/rig';
import { BridgedAgent, removePinsThen } from './agent-harness';
import * as fixture from './fixture';

jest.setTimeout(120_000);

const VIP = `${SUBNET}.60`;
// Short enough that a stalled heartbeat shows within the probes, long enough for a loaded machine.
const EXPIRY_MS = 4_000;
// The agent's default: a child restarted from TypeScript sources (tsx) costs seconds of CPU per
// start on a machine the tests share, which a shorter expiry does not always survive.
const OOM_EXPIRY_MS = 10_000;
const GAP_MS = 50;

describeAsRoot(
  'SEC-4 the NAT loop runs in its own process: its failure leaves ARP answering (real agent, real XDP)',
  () => {
    const rig = new Rig(1);
    const node = `natiso-${rig.id}`;
    const names = { pool: `natiso-${rig.id}`, network: `natiso-${rig.id}` };
    const pinDir = path.join(rig.pinDir(0), PIN_SUBDIR);
    const rest = new RestClient(fixture.testKubeConfig());
    const adName = `natiso-${rig.id}`;
    let bridged: BridgedAgent | undefined;
    let maps: ArpMaps | undefined;
    let nodeMac = '';

    const agentArgs = (expiryMs: number, ...extra: string[]) => [
      '--node-name',
      node,
      '--kubeconfig',
      fixture.testKubeconfigPath(),
      `--bpffs=${rig.pinDir(0)}`,
      '--xdp-mode=generic',
      '--poll-interval=200ms',
      `--answer-expiry=${expiryMs}ms`,
      `--lease-duration=${expiryMs}ms`,
      '--lease-renew-interval=500ms',
      ...extra,
    ];

    beforeAll(async () => {
      await fixture.requireCrd('arpadvertisements');
      await rig.setup();
      nodeMac = await rig.mac(rig.node(0), 'eth0');
      await fixture.ensureNode(node, { internalIP: rig.nodeIp(0) });
      await fixture.createArpNetwork(rest, { ...names, addresses: [`${SUBNET}.0/25`] });
      await rest.create(JuneauResources.arpAdvertisements, {
        apiVersion: 'juneau.loutres.me/v1alpha1',
        kind: 'ARPAdvertisement',
        metadata: { name: adName },
        spec: { externalNetwork: names.network, address: VIP, nodeName: node },
      } as KubeObject);
    }, 120_000);

    afterEach(async () => {
      await bridged?.stop();
      bridged = undefined;
      maps?.close();
      maps = undefined;
    });

    afterAll(async () => {
      await rest.delete(JuneauResources.arpAdvertisements, undefined, adName).catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
      await fixture.deleteArpNetwork(rest, names);
      await fixture.deleteNodes([node]);
      await removePinsThen(pinDir, () => rig.destroy());
    }, 60_000);

    /** Probes VIP every GAP_MS for `ms` while `during` runs; the number of requests and of replies. */
    async function probe(ms: number, during: () => Promise<void>): Promise<{ requests: number; replies: number }> {
      const frames = await rig.capture(async () => {
        await Promise.all([
          rig.sendArp({ sip: CLIENT_IP, tip: VIP, count: Math.ceil(ms / GAP_MS), gapMs: GAP_MS }),
          during(),
        ]);
      });
      const requests = frames.filter((f) => f.arp?.op === 1 && f.arp.tip === VIP && f.arp.sip === CLIENT_IP).length;
      const replies = repliesFor(frames, VIP);
      expect(new Set(replies.map((r) => r.arp!.sha))).toEqual(new Set([nodeMac]));
      return { requests, replies: replies.length };
    }

    /** The heartbeat's age now, ms. */
    const heartbeatAgeMs = () =>
      Number((monotonicNowNs() - maps!.interfaceConfigs().values().next().value!.heartbeatNs!) / 1_000_000n);

    test('SEC-4: the NAT process killed with SIGKILL is restarted; ARP answers every request throughout and the heartbeat stays fresh', async () => {
      bridged = new BridgedAgent(rig.node(0), agentArgs(EXPIRY_MS), fixture.testKubeconfigPath());
      const agent = await bridged.start();
      maps = ArpMaps.openPinned(pinDir);
      // Ready is synced and reconciled; answering waits for the first proof (a fresh or adopted
      // heartbeat may be expired until then, SEC-15).
      // This agent's own first proof, not an adopted heartbeat of the last one.
      await agent.waitForLog('view proven current');
      await fixture.waitFor(() => heartbeatAgeMs() < EXPIRY_MS / 2, { what: 'a fresh heartbeat' });
      const started = await agent.waitForLog('NAT loop started in its own process');
      await agent.waitForLog('NAT programs attached');
      const pid = started.pid as number;
      expect(pid).toBeGreaterThan(0);
      const from = agent.lines.length;
      const result = await probe(2.5 * EXPIRY_MS, async () => {
        process.kill(pid, 'SIGKILL');
        await agent.waitForLog('NAT process exited', from);
      });
      const exited = agent.lines.slice(from).find((l) => l.msg.startsWith('NAT process exited'))!;
      expect(exited).toMatchObject({ signal: 'SIGKILL' });
      const restarted = await agent.waitForLog('NAT loop started in its own process', from);
      expect(restarted.pid).not.toBe(pid);
      expect(result.requests).toBeGreaterThan(50);
      expect(result.replies).toBe(result.requests);
      expect(heartbeatAgeMs()).toBeLessThan(EXPIRY_MS);
      expect(agent.running).toBe(true);
    });

    test('SEC-4: a NAT process out of heap (--nat-max-heap=16) aborts on every start; ARP answers every request through several expiries', async () => {
      // Never ready (its NAT process never reconciles): started, then waited for by its heartbeat.
      bridged = new BridgedAgent(
        rig.node(0),
        agentArgs(OOM_EXPIRY_MS, '--nat-max-heap=16'),
        fixture.testKubeconfigPath(),
      );
      const agent = await bridged.startUnready();
      await fixture.waitFor(() => fs.existsSync(path.join(pinDir, 'juneau_config')), { what: 'the pinned config' });
      maps = ArpMaps.openPinned(pinDir);
      // Ready is synced and reconciled; answering waits for the first proof (a fresh or adopted
      // heartbeat may be expired until then, SEC-15).
      // This agent's own first proof, not an adopted heartbeat of the last one.
      await agent.waitForLog('view proven current');
      await fixture.waitFor(() => heartbeatAgeMs() < OOM_EXPIRY_MS / 2, { what: 'a fresh heartbeat' });
      const from = agent.lines.length;
      const result = await probe(2.5 * OOM_EXPIRY_MS, () =>
        agent.waitForLog('NAT process exited', from).then(() => undefined),
      );
      // V8's heap limit, not a kill: the child aborted by itself.
      expect(agent.log).toMatch(/heap limit|heap out of memory/i);
      expect(agent.lines.slice(from).find((l) => l.msg.startsWith('NAT process exited'))).toMatchObject({
        signal: 'SIGABRT',
      });
      expect(result.requests).toBeGreaterThan(50);
      expect(result.replies).toBe(result.requests);
      expect(heartbeatAgeMs()).toBeLessThan(OOM_EXPIRY_MS);
      expect(agent.running).toBe(true);
    });
  },
);
