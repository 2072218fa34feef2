/**
 * The line format between `juneau-cni` (cni/juneau-cni.c) and the agent's CNI server (./server.ts).
 * Pure. The C side's comment is the reference for the format; this file reads its requests and
 * writes the answers it carries out.
 */

/** The request's first line; anything else is refused (a different plugin version or a stray client). */
export const REQUEST_MAGIC = 'juneau-cni 1';

export type CniCommand = 'ADD' | 'DEL' | 'CHECK' | 'VERSION' | 'GC' | 'STATUS';

export interface CniRequest {
  readonly command: string;
  readonly containerId: string;
  readonly netns: string;
  readonly ifname: string;
  /** CNI_ARGS as key=value pairs (K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_UID, ...). */
  readonly args: Readonly<Record<string, string>>;
  /** The network configuration from the plugin's stdin, parsed; {} when it is not a JSON object. */
  readonly config: NetConf;
}

/** The parts of a network configuration this plugin reads (CNI spec 1.0 "Network configuration"). */
export interface NetConf {
  readonly cniVersion?: string;
  readonly name?: string;
  readonly prevResult?: CniResult;
  readonly [key: string]: unknown;
}

/** A CNI result (spec 1.0 "Success"; 0.3.x/0.4.0 have the same shape plus `ips[].version`). */
export interface CniResult {
  readonly cniVersion?: string;
  readonly interfaces?: ReadonlyArray<{ readonly name?: string; readonly sandbox?: string; readonly mac?: string }>;
  readonly ips?: ReadonlyArray<{
    readonly address?: string;
    readonly gateway?: string;
    readonly interface?: number;
    readonly version?: string;
  }>;
  readonly routes?: ReadonlyArray<{ readonly dst?: string; readonly gw?: string }>;
  readonly dns?: unknown;
  readonly [key: string]: unknown;
}

/** One step the plugin carries out inside CNI_NETNS, in order. */
export type NetnsStep =
  | { readonly op: 'addr-add' | 'addr-del' | 'addr-check'; readonly cidr: string; readonly ifname: string }
  | { readonly op: 'route-default'; readonly gateway: string; readonly source: string; readonly ifname: string };

export interface CniAnswer {
  /** The plugin's exit code. */
  readonly status: 0 | 1;
  readonly steps: readonly NetnsStep[];
  /** What the plugin prints on stdout: the result, or the CNI error object. */
  readonly body: string;
}

/** Parses a request; throws an Error naming what is wrong (the server answers it as a CNI error). */
export function parseRequest(text: string): CniRequest {
  const split = text.indexOf('\n\n');
  if (split < 0) throw new Error('request without the empty line that ends its header');
  const [magic, ...lines] = text.slice(0, split).split('\n');
  if (magic !== REQUEST_MAGIC) throw new Error(`request starts with ${JSON.stringify(magic)}, not "${REQUEST_MAGIC}"`);
  const env = new Map<string, string>();
  for (const line of lines) {
    const eq = line.indexOf('=');
    if (eq > 0) env.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return {
    command: env.get('CNI_COMMAND') ?? '',
    containerId: env.get('CNI_CONTAINERID') ?? '',
    netns: env.get('CNI_NETNS') ?? '',
    ifname: env.get('CNI_IFNAME') ?? '',
    args: parseCniArgs(env.get('CNI_ARGS') ?? ''),
    config: parseConfig(text.slice(split + 2)),
  };
}

/** CNI_ARGS: `K1=V1;K2=V2` (CNI spec "Parameters"). */
export function parseCniArgs(value: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of value.split(';')) {
    const eq = pair.indexOf('=');
    if (eq > 0) out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

function parseConfig(text: string): NetConf {
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as NetConf) : {};
  } catch {
    return {};
  }
}

/** The answer as the plugin reads it: header lines, an empty line, the body. */
export function formatAnswer(answer: CniAnswer): string {
  const steps = answer.steps.map((s) =>
    s.op === 'route-default' ? `${s.op} ${s.gateway} ${s.source} ${s.ifname}` : `${s.op} ${s.cidr} ${s.ifname}`,
  );
  return [`status ${answer.status}`, ...steps, '', answer.body].join('\n');
}

/** CNI spec 1.0 error codes this plugin returns. */
export const CNI_ERRORS = {
  /** "Try again later": the kubelet retries the sandbox (EIP-13, CNI-2). */
  tryAgainLater: 11,
  invalidConfig: 7,
  /** Plugin-specific (100+): a Pod annotation Juneau cannot read. */
  invalidAnnotation: 100,
  /** Plugin-specific: the agent refused the peer (not root, server.ts). */
  refused: 101,
} as const;

export function errorAnswer(cniVersion: string | undefined, code: number, msg: string, details?: string): CniAnswer {
  const body = JSON.stringify({ cniVersion: cniVersion ?? '1.0.0', code, msg, ...(details ? { details } : {}) });
  return { status: 1, steps: [], body };
}
