/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Copyright Juneau authors */

/*
 * A no-op XDP program. Two uses: the benchmark's ceiling (bench/arp: the cost
 * of running any XDP program at all on the rig), and the veth peer's program
 * in native-mode tests, because a veth drops XDP_TX frames unless its peer
 * has an XDP program attached.
 */

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
