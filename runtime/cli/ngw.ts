/**
 * `kubectl juneau ngw NAMESPACE/NAME` (NGW-8): a NATGateway's address and gateway node from the API
 * server, then what that node's kernel holds for it, read there: its flows and the ports they hold
 * out of its range, the packets that opened flows, and what the node refused (NGW-5). The node's
 * part runs in its juneau-agent Pod (kubectl exec, as `bpf --node` does: `ngw ... --local -o json`,
 * runtime/agent/ngw/observe.ts), so the figures are the ones the agent's metrics read.
 */
import type { NATGateway } from '../../api';
import { NGW } from '../agent/ngw/desired';
import { NGW_PROTOCOLS, type NgwFlow, type NgwProtocol } from '../agent/ngw/conntrack';
import { readNgwNode, type NgwNodeDrops, type NgwNodeReport } from '../agent/ngw/observe';
import { JuneauResources } from '../kube/resources';
import { getOrUndefined, type RestClient } from '../kube/rest';
import type { Stored } from '../kube/types';
import { table } from './format';

/** `--flows` lists at most this many flows (the counts are of all of them). */
export const FLOW_LIST_LIMIT = 100;

/** What the gateway node holds for one NATGateway (`ngw --local -o json`). */
export interface NgwNodeView {
  readonly natGateway: string;
  /** Whether the node translates for it (a snat rule named after it in table ip juneau-ngw). */
  readonly translated: boolean;
  readonly address?: string;
  readonly portRange?: { readonly min: number; readonly max: number };
  readonly flows: Readonly<Record<NgwProtocol | 'total', number>>;
  readonly portsInUse: Readonly<Record<NgwProtocol, number>>;
  readonly newFlowPackets: number;
  /** Node-wide: the kernel's counters do not say which gateway. */
  readonly drops: NgwNodeDrops;
  /** With --flows: the first FLOW_LIST_LIMIT flows. */
  readonly flowList?: readonly NgwFlow[];
  readonly flowsNotListed?: number;
}

/** What the API server says, beside it. */
export interface NgwView extends NgwNodeView {
  readonly phase: string;
  readonly node: string;
  readonly pod: string;
}

/** The node's report narrowed to one gateway. Pure. */
export function nodeView(name: string, report: NgwNodeReport, listed: boolean): NgwNodeView {
  const g = report.gateways.find((x) => x.gateway.name === name);
  const zero = Object.fromEntries(NGW_PROTOCOLS.map((p) => [p, 0])) as Record<NgwProtocol, number>;
  const flows = g?.flows.flows ?? zero;
  const total = NGW_PROTOCOLS.reduce((s, p) => s + flows[p], 0);
  return {
    natGateway: name,
    translated: g !== undefined,
    ...(g ? { address: g.gateway.address, portRange: g.gateway.portRange } : {}),
    flows: { ...flows, total },
    portsInUse: g?.flows.portsInUse ?? zero,
    newFlowPackets: g?.gateway.newFlowPackets ?? 0,
    drops: report.drops,
    ...(listed ? { flowList: g?.flows.listed ?? [], flowsNotListed: total - (g?.flows.listed.length ?? 0) } : {}),
  };
}

/** On this node (in its network namespace): the gateway `name` (`namespace/name`). */
export function localNgw(name: string, listFlows: boolean): NgwNodeView {
  const report = readNgwNode({ only: name, listLimit: listFlows ? FLOW_LIST_LIMIT : 0 });
  return nodeView(name, report, listFlows);
}

export type GatewayLookup =
  | { readonly ok: true; readonly node: string; readonly phase: string; readonly address: string }
  | { readonly ok: false; readonly message: string };

/** The NATGateway's gateway node, or why there is none to ask. */
export async function findGatewayNode(rest: RestClient, namespace: string, name: string): Promise<GatewayLookup> {
  const ngw = await getOrUndefined<Stored<NATGateway>>(rest, JuneauResources.natGateways, namespace, name);
  return gatewayNodeOf(ngw, `${namespace}/${name}`);
}

/** Pure: the gateway node `status.nodeName` names, or why there is none (not found; no node yet,
 * with the phase and the first condition that is not True). */
export function gatewayNodeOf(ngw: Stored<NATGateway> | undefined, key: string): GatewayLookup {
  if (!ngw) return { ok: false, message: `natgateway ${key} not found` };
  const status = ngw.status;
  const phase = status?.phase ?? 'Pending';
  if (!status?.nodeName) {
    const why = (status?.conditions ?? []).find((c) => c.status !== 'True');
    const reason = why ? `; ${why.type}: ${why.reason ?? ''}${why.message ? ` (${why.message})` : ''}` : '';
    return {
      ok: false,
      message: `NATGateway ${key} has no gateway node yet (phase ${phase}${reason}): no node translates for it`,
    };
  }
  return { ok: true, node: status.nodeName, phase, address: status.address ?? '' };
}

const protocols = (f: (p: NgwProtocol) => string) => NGW_PROTOCOLS.map((p) => `${p} ${f(p)}`).join(', ');

/** The view as lines and tables. Pure. */
export function renderNgw(v: NgwNodeView & Partial<Pick<NgwView, 'phase' | 'node' | 'pod'>>): string {
  const where = v.node ? `node ${v.node}` : 'this node';
  const lines = [`NATGateway ${v.natGateway}`];
  if (v.node) lines.push(`  gateway node:   ${v.node} (phase ${v.phase ?? '-'}; read in Pod ${v.pod ?? '-'})`);
  if (!v.translated) {
    lines.push(`  ${where} does not translate for it: no snat rule named ${v.natGateway} in table ip ${NGW.nftTable}`);
  } else {
    const size = v.portRange!.max - v.portRange!.min + 1;
    lines.push(
      `  address:        ${v.address}`,
      `  port range:     ${v.portRange!.min}-${v.portRange!.max} (${size} ports)`,
      `  flows:          ${v.flows.total} (${protocols((p) => String(v.flows[p]))})`,
      `  ports in use:   ${protocols((p) => `${v.portsInUse[p]}/${size}`)}`,
      `  new flows:      ${v.newFlowPackets} packets opened a flow through its translation`,
    );
  }
  lines.push(
    `  drops on ${where} (node-wide, every gateway of the node: the kernel does not say which):`,
    `    insert_failed    ${v.drops.insertFailed}   packets of new flows refused: no free port (NGW-5), or an insertion race`,
    `    conntrack drop   ${v.drops.conntrackDrop}   packets conntrack dropped: a refused flow counts here too, or the table full`,
    `    tunnel refused   ${v.drops.tunnelRefused}   from a tunnel but not a selected pod of its node, or VXLAN from no peer`,
  );
  let out = lines.join('\n') + '\n';
  if (v.flowList) {
    out += '\n';
    out += v.flowList.length
      ? table(
          ['PROTOCOL', 'SOURCE', 'PORT', 'DESTINATION', 'STATE'],
          v.flowList.map((f) => [
            f.protocol,
            `${f.source}:${f.sourcePort}`,
            String(f.port),
            f.protocol === 'icmp' ? f.destination : `${f.destination}:${f.destinationPort}`,
            f.state ?? '-',
          ]),
        )
      : 'no flows\n';
    if (v.flowsNotListed) out += `... and ${v.flowsNotListed} more (at most ${FLOW_LIST_LIMIT} listed)\n`;
  }
  return out;
}
