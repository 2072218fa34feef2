// `kubectl juneau ngw` end to end but for the cluster: an API server stand-in (a NATGateway, the
// agent Pods, the Nodes) and a stand-in kubectl that records the exec and answers as the agent
// Pod's `ngw --local -o json` would. Its errors: no such NATGateway, no gateway node yet, no agent Pod.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { main } from '../../../runtime/cli/main';
import type { NgwNodeView } from '../../../runtime/cli/ngw';
import { localApiServer } from '../local-api-server';
import { tempDir } from '../temp-dir';

const NODE_VIEW: NgwNodeView = {
  natGateway: 'team-a/egress',
  translated: true,
  address: '198.51.100.60',
  portRange: { min: 1024, max: 65535 },
  flows: { tcp: 6, udp: 0, icmp: 1, total: 7 },
  portsInUse: { tcp: 6, udp: 0, icmp: 1 },
  newFlowPackets: 9,
  drops: { insertFailed: 0, conntrackDrop: 0, tunnelRefused: 0 },
};

interface Cluster {
  natGateway?: Record<string, unknown>;
  agentPods: string[];
  nodes: string[];
}

/** Runs `kubectl juneau ARGS` against `cluster`; what it printed and the kubectl calls it made. */
async function run(cluster: Cluster, args: readonly string[]) {
  const send = (res: ServerResponse, code: number, body: unknown) => {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const notFound = { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 };
  const api = await localApiServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/apis/juneau.loutres.me/v1alpha1/namespaces/team-a/natgateways/egress')
      return cluster.natGateway ? send(res, 200, cluster.natGateway) : send(res, 404, notFound);
    if (url.pathname === '/api/v1/namespaces/juneau-system/pods')
      return send(res, 200, {
        kind: 'PodList',
        apiVersion: 'v1',
        metadata: {},
        items: cluster.agentPods.map((name) => ({ metadata: { name }, status: { phase: 'Running' } })),
      });
    const node = /^\/api\/v1\/nodes\/(.+)$/.exec(url.pathname)?.[1];
    if (node)
      return cluster.nodes.includes(node) ? send(res, 200, { metadata: { name: node } }) : send(res, 404, notFound);
    send(res, 404, notFound);
  });
  const dir = tempDir('ngw-cli');
  const kubeconfig = path.join(dir, 'kubeconfig');
  fs.writeFileSync(kubeconfig, api.kubeConfig.exportConfig());
  const calls = path.join(dir, 'calls');
  const kubectl = path.join(dir, 'kubectl');
  fs.writeFileSync(path.join(dir, 'answer.json'), JSON.stringify(NODE_VIEW));
  fs.writeFileSync(kubectl, `#!/bin/sh\necho "$@" >> ${calls}\ncat ${path.join(dir, 'answer.json')}\n`, {
    mode: 0o755,
  });
  let stdout = '';
  let stderr = '';
  try {
    const code = await main(['--kubeconfig', kubeconfig, ...args], {
      stdout: (t) => (stdout += t),
      stderr: (t) => (stderr += t),
      env: { ...process.env, KUBECTL: kubectl },
    });
    return {
      code,
      stdout,
      stderr,
      calls: fs.existsSync(calls) ? fs.readFileSync(calls, 'utf8').trim().split('\n') : [],
    };
  } finally {
    await api.close();
  }
}

const natGateway = (status: Record<string, unknown>) => ({
  apiVersion: 'juneau.loutres.me/v1alpha1',
  kind: 'NATGateway',
  metadata: { namespace: 'team-a', name: 'egress' },
  spec: { externalNetwork: 'lan', podSelector: {} },
  status,
});

test("NGW-8: the gateway node's agent Pod asked with ngw --local -o json; its answer shown beside the API's node and phase", async () => {
  const r = await run(
    {
      natGateway: natGateway({ phase: 'Ready', address: '198.51.100.60', nodeName: 'node-2' }),
      agentPods: ['juneau-agent-x'],
      nodes: ['node-2'],
    },
    ['ngw', 'egress', '-n', 'team-a', '-o', 'json', '--flows'],
  );
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
  expect(r.calls).toEqual([
    expect.stringMatching(
      /--kubeconfig \S+ -n juneau-system exec juneau-agent-x -c agent -- kubectl-juneau ngw team-a\/egress --local --flows -o json$/,
    ),
  ]);
  expect(JSON.parse(r.stdout)).toEqual({ ...NODE_VIEW, phase: 'Ready', node: 'node-2', pod: 'juneau-agent-x' });
});

test('no such NATGateway; no gateway node yet (its phase and reason); no agent Pod on the gateway node: each said, exit 1, nothing exec-ed', async () => {
  const missing = await run({ agentPods: [], nodes: [] }, ['ngw', 'team-a/egress']);
  expect(missing).toMatchObject({
    code: 1,
    stdout: '',
    stderr: 'kubectl-juneau: natgateway team-a/egress not found\n',
    calls: [],
  });
  const degraded = await run(
    {
      natGateway: natGateway({
        phase: 'Degraded',
        address: '198.51.100.60',
        conditions: [{ type: 'Ready', status: 'False', reason: 'NoGatewayNode', message: 'node-1: not Ready' }],
      }),
      agentPods: [],
      nodes: [],
    },
    ['ngw', 'team-a/egress'],
  );
  expect(degraded).toMatchObject({
    code: 1,
    stderr:
      'kubectl-juneau: NATGateway team-a/egress has no gateway node yet (phase Degraded; Ready: NoGatewayNode (node-1: not Ready)): no node translates for it\n',
    calls: [],
  });
  const noAgent = await run(
    { natGateway: natGateway({ phase: 'Ready', nodeName: 'node-2' }), agentPods: [], nodes: ['node-2'] },
    ['ngw', 'team-a/egress'],
  );
  expect(noAgent.code).toBe(1);
  expect(noAgent.stderr).toMatch(
    /^kubectl-juneau: NATGateway team-a\/egress's gateway node node-2: no juneau-agent Pod runs on node node-2/,
  );
  expect(noAgent.calls).toEqual([]);
});
