/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Copyright Juneau authors */

/*
 * The counted exit shared by the programs (xdp_arp, tc_nat): every exit adds
 * one packet to its reason's slot in a per-CPU stats array. Kept out of
 * juneau_maps.h, which holds layouts only and is compiled without the BPF
 * helpers by test/unit/btf.ts.
 */
#ifndef JUNEAU_STATS_H
#define JUNEAU_STATS_H

#include <bpf/bpf_helpers.h>
#include "juneau_maps.h"

/* stats: a BPF_MAP_TYPE_PERCPU_ARRAY of struct juneau_stats_value indexed by
 * reason (juneau_stats, juneau_nat_stats). Always inlined, so the map stays a
 * constant in each program and the instructions are those of a direct call. */
static __always_inline void juneau_count(void *stats, __u32 reason)
{
	struct juneau_stats_value *v = bpf_map_lookup_elem(stats, &reason);

	if (v)
		v->packets++;	/* per-CPU slot: no atomic needed */
}

#endif
