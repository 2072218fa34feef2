/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Copyright Juneau authors */

/*
 * XDP ARP responder (EN-10, EN-11, ARP-10).
 *
 * Answers ARP requests for the addresses in external_arp_table with the
 * ingress interface's MAC, building the reply in place and sending it back
 * out of the same interface (XDP_TX). Everything this program does not
 * recognise goes to the kernel stack (XDP_PASS): the datapath fails open.
 *
 * Two protections, both on unless switched off in juneau_config:
 *  - guard: a request for an address inside an arp AddressPool that this node
 *    is not answering for is dropped, so a kernel that holds the address
 *    anyway (kube-proxy ipvs binds every LoadBalancer IP to kube-ipvs0, and
 *    arp_ignore=0 lets it answer: the incident behind OPS-1) never answers.
 *    Broadcast and multicast requests alike: the kernel takes both. A
 *    multicast one is guarded only, never answered here.
 *  - conflict detection (RFC 5227 2.4): any ARP packet whose sender address
 *    is one we answer for but whose sender MAC is not ours is counted against
 *    that address, with the offending MAC, for the agent to report.
 *
 * VLAN tags (ARP-12: 802.1Q or 802.1ad, one tag or two; up to eight priority
 * tags, which the kernel strips at any depth) are parsed. The
 * ARPAdvertisement names an address on the network the ingress interface
 * reaches untagged (EN-12 checks it against that interface's subnet). A frame
 * whose tags carry only VLAN id 0 (priority tags) is on that same network, as
 * the kernel treats it too: it is handled like an untagged one, and a reply
 * keeps its tags. A nonzero VLAN id puts the request on another L2 network,
 * where this program does not know whether the node even has a VLAN
 * interface; a reply from XDP would claim the address there for traffic the
 * kernel might then drop. So such a request is never answered here, only
 * guarded: for an address we answer it goes to the kernel, which answers from
 * the VLAN sub-interface by its own rules (as it would without Juneau); for a
 * guarded address we do not answer it is dropped, or the kube-ipvs0 kernel of
 * that incident would answer it through the VLAN sub-interface. Conflict detection
 * looks only at our network: a claim on another VLAN is not a conflict on it.
 *
 * Answers expire with their agent (FO-2): the datapath distrusts a stale
 * agent. An agent that is gone, or cannot prove its view of the API server is
 * current, stops refreshing the interface's heartbeat; once it is older than
 * the configured expiry, the controller may already have moved the address to
 * another node (FO-3), so this node answers nothing and keeps guarding: two
 * MACs never answer one address (FO-4). Except the held addresses (SEC-11,
 * juneau_arp_class: an ElasticIP's, which FO-3 never moves): nobody else may
 * take them, so an API-server outage must not silence them, and they are
 * answered until the interface is orphaned. An orphaned interface (SEC-16: no
 * heartbeat for orphan_expiries expiries, its agent gone for good) fails open:
 * nothing answered, nothing guarded.
 *
 * This program never sends anything unsolicited (ARP-8): the only transmit
 * path is the reply to a request. FO-1's opt-in announcements are sent by the
 * agent, not from here.
 *
 * Every exit has a reason in enum juneau_reason, counted in juneau_stats.
 */

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "juneau_maps.h"
#include "juneau_slots.h"
#include "juneau_stats.h"

/* ARP constants, defined here rather than from linux/if_arp.h (which pulls in
 * libc headers). Values from RFC 826 and IANA. */
#define ARP_HRD_ETHER	1
#define ARP_OP_REQUEST	1
#define ARP_OP_REPLY	2
#define ARP_PLN_IPV4	4

/* The fixed ARP header followed by the Ethernet/IPv4 addresses. The IPv4
 * fields are not 4-byte aligned on the wire, hence byte arrays. */
struct arp_eth_ipv4 {
	__be16 hrd;
	__be16 pro;
	__u8   hln;
	__u8   pln;
	__be16 op;
	__u8   sha[ETH_ALEN];
	__u8   sip[4];
	__u8   tha[ETH_ALEN];
	__u8   tip[4];
} __attribute__((packed));

_Static_assert(sizeof(struct arp_eth_ipv4) == 28, "arp_eth_ipv4 size");

/* An 802.1Q or 802.1ad tag after the TPID that announced it. */
struct vlan_tag {
	__be16 tci;
	__be16 proto;		/* EtherType of what follows */
};

_Static_assert(sizeof(struct vlan_tag) == 4, "vlan_tag size");

JUNEAU_MAP(external_arp_table, BPF_MAP_TYPE_PERCPU_HASH, struct juneau_arp_key,
	   struct juneau_arp_value, JUNEAU_ARP_TABLE_MAX, BPF_F_NO_PREALLOC);

JUNEAU_MAP(juneau_arp_slots, BPF_MAP_TYPE_ARRAY, __u32, struct juneau_arp_slot, JUNEAU_ARP_SLOTS);

JUNEAU_MAP(juneau_arp_counters, BPF_MAP_TYPE_PERCPU_ARRAY, __u32,
	   struct juneau_arp_value, JUNEAU_ARP_SLOTS);

JUNEAU_MAP(juneau_arp_class, BPF_MAP_TYPE_HASH, struct juneau_arp_key,
	   struct juneau_arp_class, JUNEAU_ARP_TABLE_MAX, BPF_F_NO_PREALLOC);

JUNEAU_MAP(juneau_arp_filter, BPF_MAP_TYPE_ARRAY, __u32, struct juneau_arp_filter, 1);

JUNEAU_MAP(juneau_guard, BPF_MAP_TYPE_LPM_TRIE, struct juneau_guard_key,
	   struct juneau_guard_value, JUNEAU_GUARD_MAX, BPF_F_NO_PREALLOC);

JUNEAU_MAP(juneau_config, BPF_MAP_TYPE_ARRAY, __u32, struct juneau_config_value, JUNEAU_CONFIG_MAX);

JUNEAU_MAP(juneau_stats, BPF_MAP_TYPE_PERCPU_ARRAY, __u32,
	   struct juneau_stats_value, JUNEAU_REASON_MAX);

static __always_inline void count(enum juneau_reason reason)
{
	juneau_count(&juneau_stats, reason);
}

static __always_inline int exit_with(enum juneau_reason reason, int action)
{
	count(reason);
	return action;
}

/* Packet fields a word at a time. The ARP fields sit at odd offsets and the
 * structs are packed, so plain member access made clang read and write them
 * byte by byte (bench/README.md). A load through a cast pointer is one
 * instruction; the verifier allows an unaligned packet access where the CPU
 * handles it (CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS: x86-64, arm64). */
static __always_inline __u32 load32(const void *p)
{
	return *(const __u32 *)p;
}

static __always_inline __u16 load16(const void *p)
{
	return *(const __u16 *)p;
}

static __always_inline void store32(void *p, __u32 v)
{
	*(__u32 *)p = v;
}

static __always_inline void store16(void *p, __u16 v)
{
	*(__u16 *)p = v;
}

static __always_inline __be32 load_ip(const __u8 *p)
{
	return load32(p);
}

/* juneau_arp_filter[0], looked up once per packet for both of its uses (the
 * sender's conflict check and the target's answer). NULL cannot happen (an
 * array entry always exists) and reads as "maybe" for every address. */
static __always_inline const struct juneau_arp_filter *lookup_filter(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&juneau_arp_filter, &zero);
}

/* False only when addr is certainly not in external_arp_table (see
 * juneau_arp_filter): spares the hash lookup, a call, for every ARP packet
 * about addresses that are not ours. */
static __always_inline int maybe_ours(const struct juneau_arp_filter *filter, __be32 addr)
{
	__u32 bit = juneau_arp_filter_bit(addr);

	if (!filter)
		return 1;
	return (filter->bits[(bit >> 6) & (JUNEAU_ARP_FILTER_BITS / 64 - 1)] >> (bit & 63)) & 1;
}

/* The address's entry: this CPU's copy of its counters, or NULL. First its
 * slots (inlined array lookups, no call), then external_arp_table (a call),
 * which holds only what did not fit in the slots (bpf/juneau_maps.h). */
static __always_inline struct juneau_arp_value *lookup_ours(const struct juneau_arp_filter *filter,
							     __be32 addr)
{
	struct juneau_arp_key key = { .addr = addr };

	/* 0.0.0.0 marks a free slot; it is never answered. */
	if (!addr || !maybe_ours(filter, addr))
		return 0;
#pragma unroll
	for (__u32 probe = 0; probe < JUNEAU_ARP_PROBES; probe++) {
		__u32 slot = juneau_arp_slot(addr, probe);
		struct juneau_arp_slot *s = bpf_map_lookup_elem(&juneau_arp_slots, &slot);

		if (s && s->addr == addr) {
			struct juneau_arp_value *counters = bpf_map_lookup_elem(&juneau_arp_counters, &slot);

			/* Keeps clang from merging this call with the table's below
			 * into one call instruction fed by either map: the verifier
			 * inlines an array lookup only at a call site that sees one
			 * map, and the merged site was a call of the generic helper,
			 * on every reply (bench/README.md). */
			barrier_var(counters);
			return counters;
		}
	}
	return bpf_map_lookup_elem(&external_arp_table, &key);
}

static __always_inline void store_ip(__u8 *p, __be32 ip)
{
	store32(p, ip);
}

static __always_inline int mac_equal(const __u8 *a, const __u8 *b)
{
	return ((load32(a) ^ load32(b)) | (load16(a + 4) ^ load16(b + 4))) == 0;
}

static __always_inline void mac_copy(__u8 *dst, const __u8 *src)
{
	store32(dst, load32(src));
	store16(dst + 4, load16(src + 4));
}

static __always_inline int mac_is_broadcast(const __u8 *a)
{
	return load32(a) == 0xffffffffu && load16(a + 4) == 0xffff;
}

/* Group bit set: multicast or broadcast. Never a valid sender. */
static __always_inline int mac_is_group(const __u8 *a)
{
	return a[0] & 0x01;
}

/* The kernel takes an ARP request sent to a multicast MAC as it takes a
 * broadcast one (arp_rcv accepts PACKET_MULTICAST). */
static __always_inline int mac_is_multicast(const __u8 *a)
{
	return mac_is_group(a) && !mac_is_broadcast(a);
}

static __always_inline int eth_type_vlan(__be16 proto)
{
	return proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD);
}

#define VLAN_VID_MASK	0x0fff

/* Steps *cursor over up to JUNEAU_VLAN_MAX_DEPTH tags, and on over priority
 * tags up to JUNEAU_VLAN_PRIORITY_MAX_DEPTH while every tag so far is one (the
 * kernel strips any number of them and answers as if untagged, so the guard
 * must see through them too), leaving in *proto the EtherType after the last
 * one it read. Returns the VLAN ids it read ORed together (0: untagged or
 * priority tags only, i.e. our network), or -1 when the frame ends inside a
 * tag. A bounded loop: the caller sees a VLAN EtherType in *proto when there
 * were more tags. */
static __always_inline int skip_vlan_tags(void **cursor, const void *data_end,
					  __be16 *proto)
{
	int vids = 0;

#pragma unroll
	for (int i = 0; i < JUNEAU_VLAN_PRIORITY_MAX_DEPTH; i++) {
		struct vlan_tag *tag = *cursor;
		int vid;

		if (!eth_type_vlan(*proto))
			break;
		if (i >= JUNEAU_VLAN_MAX_DEPTH && vids)
			break;
		if ((void *)(tag + 1) > data_end)
			return -1;
		vid = bpf_ntohs(tag->tci) & VLAN_VID_MASK;
		if (i >= JUNEAU_VLAN_MAX_DEPTH && vid)
			break;
		vids |= vid;
		*proto = tag->proto;
		*cursor = tag + 1;
	}
	return vids;
}

/* hrd and pro in one word, hln and pln in another (network order). */
static __always_inline int arp_is_eth_ipv4(const struct arp_eth_ipv4 *arp)
{
	const __u8 *p = (const __u8 *)arp;

	return load32(p + __builtin_offsetof(struct arp_eth_ipv4, hrd)) ==
		       bpf_htonl(ARP_HRD_ETHER << 16 | ETH_P_IP) &&
	       load16(p + __builtin_offsetof(struct arp_eth_ipv4, hln)) ==
		       bpf_htons(ETH_ALEN << 8 | ARP_PLN_IPV4);
}

static __always_inline __be16 arp_op(const struct arp_eth_ipv4 *arp)
{
	return load16((const __u8 *)arp + __builtin_offsetof(struct arp_eth_ipv4, op));
}

/* The ingress interface's entry in juneau_config (bpf/juneau_maps.h): up to
 * JUNEAU_CONFIG_PROBES array lookups, each inlined by the verifier (no call);
 * the first probe finds it unless interfaces share slots. */
static __always_inline const struct juneau_config_value *lookup_config(__u32 ifindex)
{
#pragma unroll
	for (__u32 probe = 0; probe < JUNEAU_CONFIG_PROBES; probe++) {
		__u32 slot = juneau_config_slot(ifindex, probe);
		const struct juneau_config_value *cfg = bpf_map_lookup_elem(&juneau_config, &slot);

		if (cfg && cfg->ifindex == ifindex)
			return cfg;
	}
	return 0;
}

/* RFC 5227 2.4: someone else claims an address we answer for. */
static __always_inline void detect_conflict(const struct arp_eth_ipv4 *arp,
					    const struct juneau_config_value *cfg,
					    const struct juneau_arp_filter *filter)
{
	__be32 sip = load_ip(arp->sip);
	struct juneau_arp_value *entry;

	if (cfg->flags & JUNEAU_CFG_CONFLICT_OFF)
		return;
	if (sip == 0 || mac_equal(arp->sha, cfg->mac))
		return;
	entry = lookup_ours(filter, sip);
	if (!entry)
		return;
	entry->conflicts++;	/* this CPU's copy: no atomic needed */
	entry->last_conflict_ns = bpf_ktime_get_ns();
	mac_copy(entry->last_conflict_mac, arp->sha);
	count(JUNEAU_EVENT_CONFLICT);
}

/* How current the interface's agent is (juneau_config_value). */
enum liveness {
	LIVE,		/* every address answered */
	EXPIRED,	/* FO-2: only held addresses answered, the guard on */
	ORPHANED,	/* SEC-16: nothing answered, nothing guarded */
};

/* FO-2: the agent's heartbeat against its expiry (0: never expires) and its
 * orphan bound. Unsigned arithmetic: a heartbeat from the future (never
 * written so) reads as a huge age and expires, failing towards not answering. */
static __always_inline enum liveness liveness_of(const struct juneau_config_value *cfg)
{
	__u64 age;

	if (!cfg->expiry_ns)
		return LIVE;
	age = bpf_ktime_get_ns() - cfg->heartbeat_ns;
	if (age <= cfg->expiry_ns)
		return LIVE;
	if (cfg->orphan_expiries && age / cfg->orphan_expiries > cfg->expiry_ns)
		return ORPHANED;
	return EXPIRED;
}

/* SEC-11: whether an address is held (juneau_arp_class), answered past the
 * expiry. */
static __always_inline int is_held(__be32 addr)
{
	struct juneau_arp_key key = { .addr = addr };
	struct juneau_arp_class *class = bpf_map_lookup_elem(&juneau_arp_class, &key);

	return class && class->expiry_class == JUNEAU_EXPIRY_HELD;
}

/* The entry of an address this node answers for now: every one in the table
 * while live, the held ones once expired. */
static __always_inline struct juneau_arp_value *lookup_answered(const struct juneau_arp_filter *filter,
								 __be32 addr, enum liveness live)
{
	struct juneau_arp_value *entry = lookup_ours(filter, addr);

	if (!entry || live == LIVE)
		return entry;
	return is_held(addr) ? entry : 0;
}

/* Requests for a guarded address that is not ours are dropped so that no
 * kernel on this node can answer them (OPS-1). The node's own addresses
 * inside a pool are /32 ALLOW entries, which win the longest match. */
static __always_inline int guard_drops(__be32 tip,
				       const struct juneau_config_value *cfg)
{
	struct juneau_guard_key key = { .prefixlen = 32, .addr = tip };
	struct juneau_guard_value *rule;

	if (cfg->flags & JUNEAU_CFG_GUARD_OFF)
		return 0;
	rule = bpf_map_lookup_elem(&juneau_guard, &key);
	if (!rule)
		return 0;
	__sync_fetch_and_add(&rule->hits, 1);
	return rule->action == JUNEAU_GUARD_DROP;
}

/* Turn the request into our reply, in place, the way Linux's arp_process()
 * answers: Ethernet and ARP target are the requester's sender hw address;
 * the ARP target protocol address is the requester's sender address, which
 * is 0.0.0.0 for an RFC 5227 probe. */
static __always_inline void write_reply(struct ethhdr *eth,
					struct arp_eth_ipv4 *arp,
					const __u8 *our_mac)
{
	__be32 requester_ip = load_ip(arp->sip);
	__be32 answered_ip = load_ip(arp->tip);

	mac_copy(eth->h_dest, arp->sha);
	mac_copy(eth->h_source, our_mac);

	store16((__u8 *)arp + __builtin_offsetof(struct arp_eth_ipv4, op), bpf_htons(ARP_OP_REPLY));
	mac_copy(arp->tha, arp->sha);
	store_ip(arp->tip, requester_ip);
	mac_copy(arp->sha, our_mac);
	store_ip(arp->sip, answered_ip);
}

static __always_inline int answer_request(struct ethhdr *eth,
					  struct arp_eth_ipv4 *arp,
					  const struct juneau_config_value *cfg,
					  const struct juneau_arp_filter *filter,
					  enum liveness live)
{
	__be32 tip = load_ip(arp->tip);
	__be32 sip = load_ip(arp->sip);
	struct juneau_arp_value *entry;
	int probe = sip == 0;

	entry = lookup_answered(filter, tip, live);
	if (!entry && live == EXPIRED) {
		if (guard_drops(tip, cfg))
			return exit_with(JUNEAU_DROP_EXPIRED, XDP_DROP);
		return exit_with(JUNEAU_PASS_EXPIRED, XDP_PASS);
	}
	if (!entry) {
		if (guard_drops(tip, cfg))
			return exit_with(JUNEAU_DROP_GUARDED, XDP_DROP);
		return exit_with(JUNEAU_PASS_UNMAPPED, XDP_PASS);
	}
	/* This CPU's copy of the entry's counters (external_arp_table is
	 * per-CPU): plain increments, exact once the reader sums the CPUs. */
	entry->requests++;

	/* An announcement states the sender's own address; there is nothing to
	 * answer (and answering would be a gratuitous reply of our own). */
	if (sip == tip)
		return exit_with(JUNEAU_PASS_GRATUITOUS, XDP_PASS);

	write_reply(eth, arp, cfg->mac);
	entry->replies++;
	if (live == EXPIRED)
		count(JUNEAU_EVENT_HELD_ANSWERED);
	return exit_with(probe ? JUNEAU_TX_PROBE_REPLY : JUNEAU_TX_REPLY, XDP_TX);
}

/* The reasons guard_request() counts a request with. */
struct guard_reasons {
	enum juneau_reason ours;	/* one we answer: passed, the kernel decides */
	enum juneau_reason guarded;	/* guarded, not ours: dropped */
	enum juneau_reason other;	/* neither: passed */
};

/* A request this program guards but never answers: one on another VLAN
 * (ARP-12, see the top of the file), and one sent to a multicast MAC. */
static __always_inline int guard_request(const struct arp_eth_ipv4 *arp,
					 const struct juneau_config_value *cfg,
					 const struct juneau_arp_filter *filter,
					 enum liveness live,
					 struct guard_reasons why)
{
	__be32 tip = load_ip(arp->tip);

	/* Expired (FO-2): only the held addresses are ours, the guard decides the rest. */
	if (lookup_answered(filter, tip, live))
		return exit_with(why.ours, XDP_PASS);
	if (guard_drops(tip, cfg))
		return exit_with(why.guarded, XDP_DROP);
	return exit_with(why.other, XDP_PASS);
}

SEC("xdp")
int xdp_arp(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	const struct juneau_config_value *cfg;
	const struct juneau_arp_filter *filter;
	enum liveness live;
	struct ethhdr *eth = data;
	struct arp_eth_ipv4 *arp;
	void *cursor;
	__be16 proto;
	int vids;

	if ((void *)(eth + 1) > data_end)
		return exit_with(JUNEAU_PASS_TRUNCATED, XDP_PASS);
	cursor = eth + 1;
	proto = load16((const __u8 *)eth + __builtin_offsetof(struct ethhdr, h_proto));
	vids = skip_vlan_tags(&cursor, data_end, &proto);
	if (vids < 0)
		return exit_with(JUNEAU_PASS_TRUNCATED, XDP_PASS);
	if (eth_type_vlan(proto))
		return exit_with(JUNEAU_PASS_VLAN_TOO_DEEP, XDP_PASS);
	if (proto != bpf_htons(ETH_P_ARP))
		return exit_with(JUNEAU_PASS_NOT_ARP, XDP_PASS);

	arp = cursor;
	if ((void *)(arp + 1) > data_end)
		return exit_with(JUNEAU_PASS_TRUNCATED, XDP_PASS);
	if (!arp_is_eth_ipv4(arp))
		return exit_with(JUNEAU_PASS_NOT_IPV4_ARP, XDP_PASS);

	cfg = lookup_config(ctx->ingress_ifindex);
	if (!cfg)
		return exit_with(JUNEAU_PASS_NO_CONFIG, XDP_PASS);
	if (mac_is_group(arp->sha))
		return exit_with(JUNEAU_PASS_BAD_SENDER, XDP_PASS);

	filter = lookup_filter();
	if (!vids)
		detect_conflict(arp, cfg, filter);

	if (arp_op(arp) != bpf_htons(ARP_OP_REQUEST))
		return exit_with(JUNEAU_PASS_NOT_REQUEST, XDP_PASS);
	/* Unicast to another MAC: the kernel drops it too (PACKET_OTHERHOST). */
	if (!mac_is_group(eth->h_dest) && !mac_equal(eth->h_dest, cfg->mac))
		return exit_with(JUNEAU_PASS_NOT_FOR_US, XDP_PASS);

	live = liveness_of(cfg);
	if (live == ORPHANED)
		return exit_with(JUNEAU_PASS_ORPHANED, XDP_PASS);
	if (vids)
		return guard_request(arp, cfg, filter, live, (struct guard_reasons){
			.ours = JUNEAU_PASS_VLAN_OURS,
			.guarded = JUNEAU_DROP_GUARDED_VLAN,
			.other = JUNEAU_PASS_UNMAPPED,
		});
	if (mac_is_multicast(eth->h_dest))
		return guard_request(arp, cfg, filter, live, (struct guard_reasons){
			.ours = JUNEAU_PASS_NOT_FOR_US,
			.guarded = JUNEAU_DROP_GUARDED,
			.other = JUNEAU_PASS_NOT_FOR_US,
		});
	return answer_request(eth, arp, cfg, filter, live);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
