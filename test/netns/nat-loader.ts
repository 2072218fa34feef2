// The NAT counterpart of xdp-loader.ts: run as a separate process inside the node network
// namespace (TC attach uses netlink and ifindexes of the caller's namespace), it loads
// bpf/tc_nat.bpf.o and exits, so a test proves the filters and maps outlive their loader.
//
// Usage: tsx test/netns/nat-loader.ts attach|detach|filters '<json>' -> one JSON line on stdout.
import { ifNameToIndex } from '../../runtime/agent/bpf/libbpf';
import { attachNat, detachNat, natFilters } from '../../runtime/agent/bpf/nat';
import { ensureVxlanDevice, setLinkUp } from '../../runtime/agent/nat/vxlan';

interface Request {
  readonly ext: string;
  readonly pods?: string[];
  readonly pinDir: string;
  /** Make the agent's VXLAN device bound to this node address on `ext`, attach tc_nat_tun to it,
   * then bring it up, as the agent does (EN-9, H3). */
  readonly tunnel?: string;
  /** Inbound through the kernel's forwarding after the DNAT (--nat-kernel-forward, M2). */
  readonly kernelForward?: boolean;
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
  } else if (command === 'filters') {
    process.stdout.write(JSON.stringify({ ext: natFilters(ext), pods: pods.map(natFilters) }) + '\n');
  } else {
    throw new Error(`unknown command '${command}'`);
  }
}

main();
