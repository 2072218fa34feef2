// What a cluster in a box creates, recorded on disk *before* each thing is created, so `down`
// can remove all of it after a crash (of `up`, of a daemon, of the machine's Node process): the
// names are derived from a random box id, the addresses from a claimed subnet index.
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Host-wide records shared by every box on this machine: subnet claims, saved sysctls. */
export const HOST_DIR = '/run/juneau-box';
/** Nodes' data (containerd roots, kubelet root dirs, pod logs): outside the repository, so no
 * tool walking the work tree meets overlay mounts and sockets. */
export const DATA_ROOT = '/var/lib/juneau-box';
/** The L2 segment of box k is 10.226.k.0/24 (the host's end .1, node i .11+i); node i's pods get
 * 10.227.(8k+i).0/24. At most 32 boxes of at most 8 nodes each on one machine. */
export const MAX_NODES = 8;
const MAX_BOXES = 32;

export interface ProcessRecord {
  name: string;
  /** Node name, or undefined for a host process (kube-scheduler). */
  node?: string;
  pid: number;
  bin: string;
  logFile: string;
}

export interface NodeRecord {
  name: string;
  netns: string;
  /** Host end of the node's veth (a port of the box bridge). */
  hostVeth: string;
  ip: string;
  podCidr: string;
  /** How many addresses of podCidr its CNI hands out (`up --pod-ips N`, from .2), e.g. few to make
   * a freed pod address come back soon (SEC-1). @default the whole range */
  podIPs?: number;
  /** The node's cgroup (same relative path in every v1 hierarchy): kubelet's cgroupRoot. */
  cgroup: string;
  dir: string;
}

export interface BoxState {
  id: string;
  /** Index of the claimed subnet (see HOST_DIR/subnet-k): the pods' ranges, and the default segment. */
  subnet: number;
  /** The nodes' L2 segment, a /24 given by its first three octets: `10.226.k` unless `up --node-subnet`. */
  segment: string;
  bridge: string;
  hostIp: string;
  clusterCidr: string;
  dataDir: string;
  nodes: NodeRecord[];
  /** Routes added in the host namespace (`ip route del` arguments). */
  hostRoutes: string[];
  processes: ProcessRecord[];
  images: string[];
  startedAt: string;
  timings?: Record<string, number>;
}

export function checkNodeCount(nodeCount: number): void {
  if (!Number.isInteger(nodeCount) || nodeCount < 1 || nodeCount > MAX_NODES) {
    throw new Error(`--nodes must be an integer from 1 to ${MAX_NODES}, got ${nodeCount}`);
  }
}

/**
 * `--node-subnet A.B.C.0/24` -> `A.B.C`: the nodes' segment when a test or a user needs the nodes
 * on a given network (the install examples' pool is 10.225.32.240-250, which must lie in the
 * nodes' subnet, EN-12). Only a /24: the host takes .1, node i .11+i.
 */
export function parseNodeSubnet(cidr: string): string {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.0\/24$/.exec(cidr);
  if (!m || m.slice(1).some((o) => Number(o) > 255))
    throw new Error(`--node-subnet: expected an IPv4 /24 like 10.225.32.0/24, got ${JSON.stringify(cidr)}`);
  return m.slice(1, 4).join('.');
}

export function newBoxState(nodeCount: number, stateFile: string, segmentOverride?: string, podIPs?: number): BoxState {
  checkNodeCount(nodeCount);
  // A segment already routed on the host (another box's, a real network) would be shadowed.
  if (segmentOverride && hostRoutes().some((r) => r.startsWith(`${segmentOverride}.`)))
    throw new Error(
      `--node-subnet: ${segmentOverride}.0/24 is already routed on this host (another box, or a real network)`,
    );
  const id = randomBytes(3).toString('hex');
  const subnet = claimSubnet(stateFile);
  const segment = segmentOverride ?? `10.226.${subnet}`;
  const dataDir = path.join(DATA_ROOT, id);
  const nodes = Array.from({ length: nodeCount }, (_, i): NodeRecord => {
    const name = `node-${i}`;
    return {
      name,
      netns: `jb-${id}-${name}`,
      hostVeth: `jb${id}h${i}`,
      ip: `${segment}.${11 + i}`,
      podCidr: `10.227.${subnet * MAX_NODES + i}.0/24`,
      ...(podIPs ? { podIPs } : {}),
      cgroup: `juneau-box-${id}-${name}`,
      dir: path.join(dataDir, name),
    };
  });
  return {
    id,
    subnet,
    segment,
    bridge: `jb${id}`,
    hostIp: `${segment}.1`,
    clusterCidr: `10.227.${subnet * MAX_NODES}.0/21`,
    dataDir,
    nodes,
    hostRoutes: [],
    processes: [],
    images: [],
    startedAt: new Date().toISOString(),
  };
}

/** Box state on disk: rewritten whole (write + rename) after every change. */
export class BoxRecorder {
  constructor(
    readonly file: string,
    readonly state: BoxState,
  ) {}

  save(): void {
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    fs.writeFileSync(`${this.file}.tmp`, JSON.stringify(this.state, null, 2) + '\n');
    fs.renameSync(`${this.file}.tmp`, this.file);
  }

  record(mutate: (s: BoxState) => void): void {
    mutate(this.state);
    this.save();
  }
}

export function readBoxState(file: string): BoxState | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as BoxState;
  } catch {
    return undefined;
  }
}

/**
 * Claims the first free subnet index with an exclusive create of HOST_DIR/subnet-k holding the
 * claiming box's state file; a claim whose state file is gone is stale (its box was removed
 * without `down`, e.g. a deleted temporary directory) and is taken over.
 */
function claimSubnet(stateFile: string): number {
  fs.mkdirSync(HOST_DIR, { recursive: true });
  const routed = hostRoutes();
  for (let k = 0; k < MAX_BOXES; k++) {
    if (routed.some((r) => r.startsWith(`10.226.${k}.`))) continue;
    const claim = path.join(HOST_DIR, `subnet-${k}`);
    try {
      fs.writeFileSync(claim, stateFile, { flag: 'wx' });
      return k;
    } catch {
      const owner = fs.readFileSync(claim, 'utf8');
      if (owner !== stateFile && fs.existsSync(owner)) continue;
      fs.writeFileSync(claim, stateFile);
      return k;
    }
  }
  throw new Error(`no free box subnet: ${MAX_BOXES} boxes claimed in ${HOST_DIR} (run \`down\` on the others)`);
}

export function releaseSubnet(state: BoxState, stateFile: string): void {
  const claim = path.join(HOST_DIR, `subnet-${state.subnet}`);
  try {
    if (fs.readFileSync(claim, 'utf8') === stateFile) fs.rmSync(claim);
  } catch {
    /* never claimed or already released */
  }
}

function hostRoutes(): string[] {
  const routes = JSON.parse(execFileSync('ip', ['-j', 'route', 'show'], { encoding: 'utf8' })) as Array<{
    dst: string;
  }>;
  return routes.map((r) => r.dst);
}

/** The cached name of the pause binary build.sh --nodes builds (keyed by its source). */
export function pauseBinaryName(): string {
  const source = fs.readFileSync(path.join(__dirname, '..', 'cluster', 'pause', 'main.go'));
  return `pause-${createHash('sha256').update(source).digest('hex').slice(0, 12)}`;
}
