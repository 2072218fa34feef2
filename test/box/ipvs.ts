// What kube-proxy in ipvs mode does to a node's ARP, on a kernel without IPVS. Each node's real
// kube-proxy runs in nftables mode (it DNATs the traffic); ipvs mode would also put every
// LoadBalancer VIP on a `kube-ipvs0` interface of every node, and with `strictARP: false` (the
// kubeadm and kubespray default) leave arp_ignore=0, so every node's kernel answers ARP for every
// VIP — the incident OPS-1 describes. This kernel has neither IPVS nor the dummy driver, so `kube-ipvs0`
// is a veth left down (its addresses are local all the same, as on a real kube-ipvs0, which is
// down too), and a small loop per node keeps the Services' `status.loadBalancer.ingress`
// addresses on it, as kube-proxy's ipvs proxier would (ClusterIPs and externalIPs, which ipvs mode
// also binds there, are left out: no test here asks a node's kernel for them).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { inNetns } from './exec';
import { NodeRecord } from './state';

export const KUBE_IPVS0 = 'kube-ipvs0';

/** `kube-ipvs0` (down) with arp_ignore=0 where the kernel reads it: `all` and the receiving eth0. */
export async function createKubeIpvs0(node: NodeRecord): Promise<void> {
  await inNetns(node.netns, 'ip', ['link', 'add', KUBE_IPVS0, 'type', 'veth', 'peer', 'name', 'ipvs-peer']);
  for (const dev of ['all', 'eth0', KUBE_IPVS0]) {
    await inNetns(node.netns, 'sh', ['-c', `echo 0 > /proc/sys/net/ipv4/conf/${dev}/arp_ignore`]);
  }
}

/**
 * The sync loop, a shell script run as a node daemon: on every Service event (kubectl's watch,
 * restarted when the server ends it) the LoadBalancer ingress addresses of all Services are read
 * and kube-ipvs0's addresses made equal to them.
 */
export function writeIpvsSyncScript(node: NodeRecord): string {
  const file = path.join(node.dir, 'kube-ipvs0-sync.sh');
  fs.writeFileSync(
    file,
    `#!/bin/sh
# usage: kube-ipvs0-sync.sh KUBECTL KUBECONFIG
set -u
K="$1"; C="$2"
sync() {
  want=$("$K" --kubeconfig "$C" get services -A -o 'jsonpath={range .items[*]}{range .status.loadBalancer.ingress[*]}{.ip}{" "}{end}{end}') || return 0
  have=$(ip -4 -o addr show dev ${KUBE_IPVS0} | awk '{ split($4, a, "/"); print a[1] }')
  for a in $want; do case " $(echo $have) " in *" $a "*) ;; *) ip addr add "$a/32" dev ${KUBE_IPVS0} && echo "added $a";; esac; done
  for a in $have; do case " $want " in *" $a "*) ;; *) ip addr del "$a/32" dev ${KUBE_IPVS0} && echo "removed $a";; esac; done
}
while :; do
  "$K" --kubeconfig "$C" get services -A --watch -o name | while read -r _; do sync; done
  sleep 1
done
`,
    { mode: 0o755 },
  );
  return file;
}
