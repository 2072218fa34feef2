// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Copyright Juneau authors */

/*
 * FO-1: the map juneau_announce, alone in its object. No program: the agent
 * loads this object only to create (or adopt) the pinned map, whose layout is
 * in juneau_arp.h, and writes it from user space when it probes and announces
 * (runtime/agent/announce/counters.ts).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "juneau_arp.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct juneau_arp_key);
	__type(value, struct juneau_announce_value);
	__uint(max_entries, JUNEAU_ANNOUNCE_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} juneau_announce SEC(".maps");

char LICENSE[] SEC("license") = "Dual BSD/GPL";
