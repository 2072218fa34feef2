/**
 * BGP-3, BGP-5: what the ServiceLoadBalancer plan reads of BGP, from the controller's caches, and
 * the changes that bring a bgp ServiceLoadBalancer's key back.
 */
import { advertisementView, peerView } from '../../../api/validation';
import { objectKey } from '../../kube/types';
import type { Caches, ControllerContext } from '../context';
import { watch, type Watch } from '../reconciler';
import type { BGPInputs } from './announcers';

/** The advertisements, peers, node reports and node labels, and the nodes with a live agent. */
export function bgpInputs(
  ctx: Pick<ControllerContext, 'caches'>,
  liveNodes: readonly string[],
): BGPInputs & { liveNodes: readonly string[] } {
  const c = ctx.caches;
  return {
    advertisements: c.bgpAdvertisements.list().map((a) => advertisementView(a)),
    peers: c.bgpPeers.list().map((p) => peerView(p)),
    nodeStates: new Map(c.bgpNodeStates.list().flatMap((s) => (s.status ? [[s.spec.nodeName, s.status]] : []))),
    nodeLabels: new Map(c.nodes.list().map((n) => [n.metadata.name ?? '', n.metadata.labels])),
    liveNodes,
  };
}

/** Changes batched for this long: a router flap reaches every node's report within moments. */
export const BGP_BATCH_MS = 1000;

/**
 * The ServiceLoadBalancers a BGP change affects: every one on a bgp network for a change of an
 * advertisement, a peer or a Node's labels; for a node's report, those that list the node in
 * advertisingNodes (the report changes only whether that node announces).
 */
export function bgpWatches(c: Caches): Watch[] {
  const bgpNetworks = () =>
    new Set(
      c.externalNetworks
        .list()
        .filter((n) => n.spec.type === 'bgp')
        .map(objectKey),
    );
  const onBgp = () => {
    const networks = bgpNetworks();
    return c.serviceLoadBalancers
      .list()
      .filter((s) => networks.has(s.spec.externalNetwork ?? ''))
      .map(objectKey);
  };
  return [
    watch(c.bgpAdvertisements, onBgp),
    watch(c.bgpPeers, onBgp),
    watch(c.nodes, onBgp, BGP_BATCH_MS),
    watch(
      c.bgpNodeStates,
      (s) =>
        c.serviceLoadBalancers
          .list()
          .filter((slb) => slb.status?.advertisingNodes?.includes(s.spec.nodeName))
          .map(objectKey),
      BGP_BATCH_MS,
    ),
  ];
}
