// `kubectl juneau ngw NAMESPACE/NAME` (runtime/cli/ngw.ts, args.ts): its command line, the node's
// report narrowed to one gateway, what it prints, and why there is no node to ask.
import { parseCommandLine } from '../../../runtime/cli/args';
import { CLI_HELP } from '../../../runtime/cli/main';
import { FLOW_LIST_LIMIT, gatewayNodeOf, nodeView, renderNgw } from '../../../runtime/cli/ngw';
import type { NgwNodeReport } from '../../../runtime/agent/ngw/observe';

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
