/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Copyright Juneau authors */

/*
 * Where an entry of the ARP responder's maps sits (juneau_maps.h describes the
 * maps): the slot of an address in juneau_arp_slots, its bit in
 * juneau_arp_filter, the slot of an interface in juneau_config. The agent
 * computes the same (runtime/agent/bpf/layout/arp.ts arpSlot, arpFilterBit,
 * configSlot) to place entries where xdp_arp looks for them;
 * test/unit/bpf/layout.test.ts compiles this header for the host and
 * compares. Plain C over the layouts, no BPF helpers.
 */
#ifndef __JUNEAU_SLOTS_H
#define __JUNEAU_SLOTS_H

#include "juneau_maps.h"

/* The probe-th slot of an address: the top 14 bits of the multiplicative
 * hash of juneau_arp_filter_bit() (its four bytes as one host-order word),
 * then linear probing. */
static inline __u32 juneau_arp_slot(__be32 addr, __u32 probe)
{
	return ((((__u32)addr * 0x9e3779b1u) >> 18) + probe) & (JUNEAU_ARP_SLOTS - 1);
}

/* The bit of an address: the top 16 bits of a multiplicative hash of its four
 * bytes read as one host-order (little-endian) word. */
static inline __u32 juneau_arp_filter_bit(__be32 addr)
{
	return ((__u32)addr * 0x9e3779b1u) >> 16;
}

/* The probe-th slot of an interface's juneau_config entry: linear probing
 * from its ifindex. */
static inline __u32 juneau_config_slot(__u32 ifindex, __u32 probe)
{
	return (ifindex + probe) & (JUNEAU_CONFIG_MAX - 1);
}

#endif /* __JUNEAU_SLOTS_H */
