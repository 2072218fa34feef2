// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Copyright Juneau authors */

/*
 * The benchmark's ceiling: sends every frame straight back out (XDP_TX) after swapping the
 * Ethernet addresses, with no parsing and no map lookup. No responder on this rig can
 * reply faster than this program reflects.
 */

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_reflect(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = (void *)(long)ctx->data;
	__u8 tmp[ETH_ALEN];

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	__builtin_memcpy(tmp, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, tmp, ETH_ALEN);
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
