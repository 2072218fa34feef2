// What a node's agent feeds the NATGateway data path (runtime/agent/ngw/inputs.ts ngwInputs): which
// gateways serve, which pods are each one's (NGW-4, H1), which namespaces' Pods a gateway node
// watches. The box proof with real pods is test/box/natgw.test.ts.
import { NGW_PORT_RANGE, ngwInputs, type NATGatewayObject } from '../../../runtime/agent/ngw/inputs';
import type { NodeObject, PodObject } from '../../../runtime/agent/nat/desired';

const node = (name: string, ip: string): NodeObject => ({
  metadata: { name },
  status: { addresses: [{ type: 'InternalIP', address: ip }] },
});
const NODES = [node('a', '192.0.2.1'), node('b', '192.0.2.2'), node('c', '192.0.2.3')];

function gateway(name: string, o: { at?: string; labels?: Record<string, string>; status?: object; ns?: string } = {}) {
  return {
    apiVersion: 'juneau.loutres.me/v1alpha1',
    kind: 'NATGateway',
    metadata: { namespace: o.ns ?? 'team-a', name, creationTimestamp: o.at ?? '2026-01-01T00:00:00Z' },
    spec: { externalNetwork: 'ext', podSelector: o.labels ? { matchLabels: o.labels } : {} },
    status: { phase: 'Ready', address: '198.51.100.60', nodeName: 'b', ...o.status },
  } as unknown as NATGatewayObject;
}

function pod(
  name: string,
  nodeName: string,
  ip: string,
  o: { labels?: Record<string, string>; phase?: string; ns?: string; deleting?: boolean; hostNetwork?: boolean } = {},
): PodObject & { metadata: { labels?: Record<string, string> } } {
  return {
    metadata: {
      namespace: o.ns ?? 'team-a',
      name,
      labels: o.labels ?? { app: 'crawler' },
      ...(o.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    spec: { nodeName, hostNetwork: o.hostNetwork },
    status: { phase: o.phase ?? 'Running', podIP: ip, podIPs: [{ ip }] },
  };
}

const base = { nodes: NODES, clusterRanges: ['10.244.0.0/16'], elasticIPPods: [] };

describe('ngwInputs (NGW-4, H1)', () => {
  test('NGW-4: the gateway node gets every selected pod of every node, with its node’s address; it watches the namespace', () => {
    const r = ngwInputs({
      ...base,
      nodeName: 'b',
      gateways: [gateway('egress', { labels: { app: 'crawler' } })],
      pods: [
        pod('p1', 'a', '10.244.1.2'),
        pod('p2', 'b', '10.244.2.2'),
        pod('p3', 'c', '10.244.3.2'),
        pod('other', 'a', '10.244.1.9', { labels: { app: 'web' } }),
        pod('x', 'a', '10.244.1.10', { ns: 'team-b' }),
      ],
    });
    expect(r).toEqual({
      input: {
        nodeAddress: '192.0.2.2',
        gateways: [
          {
            name: 'team-a/egress',
            address: '198.51.100.60',
            gatewayNodeAddress: '192.0.2.2',
            portRange: NGW_PORT_RANGE,
            pods: [
              { address: '10.244.1.2', nodeAddress: '192.0.2.1' },
              { address: '10.244.2.2', nodeAddress: '192.0.2.2' },
              { address: '10.244.3.2', nodeAddress: '192.0.2.3' },
            ],
          },
        ],
        clusterRanges: ['10.244.0.0/16'],
        elasticIPPods: [],
      },
      gatewayNamespaces: ['team-a'],
      waiting: [],
    });
  });

  test('NGW-4: a pod node watches no namespace; a pod selected by two NATGateways goes to the oldest', () => {
    const r = ngwInputs({
      ...base,
      nodeName: 'a',
      gateways: [
        gateway('young', { at: '2026-01-02T00:00:00Z', status: { address: '198.51.100.61', nodeName: 'c' } }),
        gateway('old', { at: '2026-01-01T00:00:00Z' }),
      ],
      pods: [pod('p1', 'a', '10.244.1.2')],
    });
    expect(r.gatewayNamespaces).toEqual([]);
    expect(r.input?.gateways.map((g) => [g.name, g.pods.map((p) => p.address)])).toEqual([
      ['team-a/young', []],
      ['team-a/old', ['10.244.1.2']],
    ]);
  });

  test('H1: a pod counts only while Running with its address, not deleting, not on the host network', () => {
    const r = ngwInputs({
      ...base,
      nodeName: 'b',
      gateways: [gateway('egress')],
      pods: [
        pod('pending', 'a', '10.244.1.2', { phase: 'Pending' }),
        pod('done', 'a', '10.244.1.3', { phase: 'Succeeded' }),
        pod('going', 'a', '10.244.1.4', { deleting: true }),
        pod('host', 'a', '192.0.2.1', { hostNetwork: true }),
        pod('ok', 'a', '10.244.1.5'),
      ],
    });
    expect(r.input?.gateways[0]?.pods).toEqual([{ address: '10.244.1.5', nodeAddress: '192.0.2.1' }]);
  });

  test('NGW-3: a NATGateway not Ready, being deleted, or whose node has no InternalIP serves nothing; the last is said', () => {
    const r = ngwInputs({
      ...base,
      nodeName: 'b',
      gateways: [
        gateway('pending', { status: { phase: 'Pending' } }),
        { ...gateway('deleting'), metadata: { ...gateway('deleting').metadata, deletionTimestamp: 'x' } },
        gateway('lost', { status: { nodeName: 'gone' } }),
      ],
      pods: [pod('p1', 'a', '10.244.1.2')],
    });
    expect(r).toEqual({
      input: expect.objectContaining({ gateways: [] }),
      gatewayNamespaces: [],
      waiting: ['NATGateway team-a/lost: its gateway node gone has no IPv4 InternalIP'],
    });
  });

  test('a node without an InternalIP gets no input (the data path is removed), and says why', () => {
    const r = ngwInputs({ ...base, nodeName: 'z', gateways: [gateway('egress')], pods: [] });
    expect(r).toEqual({
      input: undefined,
      gatewayNamespaces: [],
      waiting: ['Node z has no IPv4 InternalIP: nothing steered or translated here'],
    });
  });
});
