// Where the pod holding a NIC address is, as this node sees it: what each NAT binding is tied to
// besides its address (bpf/juneau_maps.h struct juneau_nat_value; H1/M3 of the security review).
import type { PodDevice } from './layout';
import { directRouteDevice, neighbourMac } from '../netlink';

/**
 * The pod's host-side device is where this node routes its address (a link route, no gateway: a
 * veth, or the bridge the pods are on), and its MAC what the neighbour table holds for it there,
 * if anything yet. An address the node does not route to a link of its own (one of its own,
 * through a gateway, none) has no device: nothing of its binding is translated.
 */
export function resolvePodDevice(address: string): PodDevice {
  const ifindex = directRouteDevice(address) ?? 0;
  const mac = ifindex ? neighbourMac(address, ifindex) : undefined;
  return mac ? { ifindex, mac } : { ifindex };
}
