/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Copyright Juneau authors */

/*
 * The one header with the map layouts shared by the eBPF programs (the XDP
 * ARP responder, the TC ElasticIP NAT, the FO-1 announce map) and the agent.
 *
 * runtime/agent/bpf/layout/ mirrors every struct and constant below, and
 * test/unit/bpf/layout.test.ts compares the two against the BTF of the built
 * objects. Change both together.
 *
 * Rules: fixed-width types only, every hole is an explicit `pad` field the
 * writer zeroes, and every size is asserted so that a change shows up here
 * rather than as a silently misread map. No functions: the slot and filter
 * functions that say where an entry goes are in juneau_slots.h.
 */
#ifndef __JUNEAU_MAPS_H
#define __JUNEAU_MAPS_H

#include <linux/types.h>

#define JUNEAU_ETH_ALEN 6

/* Map sizes. A node answers only for its own ARPAdvertisements (ARP-1), so
 * 64 Ki addresses is far above any realistic node; pools become at most 62
 * prefixes per range (see runtime/agent/bpf/prefixes.ts). */
#define JUNEAU_ARP_TABLE_MAX	65536
#define JUNEAU_GUARD_MAX	4096
#define JUNEAU_CONFIG_MAX	64

/* VLAN tags (802.1Q 0x8100, 802.1ad 0x88a8) parsed in front of an ARP frame:
 * one, or two for QinQ; up to JUNEAU_VLAN_PRIORITY_MAX_DEPTH while they are
 * all priority tags (VLAN id 0), which the kernel strips at any depth. A frame
 * with more is passed to the kernel unparsed. */
#define JUNEAU_VLAN_MAX_DEPTH		2
#define JUNEAU_VLAN_PRIORITY_MAX_DEPTH	8

/* external_arp_table (ARP-10): the addresses this node answers for that did
 * not fit in juneau_arp_slots (below), and those an older agent inserted.
 * BPF_MAP_TYPE_PERCPU_HASH (BPF_F_NO_PREALLOC): every CPU counts into its own
 * copy of the value, so a request costs no atomic on a shared cache line; the
 * reader (runtime/agent/bpf/layout/arp.ts sumArpValues) sums the counters and
 * takes the last conflict from the CPU that saw the latest one. Not
 * preallocated: a per-CPU value costs its size times the CPUs, so only the
 * addresses present take memory. How its pin survives a layout change is
 * its entry in runtime/agent/bpf/pins.ts. */
struct juneau_arp_key {
	__be32 addr;			/* IPv4, network byte order */
};

struct juneau_arp_value {
	__u64 requests;			/* requests for addr that reached us */
	__u64 replies;			/* replies actually transmitted */
	__u64 conflicts;		/* RFC 5227 2.4: sender addr, foreign MAC */
	__u64 last_conflict_ns;		/* bpf_ktime_get_ns() of the last one */
	__u8  last_conflict_mac[JUNEAU_ETH_ALEN];
	__u8  pad[2];
};

/* juneau_arp_slots and juneau_arp_counters: where the program looks first for
 * an address it answers, without a call (array lookups the verifier inlines;
 * a hash lookup is a call chain, costly on a kernel with SRSO "Safe RET":
 * bench/README.md). An open-addressed table: the agent places an address in
 * the first free slot of juneau_arp_slot(addr, 0 .. JUNEAU_ARP_PROBES - 1)
 * (juneau_slots.h);
 * its counters are the per-CPU juneau_arp_counters entry of the same slot.
 * An address whose probes are all taken goes to external_arp_table, the
 * per-CPU hash, where the program looks when no probe holds it. Every address
 * is in exactly one of the two, and never moves while it stays, so its
 * counters stay exact (the readers sum the CPUs). The agent writes a slot's
 * counters (zero, or carried) before its address, and clears the address
 * first when it removes one; a free slot holds 0.0.0.0, which is never an
 * answered address. Sized for the common node: a per-CPU array preallocates
 * JUNEAU_ARP_SLOTS values per possible CPU. */
#define JUNEAU_ARP_SLOTS	16384
#define JUNEAU_ARP_PROBES	8

struct juneau_arp_slot {
	__be32 addr;			/* IPv4, network byte order; 0: free */
};

/* juneau_arp_filter[0]: one bit per hash of every address in
 * external_arp_table (juneau_arp_filter_bit(), juneau_slots.h), written by the
 * agent before it inserts an address and cleared only after it removed one, so
 * a clear bit proves the address is not in the table (set bits may be shared:
 * a false positive costs only the table lookup it would have cost anyway). The
 * program tests the sender address here before the conflict lookup and the
 * target before the answer lookup: an array lookup the verifier inlines, where
 * each hash lookup is a call. */
#define JUNEAU_ARP_FILTER_BITS	65536

struct juneau_arp_filter {
	__u64 bits[JUNEAU_ARP_FILTER_BITS / 64];
};

/* juneau_guard: LPM trie of the arp AddressPools' prefixes (drop) and the
 * node's own addresses inside them (allow, as /32s that win the longest
 * match). */
struct juneau_guard_key {
	__u32  prefixlen;		/* LPM trie convention: bits of addr */
	__be32 addr;
};

enum juneau_guard_action {
	JUNEAU_GUARD_DROP  = 1,
	JUNEAU_GUARD_ALLOW = 2,
};

struct juneau_guard_value {
	__u32 action;			/* enum juneau_guard_action */
	__u32 pad;
	__u64 hits;			/* requests this entry decided */
};

/* juneau_arp_class (SEC-11): the expiry class of an answered address that is
 * not JUNEAU_EXPIRY_MOVEABLE, the class of an address without an entry. A
 * moveable address (a ServiceLoadBalancer's VIP) expires with the heartbeat
 * (FO-2): the controller may move it to another node (FO-3). A held one (an
 * ElasticIP's address, which FO-3 never moves: nobody else may take it) is
 * still answered after the expiry, until the interface is orphaned, so that an
 * API-server outage does not silence it. Read only once the heartbeat has
 * expired, and only for an address also in the table: an entry for an address
 * no longer answered answers nothing. */
enum juneau_expiry_class {
	JUNEAU_EXPIRY_MOVEABLE	= 0,
	JUNEAU_EXPIRY_HELD	= 1,
};

struct juneau_arp_class {
	__u32 expiry_class;		/* enum juneau_expiry_class */
};

/* juneau_config: per ingress interface, written by the agent. An interface
 * without an entry is not ours: everything passes (fail open).
 *
 * BPF_MAP_TYPE_ARRAY of JUNEAU_CONFIG_MAX slots, so the program reads it
 * without a call (the verifier inlines an array lookup; a hash lookup is a
 * call chain, and on a kernel with SRSO "Safe RET" every return is costly:
 * bench/README.md). The interface's entry is in one of JUNEAU_CONFIG_PROBES
 * slots from juneau_config_slot(ifindex, 0) (juneau_slots.h), the one whose
 * ifindex field is the interface's; a free slot has ifindex 0 (no interface
 * has). The agent places an entry in the first free slot of its probes and
 * writes it in two steps, so that the program never reads a half-written entry
 * as valid: the value with ifindex 0, then the same value with the ifindex
 * (removal in the reverse order). Later writes change only heartbeat_ns,
 * flags, orphan_expiries or, when the interface's MAC changes (SEC-14), mac:
 * in place, so a request read during that one write may see a torn MAC. */
#define JUNEAU_CONFIG_PROBES	4

enum juneau_config_flags {
	/* Protections are on unless switched off, so a zeroed flags word is the
	 * safe default. */
	JUNEAU_CFG_GUARD_OFF	= 1 << 0,
	JUNEAU_CFG_CONFLICT_OFF	= 1 << 1,
};

/* FO-2: answers expire with their agent. The agent writes heartbeat_ns
 * (CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns()) while it can prove its
 * view of the API server is current; once now - heartbeat_ns > expiry_ns the
 * program answers nothing on the interface but its held addresses
 * (juneau_arp_class) and still guards, so neither it nor the kernel answers
 * for a pool address another node may have taken. expiry_ns 0: never expires
 * (an entry written by an agent that predates FO-2 reads as zeroes).
 *
 * Orphaned (SEC-16): once now - heartbeat_ns > orphan_expiries * expiry_ns the
 * agent is taken to be gone for good (uninstalled while the node was down, its
 * pod force-deleted): the program fails open on the interface, answering
 * nothing, held addresses included, and guarding nothing, as if it had no
 * entry. orphan_expiries 0: never (an entry of an agent that predates it).
 *
 * A fresh entry starts expired (SEC-15): its heartbeat one expiry in the
 * past, so the program answers nothing until the agent's first proof. */
struct juneau_config_value {
	__u8  mac[JUNEAU_ETH_ALEN];	/* the interface's MAC: our sender hw */
	__u16 orphan_expiries;		/* orphaned after this many expiries; 0: never */
	__u32 flags;			/* enum juneau_config_flags */
	__u32 ifindex;			/* the interface of this slot; 0: free */
	__u64 heartbeat_ns;		/* bpf_ktime_get_ns() time of the agent's last proof */
	__u64 expiry_ns;		/* answers stop this long after heartbeat_ns; 0: never */
};

/* juneau_stats: per-CPU packet counters, one slot per reason. Every exit of
 * the program has exactly one reason; JUNEAU_EVENT_* are counted in addition
 * to the exit reason. Append only: the agent reads slots by number. */
enum juneau_reason {
	JUNEAU_PASS_NOT_ARP		= 0,	/* not an ARP frame */
	JUNEAU_PASS_TRUNCATED		= 1,	/* frame ends inside a header it announces */
	JUNEAU_PASS_NOT_IPV4_ARP	= 2,	/* not Ethernet/IPv4 ARP */
	JUNEAU_PASS_NO_CONFIG		= 3,	/* ingress interface not configured */
	JUNEAU_PASS_NOT_REQUEST		= 4,	/* reply or other op */
	JUNEAU_PASS_NOT_FOR_US		= 5,	/* unicast to another MAC */
	JUNEAU_PASS_BAD_SENDER		= 6,	/* multicast/broadcast sender hw */
	JUNEAU_PASS_UNMAPPED		= 7,	/* target not ours, not guarded */
	JUNEAU_PASS_GRATUITOUS		= 8,	/* announcement for our address */
	JUNEAU_DROP_GUARDED		= 9,	/* guarded, not ours: kernel must not answer */
	JUNEAU_TX_REPLY			= 10,	/* reply sent */
	JUNEAU_TX_PROBE_REPLY		= 11,	/* reply to an RFC 5227 probe sent */
	JUNEAU_EVENT_CONFLICT		= 12,	/* counted besides the exit reason */
	/* Requests tagged with a VLAN id (ARP-12: 802.1Q or 802.1ad, one tag or
	 * two); priority tags (VLAN id 0) count as untagged. */
	JUNEAU_PASS_VLAN_TOO_DEEP	= 13,	/* more tags than JUNEAU_VLAN_*MAX_DEPTH */
	JUNEAU_PASS_VLAN_OURS		= 14,	/* another VLAN, our address: the kernel decides */
	JUNEAU_DROP_GUARDED_VLAN	= 15,	/* another VLAN, guarded, not ours */
	/* FO-2: the interface's heartbeat expired; nothing is answered. */
	JUNEAU_PASS_EXPIRED		= 16,	/* not guarded: the kernel decides */
	JUNEAU_DROP_EXPIRED		= 17,	/* guarded: nobody on this node answers */
	/* SEC-16: the interface's agent is gone for orphan_expiries expiries. */
	JUNEAU_PASS_ORPHANED		= 18,	/* a request: no answer, no guard */
	/* SEC-11: a held address answered after the expiry; counted besides
	 * JUNEAU_TX_REPLY or JUNEAU_TX_PROBE_REPLY. */
	JUNEAU_EVENT_HELD_ANSWERED	= 19,
	JUNEAU_REASON_MAX		= 20,
};

struct juneau_stats_value {
	__u64 packets;
};

/* The size of struct `name`, asserted with its name as the message. */
#define JUNEAU_ASSERT_SIZE(name, bytes) _Static_assert(sizeof(struct name) == (bytes), #name " size")

JUNEAU_ASSERT_SIZE(juneau_arp_key, 4);
JUNEAU_ASSERT_SIZE(juneau_arp_value, 40);
JUNEAU_ASSERT_SIZE(juneau_arp_filter, 8192);
JUNEAU_ASSERT_SIZE(juneau_arp_slot, 4);
JUNEAU_ASSERT_SIZE(juneau_guard_key, 8);
JUNEAU_ASSERT_SIZE(juneau_guard_value, 16);
JUNEAU_ASSERT_SIZE(juneau_config_value, 32);
JUNEAU_ASSERT_SIZE(juneau_arp_class, 4);
JUNEAU_ASSERT_SIZE(juneau_stats_value, 8);

/* ---- ElasticIP 1:1 NAT (tc_nat.bpf.c; NAT-1..NAT-5, EIP-4, EIP-6) ---------
 * Pinned next to the ARP maps; runtime/agent/bpf/nat.ts writes them. */
#define JUNEAU_NAT_MAX		65536
#define JUNEAU_NAT_SKIP_MAX	16384	/* a node address per Node, pod and service ranges */

/* juneau_nat_in (ElasticIP -> NIC address) and juneau_nat_out (NIC address
 * -> ElasticIP): the two directions of one binding, always written together. */
struct juneau_nat_key {
	__be32 addr;
};

/* Each value also names where the pod that holds the binding is: its
 * host-side device (the veth, or the bridge its veth is a port of) and, when
 * the agent knows it, its MAC (security review H1/M3). The agent resolves both
 * from the node's route to the NIC address and its neighbour table. A packet
 * from the pod's address that arrives from elsewhere is another pod's spoof
 * (tc_nat_pod drops it, tc_nat_out leaves it untranslated), and tc_nat_in
 * sends only to that device: a pod that got the address after the binding's
 * pod left is not reached. ifindex 0: the device is not known, and nothing of
 * the binding is translated. */
struct juneau_nat_value {
	__be32 addr;			/* the other side of the binding */
	__u32  ifindex;			/* the pod's host-side device; 0: unknown, nothing translated */
	__u8   mac[6];			/* the pod's MAC; all zero: not checked */
	__u16  pad;
};

/* juneau_nat_direct (DIR-1): a direct ElasticIP (held by a NIC on this
 * node) -> the NIC's address, the next hop towards the pod that holds it,
 * and its device. Same key and value as juneau_nat_in; nothing is rewritten. */

/* juneau_nat_remote (EN-9): a direct ElasticIP whose NIC is on another node
 * -> where a packet for it that reaches this node is carried: VXLAN to the
 * pod's node with the VNI of the ElasticIP's ExternalNetwork (status.networkID).
 * The upstream router may keep this node's MAC for the address after the pod
 * moved (ARP-8), so its packets still arrive here. */
struct juneau_nat_remote {
	__be32 node;			/* the pod's node (its InternalIP): outer destination */
	__u32  vni;			/* the ExternalNetwork's status.networkID, never 0 */
	__u32  ifindex;			/* the agent's VXLAN device (external / collect_md) */
	__u32  pad;
};

/* juneau_nat_vni (EN-9): the VNIs the VXLAN device accepts on this node: those
 * of the direct ElasticIPs held here. tc_nat_tun drops everything else that
 * arrives on that device. */
#define JUNEAU_NAT_VNI_MAX	4096

struct juneau_nat_vni_key {
	__u32 vni;
};

struct juneau_nat_vni_value {
	__u64 packets;			/* packets accepted with this VNI */
};

/* juneau_nat_peers (EN-9, security review H3): the outer sources tc_nat_tun
 * accepts, the cluster's Nodes' addresses, written by the agent from the Node
 * list. A VXLAN packet from any other host is dropped: the device's UDP port
 * may be reachable from outside the cluster. */
#define JUNEAU_NAT_PEERS_MAX	16384

struct juneau_nat_peer_value {
	__u64 packets;			/* packets accepted from this node */
};

/* juneau_nat_cnt: per-CPU counters per ElasticIP, summed by the reader.
 * Packets count GSO segments, bytes count skb->len (L2, as the hook saw it). */
struct juneau_nat_counters {
	__u64 in_packets;
	__u64 in_bytes;
	__u64 out_packets;
	__u64 out_bytes;
};

/* juneau_nat_cfg[0]: the external interface, where tc_nat_pod sends what it
 * translated (0 = not set: tc_nat_pod translates nothing), and flags. */
enum juneau_nat_config_flags {
	/* Inbound: hand the translated packet to the kernel's forwarding
	 * (netfilter sees it, conntrack tracks it) instead of redirecting. */
	JUNEAU_NAT_CFG_KERNEL_FORWARD	= 1 << 0,
};

struct juneau_nat_config {
	__u32 ext_ifindex;
	__u32 flags;			/* enum juneau_nat_config_flags */
};

/* juneau_nat_skip: LPM trie of destinations inside the cluster (pod and
 * service CIDRs, the nodes), learned by the agent from the Nodes and
 * ServiceCIDRs plus --nat-cluster-cidrs: a packet to them keeps the pod
 * address (NAT-2). Same key layout as juneau_guard_key. No preallocation:
 * entries cost memory only when written. */
struct juneau_nat_skip_value {
	__u64 hits;
};

/* juneau_nat_stats: per-CPU, one slot per reason, like juneau_stats. */
enum juneau_nat_reason {
	JUNEAU_NAT_PASS_NOT_IPV4	= 0,	/* not an IPv4 frame */
	JUNEAU_NAT_PASS_TRUNCATED	= 1,	/* ends inside a header it announces */
	JUNEAU_NAT_PASS_MALFORMED	= 2,	/* bad version/ihl/total length */
	JUNEAU_NAT_PASS_UNMAPPED	= 3,	/* no binding for the address */
	JUNEAU_NAT_PASS_ICMP_MALFORMED	= 4,	/* ICMP error, embedded header bad */
	JUNEAU_NAT_PASS_REWRITE_FAILED	= 5,	/* a helper refused to write */
	JUNEAU_NAT_DNAT			= 6,	/* inbound translated */
	JUNEAU_NAT_SNAT			= 7,	/* outbound translated */
	JUNEAU_NAT_PASS_IN_CLUSTER	= 8,	/* destination in juneau_nat_skip */
	JUNEAU_NAT_PASS_NOT_EXTERNAL	= 9,	/* tc_nat_pod: route is not the external interface */
	JUNEAU_NAT_PASS_ROUTE		= 10,	/* tc_nat_pod: no route, TTL, MTU: the kernel decides */
	JUNEAU_NAT_SNAT_REDIRECT	= 11,	/* tc_nat_pod: translated, sent to the external interface */
	JUNEAU_NAT_EVENT_FRAGMENT	= 12,	/* counted besides: a fragment was translated */
	JUNEAU_NAT_EVENT_ICMP_ERROR	= 13,	/* counted besides: embedded header rewritten */
	JUNEAU_NAT_DNAT_REDIRECT	= 14,	/* tc_nat_in: translated, sent to the pod's device */
	JUNEAU_NAT_DIRECT_IN		= 15,	/* direct ElasticIP: sent to the pod holding it */
	JUNEAU_NAT_DIRECT_OUT		= 16,	/* direct ElasticIP: sent to the external interface */
	/* EN-9: direct ElasticIPs whose pod is on another node. */
	JUNEAU_NAT_REMOTE_ENCAP		= 17,	/* tc_nat_in: VXLAN-encapsulated to the pod's node */
	JUNEAU_NAT_PASS_TUNNEL_KEY	= 18,	/* tc_nat_in: no tunnel key could be set: the kernel decides */
	JUNEAU_NAT_PASS_NO_TUNNEL	= 19,	/* tc_nat_tun: no tunnel metadata on the packet */
	JUNEAU_NAT_DROP_TUNNEL_VNI	= 20,	/* tc_nat_tun: VNI of no direct ElasticIP here */
	JUNEAU_NAT_DROP_TUNNEL_UNMAPPED	= 21,	/* tc_nat_tun: accepted VNI, not a direct ElasticIP here */
	JUNEAU_NAT_EVENT_TUNNEL_IN	= 22,	/* counted besides: accepted from the VXLAN device */
	JUNEAU_NAT_PASS_OTHER_HOST	= 23,	/* tc_nat_in: frame not for this host's MAC (pkt_type) */
	/* Security review H1/M3, H3. */
	JUNEAU_NAT_PASS_WRONG_DEVICE	= 24,	/* binding's device unknown, or the route goes elsewhere: untranslated */
	JUNEAU_NAT_DROP_SPOOFED		= 25,	/* tc_nat_pod: a binding's address from another device or MAC */
	JUNEAU_NAT_DROP_TUNNEL_PEER	= 26,	/* tc_nat_tun: outer source is not a cluster Node */
	/* SEC-10: a pod to an ElasticIP held on this node: the kernel decides, untranslated. */
	JUNEAU_NAT_PASS_TO_ELASTIC_IP	= 27,	/* tc_nat_pod: destination is an ElasticIP of this node */
	JUNEAU_NAT_REASON_MAX		= 28,
};

JUNEAU_ASSERT_SIZE(juneau_nat_key, 4);
JUNEAU_ASSERT_SIZE(juneau_nat_value, 16);
JUNEAU_ASSERT_SIZE(juneau_nat_counters, 32);
JUNEAU_ASSERT_SIZE(juneau_nat_config, 8);
JUNEAU_ASSERT_SIZE(juneau_nat_skip_value, 8);
JUNEAU_ASSERT_SIZE(juneau_nat_remote, 16);
JUNEAU_ASSERT_SIZE(juneau_nat_vni_key, 4);
JUNEAU_ASSERT_SIZE(juneau_nat_vni_value, 8);
JUNEAU_ASSERT_SIZE(juneau_nat_peer_value, 8);

/* ---- FO-1 announcements (juneau_announce.bpf.c) ----------------------------
 * Written by the agent only (no program reads it): per address this node
 * gained on a network with spec.arp.announceOnMove, what its handover sent,
 * so `kubectl juneau bpf dump announcements` reads it from the pins like the
 * other maps. Key: struct juneau_arp_key. An entry goes with its address.
 * Mirrored in runtime/agent/bpf/layout/announce.ts (checked by
 * test/unit/bpf/layout.test.ts against juneau_announce.bpf.o). */
#define JUNEAU_ANNOUNCE_MAX	JUNEAU_ARP_TABLE_MAX

struct juneau_announce_value {
	__u64 probes;			/* RFC 5227 probes sent before announcing */
	__u64 announcements;		/* RFC 5227 section 3 announcements sent */
	__u64 last_announce_ns;		/* CLOCK_MONOTONIC of the last one; 0: none */
	__u64 gave_up;			/* handovers that announced nothing: another MAC kept answering */
};

JUNEAU_ASSERT_SIZE(juneau_announce_value, 32);

/* ---- Map definitions (the programs' .maps sections) -----------------------
 * Every map of the programs is declared with JUNEAU_MAP, BTF-defined as libbpf
 * reads it (__uint and __type come from libbpf's <bpf/bpf_helpers.h>, which each program
 * includes before this header is used): type, key and value types, max_entries
 * and, when the map has any, its map_flags as the last argument. These are
 * what bpf_map__reuse_fd compares when the agent adopts a pinned map across an
 * upgrade, so a map keeps them for as long as its pin may be adopted. A map
 * without flags declares no map_flags member. */
#define JUNEAU_MAP(_name, _type, _key, _value, _max_entries, ...)		\
	struct {							\
		__uint(type, _type);					\
		__type(key, _key);					\
		__type(value, _value);					\
		__uint(max_entries, _max_entries);			\
		__VA_OPT__(__uint(map_flags, __VA_ARGS__);)		\
	} _name SEC(".maps")

#endif /* __JUNEAU_MAPS_H */
