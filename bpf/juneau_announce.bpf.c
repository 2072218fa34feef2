/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Copyright Juneau authors */

/*
 * FO-1: the map juneau_announce, alone in its object. No program: the agent
 * loads this object only to create (or adopt) the pinned map, whose layout is
 * in juneau_maps.h, and writes it from user space when it probes and announces
 * (runtime/agent/announce/counters.ts; layout in runtime/agent/bpf/layout/announce.ts).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "juneau_maps.h"

JUNEAU_MAP(juneau_announce, BPF_MAP_TYPE_HASH, struct juneau_arp_key,
	   struct juneau_announce_value, JUNEAU_ANNOUNCE_MAX, BPF_F_NO_PREALLOC);

char LICENSE[] SEC("license") = "Dual BSD/GPL";
