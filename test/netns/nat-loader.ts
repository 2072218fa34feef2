// The NAT counterpart of xdp-loader.ts: run as a separate process inside the node network
// namespace (TC attach uses netlink and ifindexes of the caller's namespace), it loads
// bpf/tc_nat.bpf.o and exits, so a test proves the filters and maps outlive their loader.
//
// Usage: tsx test/netns/nat-loader.ts attach|detach|filters '<json>' -> one JSON line on stdout.
import { ifNameToIndex } from '../../runtime/agent/bpf/libbpf';
import { NatMaps, attachNat, detachNat, natFilters, type DirectBinding } from '../../runtime/agent/bpf/nat';
import { NatDataplane } from '../../runtime/agent/nat/attach';
import { VXLAN_DEVICE, ensureVxlanDevice, setLinkUp } from '../../runtime/agent/nat/vxlan';

interface Request {
  readonly ext: string;
  readonly pods?: string[];
  readonly pinDir: string;
  /** Make the agent's VXLAN device bound to this node address on `ext`, attach tc_nat_tun to it,
   * then bring it up, as the agent does (EN-9, H3). */
  readonly tunnel?: string;
  /** Inbound through the kernel's forwarding after the DNAT (--nat-kernel-forward, M2). */
  readonly kernelForward?: boolean;
  /** dataplane: this node's address (the Node's InternalIP) and the direct bindings to sync. */
  readonly self?: string;
  readonly direct?: DirectBinding[];
  /** dataplane: the object to load tc_nat_tun from. @default the built one */
  readonly objectPath?: string;
}

function ifindexOrZero(name: string): number {
  try {
    return ifNameToIndex(name);
  } catch {
    return 0;
  }
}

/** What the agent's NatDataplane does with the VXLAN device for one pass over `direct` (H3). */
function dataplane(request: Request): object {
  const maps = NatMaps.openPinned(request.pinDir);
  try {
    const errors: string[] = [];
    const { pinDir, objectPath } = request;
    const dp = new NatDataplane(maps, { pinDir, objectPath, onTunnelError: (err) => errors.push(err.message) });
    dp.setNodes(request.self, request.self ? [request.self] : []);
    dp.sync([], request.direct ?? [], []);
    const device = ifindexOrZero(VXLAN_DEVICE);
    return { tunnel: dp.tunnel, device, tun: device ? natFilters(device).tun : 0, errors };
  } finally {
    maps.close();
  }
}

function main(): void {
  const [command, json] = process.argv.slice(2);
  const request = JSON.parse(json ?? '{}') as Request;
  const ext = ifNameToIndex(request.ext);
  const pods = (request.pods ?? []).map(ifNameToIndex);
  if (command === 'attach') {
    const tunnel = request.tunnel ? ensureVxlanDevice({ local: request.tunnel, link: ext }) : undefined;
    const { pinDir, kernelForward } = request;
    attachNat({ extIfindex: ext, podIfindexes: pods, pinDir, tunnelIfindex: tunnel, kernelForward }).close();
    if (tunnel) setLinkUp(tunnel);
    const tunnelFilters = tunnel ? { tunnel, tunnelFilters: natFilters(tunnel) } : {};
    process.stdout.write(JSON.stringify({ ext, pods, filters: natFilters(ext), ...tunnelFilters }) + '\n');
  } else if (command === 'detach') {
    const removed = [ext, ...pods].map((i) => detachNat(i, request.pinDir));
    process.stdout.write(JSON.stringify({ removed }) + '\n');
  } else if (command === 'dataplane') {
    process.stdout.write(JSON.stringify(dataplane(request)) + '\n');
  } else if (command === 'filters') {
    process.stdout.write(JSON.stringify({ ext: natFilters(ext), pods: pods.map(natFilters) }) + '\n');
  } else {
    throw new Error(`unknown command '${command}'`);
  }
}

main();
