// The agent's NATGateway loop (runtime/agent/ngw/loop.ts) over a fake API: a gateway node watches
// the Pods of its NATGateway's namespace (the pods of other nodes it translates for), a pod node
// does not, and the namespace is let go when the node stops being its gateway.
import { NgwLoop, type NgwDatapath, type NgwLoopOptions, type NgwShared } from '../../../runtime/agent/ngw/loop';
import type { NgwDesired } from '../../../runtime/agent/ngw/desired';
import type { NgwSyncResult } from '../../../runtime/agent/ngw/sync';
import type { KubeObject } from '../../../runtime/kube/types';
import { FakeApi } from '../agent-fakes';

const NONE: NgwSyncResult = {
  tunnelsAdded: 0,
  tunnelsRemoved: 0,
  rulesAdded: 0,
  rulesRemoved: 0,
  routesSet: 0,
  routesRemoved: 0,
  nftReplaced: false,
};

class FakeNgwDatapath implements NgwDatapath {
  readonly written: Array<NgwDesired | 'removed'> = [];
  sync(desired: NgwDesired) {
    this.written.push(desired);
    return NONE;
  }
  remove() {
    this.written.push('removed');
    return NONE;
  }
}

const node = (name: string, ip: string) => ({
  metadata: { name },
  status: { addresses: [{ type: 'InternalIP', address: ip }] },
});
const NODES = [node('a', '192.0.2.1'), node('b', '192.0.2.2')];
const gateway = (nodeName: string): KubeObject =>
  ({
    apiVersion: 'juneau.loutres.me/v1alpha1',
    kind: 'NATGateway',
    metadata: { namespace: 'team-a', name: 'egress', creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: { externalNetwork: 'ext', podSelector: {} },
    status: { phase: 'Ready', address: '198.51.100.60', nodeName },
  }) as KubeObject;
const pod = (name: string, nodeName: string, ip: string) => ({
  metadata: { namespace: 'team-a', name, labels: { app: 'x' } },
  spec: { nodeName },
  status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] },
});
const shared = (pods: NgwShared['pods']): NgwShared => ({
  nodes: NODES,
  pods,
  clusterRanges: ['10.244.0.0/16'],
  elasticIPPods: [],
});
const tick = () => new Promise((resolve) => setImmediate(resolve));

async function started(self: string, gatewayNode: string, extra: Partial<NgwLoopOptions> = {}) {
  const api = new FakeApi();
  api.objects.set('natgateways', [gateway(gatewayNode)]);
  // The namespace's Pods as the API lists them: one on each node.
  api.objects.set('pods', [pod('p-a', 'a', '10.244.1.2'), pod('p-b', 'b', '10.244.2.2')]);
  api.open();
  /** Every list call, by resource: which informers the loop started. */
  const lists: string[] = [];
  const list = api.list.bind(api);
  api.list = ((type: { plural: string }, o?: { fieldSelector?: string }) => {
    lists.push(type.plural);
    return list(type, o);
  }) as typeof api.list;
  const datapath = new FakeNgwDatapath();
  const loop = new NgwLoop({ client: api, nodeName: self, datapath, ...extra });
  let passes = 0;
  loop.onChange(() => passes++);
  loop.natGateways.start();
  await loop.natGateways.waitForSync();
  return { lists, loop, datapath, passes: () => passes };
}

describe('NgwLoop (NGW-4)', () => {
  test('NGW-4: the gateway node watches its NATGateway’s namespace and then translates the pods of every node', async () => {
    const { lists, loop, datapath, passes } = await started('b', 'b');
    const own = [pod('p-b', 'b', '10.244.2.2')];
    loop.reconcile(shared(own));
    const first = datapath.written.at(-1) as NgwDesired;
    expect(first.nft).toMatch(/ip saddr \{ 10\.244\.2\.2 \} .* snat ip to 198\.51\.100\.60:1024-65535/);
    for (let i = 0; i < 20 && passes() === 0; i++) await tick();
    expect({ passes: passes() > 0, lists }).toEqual({ passes: true, lists: ['natgateways', 'pods'] });
    loop.reconcile(shared(own));
    const second = datapath.written.at(-1) as NgwDesired;
    expect(second.nft).toMatch(/ip saddr \{ 10\.244\.1\.2, 10\.244\.2\.2 \} .* snat ip to 198\.51\.100\.60/);
    expect(second.tunnels.map((t) => t.remote)).toEqual(['192.0.2.1']);
    await loop.stop();
    await loop.natGateways.stop();
  });

  test('NGW-4: a pod node watches no namespace and steers its own pods only', async () => {
    const { lists, loop, datapath } = await started('a', 'b');
    loop.reconcile(shared([pod('p-a', 'a', '10.244.1.2')]));
    const d = datapath.written.at(-1) as NgwDesired;
    expect({ routes: d.routes.length, rules: d.rules.length, translate: /snat ip to 198/.test(d.nft) }).toEqual({
      routes: 1,
      rules: 1,
      translate: false,
    });
    expect(d.nft).toContain('ip saddr { 10.244.1.2 } meta mark set');
    await tick();
    expect(lists).toEqual(['natgateways']);
    await loop.stop();
    await loop.natGateways.stop();
  });

  test('a node without an InternalIP removes the data path', async () => {
    const { loop, datapath } = await started('z', 'b');
    loop.reconcile(shared([]));
    expect(datapath.written).toEqual(['removed']);
    await loop.stop();
    await loop.natGateways.stop();
  });

  /** A loop on `self` whose conntrack insert_failed counter is `counter.value`, recording its warnings. */
  async function counting(self: string) {
    const counter = { value: 7 };
    const warnings: Array<{ regarding: unknown; reason: string; action: string; note: string }> = [];
    const recorder = {
      warning: (regarding: unknown, reason: string, action: string, note: string) =>
        warnings.push({ regarding, reason, action, note }),
    };
    const s = await started(self, 'b', {
      recorder,
      insertFailed: () => counter.value,
      portRange: { min: 40000, max: 40001 },
    });
    return { ...s, counter, warnings };
  }

  test('NGW-5: on the gateway node, insert failures after the first look are one Warning Event on the NATGateway naming the node and the range, not one per poll', async () => {
    const { loop, counter, warnings } = await counting('b');
    loop.reconcile(shared([pod('p-b', 'b', '10.244.2.2')]));
    loop.poll();
    expect(warnings).toEqual([]);
    counter.value = 9;
    loop.poll();
    counter.value = 15;
    loop.poll();
    loop.poll();
    expect(warnings).toEqual([
      {
        regarding: {
          apiVersion: 'juneau.loutres.me/v1alpha1',
          kind: 'NATGateway',
          namespace: 'team-a',
          name: 'egress',
          uid: undefined,
        },
        reason: 'PortsExhausted',
        action: 'Translate',
        note: 'NGW-5: the port range 40000-40001 of NATGateway team-a/egress is exhausted on node b: 2 new flow(s) refused (conntrack insert_failed on the node); established flows keep working',
      },
    ]);
    await loop.stop();
    await loop.natGateways.stop();
  });

  test('NGW-5: a pod node that is not the gateway reports no exhaustion; an unreadable counter is no failed pass', async () => {
    const { loop, counter, warnings } = await counting('a');
    loop.reconcile(shared([pod('p-a', 'a', '10.244.1.2')]));
    counter.value = 100;
    loop.poll();
    expect(warnings).toEqual([]);
    const b = await started('b', 'b', {
      recorder: { warning: () => warnings.push({ regarding: 0, reason: '', action: '', note: '' }) },
      insertFailed: () => {
        throw new Error('no /proc/net/stat/nf_conntrack');
      },
    });
    b.loop.reconcile(shared([pod('p-b', 'b', '10.244.2.2')]));
    b.loop.poll();
    expect({ failed: b.loop.lastPassFailed, warnings }).toEqual({ failed: false, warnings: [] });
    for (const l of [loop, b.loop]) {
      await l.stop();
      await l.natGateways.stop();
    }
  });
  test('NGW-8: the node is read into the metrics at the first pass and at each poll, not at every pass; an unreadable node is no failed pass', async () => {
    const reads: string[] = [];
    const observed: unknown[] = [];
    let fail = false;
    const report = { table: true, gateways: [], drops: { insertFailed: 0, conntrackDrop: 0, tunnelRefused: 0 } };
    const { loop } = await started('b', 'b', {
      readNode: () => {
        reads.push('read');
        if (fail) throw new Error('conntrack: Operation not permitted');
        return report;
      },
      metrics: { observe: (r) => observed.push(r) },
    });
    loop.reconcile(shared([pod('p-b', 'b', '10.244.2.2')]));
    loop.reconcile(shared([pod('p-b', 'b', '10.244.2.2')]));
    expect(reads).toHaveLength(1);
    loop.poll();
    expect({ reads: reads.length, observed: observed.length }).toEqual({ reads: 2, observed: 2 });
    fail = true;
    loop.poll();
    expect({ reads: reads.length, observed: observed.length, failed: loop.lastPassFailed }).toEqual({
      reads: 3,
      observed: 2,
      failed: false,
    });
    await loop.stop();
    await loop.natGateways.stop();
  });
});
