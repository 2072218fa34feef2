// `kubectl juneau ngw NAMESPACE/NAME` (runtime/cli/ngw.ts, args.ts): its command line, the node's
// report narrowed to one gateway, what it prints, why there is no node to ask; and end to end but
// for the cluster: an API server stand-in and a stand-in kubectl that records the exec and answers as
// the agent Pod's `ngw --local -o json` would, with its errors (no NATGateway, no node yet, no agent Pod).
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseCommandLine } from '../../../runtime/cli/args';
import { CLI_HELP, main } from '../../../runtime/cli/main';
import { FLOW_LIST_LIMIT, gatewayNodeOf, nodeView, renderNgw } from '../../../runtime/cli/ngw';
import type { NgwNodeReport } from '../../../runtime/agent/ngw/observe';
import { localApiServer } from '../local-api-server';
import { tempDir } from '../temp-dir';

const REPORT: NgwNodeReport = {
  table: true,
  gateways: [
    {
      gateway: {
        name: 'team-a/egress',
        address: '198.51.100.60',
        portRange: { min: 40000, max: 40001 },
        newFlowPackets: 7,
      },
      flows: {
        flows: { tcp: 2, udp: 1, icmp: 0 },
        portsInUse: { tcp: 2, udp: 1, icmp: 0 },
        listed: [
          {
            protocol: 'tcp',
            source: '10.244.1.2',
            sourcePort: 51000,
            port: 40000,
            destination: '203.0.113.9',
            destinationPort: 443,
            state: 'ESTABLISHED',
          },
          {
            protocol: 'udp',
            source: '10.244.2.3',
            sourcePort: 53000,
            port: 40001,
            destination: '203.0.113.53',
            destinationPort: 53,
          },
        ],
      },
    },
    {
      gateway: {
        name: 'team-a/other',
        address: '198.51.100.61',
        portRange: { min: 1024, max: 65535 },
        newFlowPackets: 0,
      },
      flows: { flows: { tcp: 0, udp: 0, icmp: 0 }, portsInUse: { tcp: 0, udp: 0, icmp: 0 }, listed: [] },
    },
  ],
  drops: { insertFailed: 3, conntrackDrop: 3, tunnelRefused: 1 },
};

describe('kubectl juneau ngw: the command line', () => {
  test('NGW-8: NAMESPACE/NAME or NAME, natgateway as an alias, --flows and --local, -o', () => {
    expect(parseCommandLine(['ngw', 'team-a/egress'])).toMatchObject({
      command: 'ngw',
      gateway: 'team-a/egress',
      flows: false,
      local: false,
      output: 'table',
    });
    expect(parseCommandLine(['natgateway', 'egress', '-n', 'team-a', '--flows', '-o', 'json'])).toMatchObject({
      command: 'ngw',
      gateway: 'egress',
      flows: true,
      output: 'json',
      kube: { namespace: 'team-a' },
    });
    expect(parseCommandLine(['ngw', 'team-a/egress', '--local'])).toMatchObject({ local: true });
  });

  test('refused, naming what is wrong', () => {
    expect(() => parseCommandLine(['ngw'])).toThrow("ngw takes one NATGateway, NAMESPACE/NAME or NAME (got '')");
    expect(() => parseCommandLine(['ngw', 'a/b/c'])).toThrow("(got 'a/b/c')");
    expect(() => parseCommandLine(['ngw', 'a/', 'x'])).toThrow("(got 'a/ x')");
    expect(() => parseCommandLine(['ngw', 'a/egress', '-n', 'b'])).toThrow('its namespace a and -n b differ');
    expect(() => parseCommandLine(['ngw', 'a/egress', '--node', 'n1'])).toThrow('--node does not apply to ngw');
    expect(() => parseCommandLine(['ngw', 'egress', '-A'])).toThrow('-A does not apply');
    expect(() => parseCommandLine(['status', '--flows'])).toThrow("--flows applies to ngw only, not 'status'");
  });

  test('the help names the command and its list bound', () => {
    expect(CLI_HELP).toContain('ngw NAMESPACE/NAME');
    expect(CLI_HELP).toContain(`the first ${FLOW_LIST_LIMIT} flows`);
  });
});

describe('kubectl juneau ngw: what it shows', () => {
  test('NGW-8: the node report narrowed to the gateway, with totals and the flows not listed', () => {
    expect(nodeView('team-a/egress', REPORT, true)).toEqual({
      natGateway: 'team-a/egress',
      translated: true,
      address: '198.51.100.60',
      portRange: { min: 40000, max: 40001 },
      flows: { tcp: 2, udp: 1, icmp: 0, total: 3 },
      portsInUse: { tcp: 2, udp: 1, icmp: 0 },
      newFlowPackets: 7,
      drops: { insertFailed: 3, conntrackDrop: 3, tunnelRefused: 1 },
      flowList: REPORT.gateways[0]!.flows.listed,
      flowsNotListed: 1,
    });
    expect(nodeView('team-a/gone', REPORT, false)).toMatchObject({ translated: false, flows: { total: 0 } });
  });

  test('NGW-5, NGW-8: the table: address, range, flows and ports in use out of the range, the node-wide drops, the flows', () => {
    const text = renderNgw({
      ...nodeView('team-a/egress', REPORT, true),
      node: 'node-2',
      phase: 'Ready',
      pod: 'juneau-agent-x',
    });
    expect(text.split('\n')).toEqual([
      'NATGateway team-a/egress',
      '  gateway node:   node-2 (phase Ready; read in Pod juneau-agent-x)',
      '  address:        198.51.100.60',
      '  port range:     40000-40001 (2 ports)',
      '  flows:          3 (tcp 2, udp 1, icmp 0)',
      '  ports in use:   tcp 2/2, udp 1/2, icmp 0/2',
      '  new flows:      7 packets opened a flow through its translation',
      '  drops on node node-2 (node-wide, every gateway of the node: the kernel does not say which):',
      '    insert_failed    3   packets of new flows refused: no free port (NGW-5), or an insertion race',
      '    conntrack drop   3   packets conntrack dropped: a refused flow counts here too, or the table full',
      '    tunnel refused   1   from a tunnel but not a selected pod of its node, or VXLAN from no peer',
      '',
      'PROTOCOL   SOURCE             PORT    DESTINATION       STATE',
      'tcp        10.244.1.2:51000   40000   203.0.113.9:443   ESTABLISHED',
      'udp        10.244.2.3:53000   40001   203.0.113.53:53   -',
      `... and 1 more (at most ${FLOW_LIST_LIMIT} listed)`,
      '',
    ]);
  });

  test('a node that does not translate for it says so', () => {
    expect(renderNgw(nodeView('team-a/gone', REPORT, false))).toContain(
      'this node does not translate for it: no snat rule named team-a/gone in table ip juneau-ngw',
    );
  });
});

describe('kubectl juneau ngw: the gateway node', () => {
  const ngw = (status: Record<string, unknown> | undefined) =>
    ({
      apiVersion: 'juneau.loutres.me/v1alpha1',
      kind: 'NATGateway',
      metadata: { namespace: 'team-a', name: 'egress' },
      status,
    }) as never;

  test('status.nodeName, or why there is none: not found; no node yet with the phase and the condition', () => {
    expect(
      gatewayNodeOf(ngw({ phase: 'Ready', nodeName: 'node-2', address: '198.51.100.60' }), 'team-a/egress'),
    ).toEqual({
      ok: true,
      node: 'node-2',
      phase: 'Ready',
      address: '198.51.100.60',
    });
    expect(gatewayNodeOf(undefined, 'team-a/egress')).toEqual({
      ok: false,
      message: 'natgateway team-a/egress not found',
    });
    expect(
      gatewayNodeOf(
        ngw({
          phase: 'Degraded',
          conditions: [
            { type: 'Allocated', status: 'True', reason: 'AddressAllocated' },
            { type: 'Ready', status: 'False', reason: 'NoGatewayNode', message: 'node-1: agent Lease expired' },
          ],
        }),
        'team-a/egress',
      ),
    ).toEqual({
      ok: false,
      message:
        'NATGateway team-a/egress has no gateway node yet (phase Degraded; Ready: NoGatewayNode (node-1: agent Lease expired)): no node translates for it',
    });
    expect(gatewayNodeOf(ngw(undefined), 'team-a/egress')).toMatchObject({
      message: 'NATGateway team-a/egress has no gateway node yet (phase Pending): no node translates for it',
    });
  });
});

/** What the agent Pod's `ngw --local -o json` answers in the end-to-end tests below. */
const NODE_VIEW = nodeView('team-a/egress', REPORT, false);

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

describe('kubectl juneau ngw: end to end but for the cluster (an API server stand-in, a recording kubectl)', () => {
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
});
