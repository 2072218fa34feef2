// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Copyright Juneau authors */

/*
 * bench/nat's floor: on the node's ext0 ingress, every frame goes straight to
 * the pod's device with the pod's MAC, unparsed and untranslated. The pod
 * then does exactly what it does in the other variants (counts the frame and
 * drops it in its prerouting hook), so the floor is the rig's own cost per
 * packet (generator, both veth crossings, the pod) and what a variant adds
 * over it is the node's cost. bench/nat/run.ts compiles it with the pod
 * device's ifindex and the MACs as -D definitions.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int tc_floor(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	const __u8 dmac[ETH_ALEN] = { FLOOR_DMAC };
	const __u8 smac[ETH_ALEN] = { FLOOR_SMAC };

	if ((void *)(eth + 1) > data_end)
		return TC_ACT_OK;
	__builtin_memcpy(eth->h_dest, dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, smac, ETH_ALEN);
	return bpf_redirect(FLOOR_IFINDEX, 0);
}

char _license[] SEC("license") = "Dual BSD/GPL";
