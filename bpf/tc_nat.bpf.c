/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Copyright Juneau authors */

/*
 * ElasticIP 1:1 NAT at TC (EIP-4 NAT, EIP-6, NAT-1..NAT-5). Stateless: two
 * hash maps hold each binding in both directions, nothing is tracked per flow.
 *
 *  - tc_nat_in   (clsact ingress of the external interface): destination
 *                ElasticIP -> NIC address (DNAT), then a redirect to the
 *                device that routes to the pod, past the node's netfilter
 *                (no conntrack entry; JUNEAU_NAT_CFG_KERNEL_FORWARD hands it
 *                to the kernel's forwarding instead). The client's source
 *                stays (NAT-1).
 *  - tc_nat_out  (clsact egress of the external interface): source NIC address
 *                -> ElasticIP (SNAT) for what leaves through it (NAT-2).
 *  - tc_nat_pod  (clsact ingress of the device that routes to the pods): the
 *                same SNAT before the node's netfilter runs, then a redirect
 *                to the external interface. This is the hook that wins over a
 *                CNI that masquerades pod traffic: tc_nat_out runs after
 *                POSTROUTING, where a MASQUERADE has already replaced the pod
 *                address; here the packet still carries it and never meets
 *                the masquerade rule. tc_nat_out stays as the catch-all for
 *                nodes where tc_nat_pod is not attached.
 *
 * Direct ElasticIPs (DIR-1, no NAT) ride the same hooks: tc_nat_in sends a
 * packet for one to the pod that holds it, tc_nat_pod sends the pod's replies
 * to the external interface (juneau_nat_direct).
 *
 * EN-9: a packet for a direct ElasticIP whose pod is on another node (the
 * upstream router still has this node's MAC for it) is VXLAN-encapsulated
 * with the ExternalNetwork's VNI and sent to the pod's node (juneau_nat_remote,
 * through the agent's collect_md VXLAN device, as Cilium does). There,
 *  - tc_nat_tun  (clsact ingress of that VXLAN device): the outer source must
 *                be a cluster Node (juneau_nat_peers), the VNI one of a direct
 *                ElasticIP held on this node (juneau_nat_vni) and the inner
 *                destination such an ElasticIP; then the DIR-1 path.
 *
 * Every binding also names the pod's host-side device and MAC (juneau_maps.h,
 * struct juneau_nat_value; security review H1/M3): what comes from the pod's
 * address through another device or MAC is not the pod's, and what goes to
 * the pod's address goes only to that device.
 *
 * Addresses are rewritten with every checksum kept right: the IP header, the
 * TCP/UDP checksum (its pseudo header holds the addresses; a zero UDP checksum
 * stays zero), and for ICMP errors the embedded original header too (EIP-6):
 * its address, its IP checksum, its TCP/UDP checksum when the error carries
 * it, and the outer ICMP checksum that covers all of those. Fragments: only
 * the first (offset 0) carries the L4 header, and its checksum covers the
 * whole datagram, so it is updated there; later fragments change only in the
 * IP header.
 *
 * Packets are read with bpf_skb_load_bytes and written with the checksum
 * helpers, which work on non-linear skbs and keep CHECKSUM_COMPLETE/PARTIAL
 * right. Everything that is not a complete, well-formed IPv4 packet with a
 * binding passes untouched (TC_ACT_OK); every exit is counted with a reason
 * in juneau_nat_stats.
 */

#include <stddef.h>		/* offsetof, before bpf_helpers.h defines its own */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "juneau_maps.h"
#include "juneau_stats.h"

#define IPPROTO_ICMP_	1
#define IPPROTO_TCP_	6
#define IPPROTO_UDP_	17
#define AF_INET_	2

#define IP_MF		0x2000
#define IP_OFFSET	0x1fff

#define PACKET_HOST_	0	/* linux/if_packet.h: to this host's MAC */

enum nat_dir { NAT_IN = 0, NAT_OUT = 1 };

/* The IPv4 and ICMP headers, defined here rather than from linux/ip.h (the
 * version and ihl bitfields) and linux/icmp.h (which pulls in libc headers). */
struct ipv4_hdr {
	__u8   ver_ihl;
	__u8   tos;
	__be16 tot_len;
	__be16 id;
	__be16 frag_off;
	__u8   ttl;
	__u8   protocol;
	__sum16 check;
	__be32 saddr;
	__be32 daddr;
};

struct icmp_hdr {
	__u8   type;
	__u8   code;
	__sum16 check;
	__be32 rest;		/* id and sequence, or unused before an error's payload */
};

_Static_assert(sizeof(struct ipv4_hdr) == 20, "ipv4_hdr size");
_Static_assert(sizeof(struct icmp_hdr) == 8, "icmp_hdr size");

#define IP_OFF_TTL	offsetof(struct ipv4_hdr, ttl)
#define IP_OFF_CHECK	offsetof(struct ipv4_hdr, check)
#define IP_OFF_SADDR	offsetof(struct ipv4_hdr, saddr)
#define IP_OFF_DADDR	offsetof(struct ipv4_hdr, daddr)
#define TCP_OFF_CHECK	offsetof(struct tcphdr, check)
#define UDP_OFF_CHECK	offsetof(struct udphdr, check)
#define ICMP_OFF_CHECK	offsetof(struct icmp_hdr, check)

/* What parse_ipv4() and parse_inner() return for a header they read whole;
 * any other value is the juneau_nat_reason to pass the packet with. */
enum { NAT_PARSED = -1 };

/* What the writers return: the packet rewritten, or a helper refused
 * (JUNEAU_NAT_PASS_REWRITE_FAILED). */
enum write_result { WRITTEN = 0, WRITE_FAILED = -1 };

/* The three binding maps: an address to an address (juneau_maps.h), one entry
 * per ElasticIP: juneau_nat_in and juneau_nat_out, the two directions of a
 * translated one, and juneau_nat_direct. */
#define NAT_BINDING_MAP(name) \
	JUNEAU_MAP(name, BPF_MAP_TYPE_HASH, struct juneau_nat_key, struct juneau_nat_value, JUNEAU_NAT_MAX)

NAT_BINDING_MAP(juneau_nat_in);
NAT_BINDING_MAP(juneau_nat_out);
NAT_BINDING_MAP(juneau_nat_direct);

JUNEAU_MAP(juneau_nat_remote, BPF_MAP_TYPE_HASH, struct juneau_nat_key,
	   struct juneau_nat_remote, JUNEAU_NAT_MAX);

JUNEAU_MAP(juneau_nat_vni, BPF_MAP_TYPE_HASH, struct juneau_nat_vni_key,
	   struct juneau_nat_vni_value, JUNEAU_NAT_VNI_MAX);

JUNEAU_MAP(juneau_nat_peers, BPF_MAP_TYPE_HASH, struct juneau_nat_key,
	   struct juneau_nat_peer_value, JUNEAU_NAT_PEERS_MAX);

JUNEAU_MAP(juneau_nat_cnt, BPF_MAP_TYPE_PERCPU_HASH, struct juneau_nat_key,
	   struct juneau_nat_counters, JUNEAU_NAT_MAX);

JUNEAU_MAP(juneau_nat_cfg, BPF_MAP_TYPE_ARRAY, __u32, struct juneau_nat_config, 1);

JUNEAU_MAP(juneau_nat_skip, BPF_MAP_TYPE_LPM_TRIE, struct juneau_guard_key,
	   struct juneau_nat_skip_value, JUNEAU_NAT_SKIP_MAX, BPF_F_NO_PREALLOC);

JUNEAU_MAP(juneau_nat_stats, BPF_MAP_TYPE_PERCPU_ARRAY, __u32,
	   struct juneau_stats_value, JUNEAU_NAT_REASON_MAX);

static __always_inline void count(enum juneau_nat_reason reason)
{
	juneau_count(&juneau_nat_stats, reason);
}

static __always_inline int exit_with(enum juneau_nat_reason reason)
{
	count(reason);
	return TC_ACT_OK;
}

static __always_inline int drop_with(enum juneau_nat_reason reason)
{
	count(reason);
	return TC_ACT_SHOT;
}

/* Whether a binding names the pod's MAC (all zero: the agent does not know it). */
static __always_inline int has_mac(const struct juneau_nat_value *v)
{
	return v->mac[0] | v->mac[1] | v->mac[2] | v->mac[3] | v->mac[4] | v->mac[5];
}

static __always_inline int same_mac(const __u8 *a, const __u8 *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3] && a[4] == b[4] && a[5] == b[5];
}

static __always_inline struct juneau_nat_value *binding(enum nat_dir dir, __be32 addr)
{
	struct juneau_nat_key key = { .addr = addr };

	if (dir == NAT_IN)
		return bpf_map_lookup_elem(&juneau_nat_in, &key);
	return bpf_map_lookup_elem(&juneau_nat_out, &key);
}

/* A parsed IPv4 packet: offsets from skb->data (the Ethernet header). */
struct pkt {
	struct ipv4_hdr ip;
	__u32 l3;
	__u32 l4;
	__u32 end;		/* l3 + tot_len: bytes after it are padding */
	__u16 frag;		/* fragment offset, 8-byte units */
	__u8  more;		/* MF */
};

/* Returns NAT_PARSED for a complete IPv4 header, else the reason to pass. */
static __always_inline int parse_ipv4(struct __sk_buff *skb, struct pkt *p)
{
	__u32 ihl;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return JUNEAU_NAT_PASS_NOT_IPV4;
	p->l3 = ETH_HLEN;
	if (bpf_skb_load_bytes(skb, p->l3, &p->ip, sizeof(p->ip)) < 0)
		return JUNEAU_NAT_PASS_TRUNCATED;
	ihl = (p->ip.ver_ihl & 0x0f) * 4;
	if ((p->ip.ver_ihl >> 4) != 4 || ihl < sizeof(p->ip))
		return JUNEAU_NAT_PASS_MALFORMED;
	if (bpf_ntohs(p->ip.tot_len) < ihl)
		return JUNEAU_NAT_PASS_MALFORMED;
	p->l4 = p->l3 + ihl;
	p->end = p->l3 + bpf_ntohs(p->ip.tot_len);
	if (p->end > skb->len)
		return JUNEAU_NAT_PASS_TRUNCATED;
	p->frag = bpf_ntohs(p->ip.frag_off) & IP_OFFSET;
	p->more = (bpf_ntohs(p->ip.frag_off) & IP_MF) != 0;
	return NAT_PARSED;
}

/* RFC 1624 incremental update of a 16-bit one's complement checksum. */
static __always_inline __u16 csum_fold32(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

static __always_inline __sum16 csum_replace4(__sum16 check, __be32 from, __be32 to)
{
	__u32 sum = (__u16)~check;

	sum += (__u16)~(from & 0xffff) + (__u16)~(from >> 16);
	sum += (to & 0xffff) + (to >> 16);
	return (__sum16)~csum_fold32(sum);
}

static __always_inline __sum16 csum_replace2(__sum16 check, __be16 from, __be16 to)
{
	__u32 sum = (__u16)~check;

	sum += (__u16)~from + to;
	return (__sum16)~csum_fold32(sum);
}

/* l4_check_offset() results besides an offset. */
enum {
	L4_NO_CHECK	= 0,	/* none to update (ICMP: no pseudo header; later
				 * fragments: no L4 header) */
	L4_CHECK_CUT	= -1,	/* the first fragment ends inside the L4 header */
};

/* Where the L4 checksum of this (outer) packet is, and the flags to update it
 * with, or L4_NO_CHECK, or L4_CHECK_CUT. */
static __always_inline int l4_check_offset(const struct pkt *p, __u64 *flags)
{
	if (p->frag)
		return L4_NO_CHECK;
	if (p->ip.protocol == IPPROTO_TCP_) {
		if (p->l4 + TCP_OFF_CHECK + 2 > p->end)
			return L4_CHECK_CUT;
		*flags = BPF_F_PSEUDO_HDR;
		return p->l4 + TCP_OFF_CHECK;
	}
	if (p->ip.protocol == IPPROTO_UDP_) {
		if (p->l4 + sizeof(struct udphdr) > p->end)
			return L4_CHECK_CUT;
		/* A zero checksum (none sent) stays zero; a result of zero is
		 * written as 0xffff. */
		*flags = BPF_F_PSEUDO_HDR | BPF_F_MARK_MANGLED_0;
		return p->l4 + UDP_OFF_CHECK;
	}
	return L4_NO_CHECK;
}

static __always_inline int icmp_is_error(__u8 type)
{
	/* destination unreachable, source quench, redirect, time exceeded,
	 * parameter problem: each embeds the offending packet's header. */
	return type == 3 || type == 4 || type == 5 || type == 11 || type == 12;
}

/* The embedded packet of an ICMP error and what to write into it. */
struct inner {
	struct ipv4_hdr ip;
	__u32 l3;
	__u32 addr_off;		/* offset of the address to rewrite */
	__u32 l4_check;		/* offset of its TCP/UDP checksum, 0: none */
	__sum16 l4_old;
	__u8  udp;
};

/* Parses the embedded header: NAT_PARSED when it is complete, else a pass
 * reason. */
static __always_inline int parse_inner(struct __sk_buff *skb, const struct pkt *p,
				       enum nat_dir dir, struct inner *in)
{
	__u32 ihl, l4;
	__u16 frag;

	in->l3 = p->l4 + sizeof(struct icmp_hdr);
	if (in->l3 + sizeof(in->ip) > p->end ||
	    bpf_skb_load_bytes(skb, in->l3, &in->ip, sizeof(in->ip)) < 0)
		return JUNEAU_NAT_PASS_ICMP_MALFORMED;
	ihl = (in->ip.ver_ihl & 0x0f) * 4;
	if ((in->ip.ver_ihl >> 4) != 4 || ihl < sizeof(in->ip) || in->l3 + ihl > p->end)
		return JUNEAU_NAT_PASS_ICMP_MALFORMED;
	/* Inbound errors answer a packet we sent out (its source was the
	 * ElasticIP); outbound errors answer one we let in (its destination
	 * was the NIC address). */
	in->addr_off = in->l3 + (dir == NAT_IN ? IP_OFF_SADDR : IP_OFF_DADDR);
	in->l4_check = 0;
	in->udp = 0;
	frag = bpf_ntohs(in->ip.frag_off) & IP_OFFSET;
	l4 = in->l3 + ihl;
	if (frag)
		return NAT_PARSED;
	if (in->ip.protocol == IPPROTO_TCP_ && l4 + TCP_OFF_CHECK + 2 <= p->end)
		in->l4_check = l4 + TCP_OFF_CHECK;
	else if (in->ip.protocol == IPPROTO_UDP_ && l4 + UDP_OFF_CHECK + 2 <= p->end) {
		in->l4_check = l4 + UDP_OFF_CHECK;
		in->udp = 1;
	}
	if (in->l4_check && bpf_skb_load_bytes(skb, in->l4_check, &in->l4_old, 2) < 0)
		return JUNEAU_NAT_PASS_ICMP_MALFORMED;
	return NAT_PARSED;
}

/* Rewrites the embedded header's address from `from` to `to`, its IP and L4
 * checksums, and moves the outer ICMP checksum by exactly what changed, so the
 * sum over the ICMP message (and skb->csum) stays consistent. */
static __always_inline enum write_result rewrite_inner(struct __sk_buff *skb, const struct pkt *p,
							const struct inner *in, __be32 from, __be32 to)
{
	__u32 icmp_check = p->l4 + ICMP_OFF_CHECK;
	__sum16 ip_new = csum_replace4(in->ip.check, from, to);

	if (bpf_skb_store_bytes(skb, in->addr_off, &to, 4, 0) < 0 ||
	    bpf_l4_csum_replace(skb, icmp_check, from, to, 4) < 0)
		return WRITE_FAILED;
	if (bpf_skb_store_bytes(skb, in->l3 + IP_OFF_CHECK, &ip_new, 2, 0) < 0 ||
	    bpf_l4_csum_replace(skb, icmp_check, in->ip.check, ip_new, 2) < 0)
		return WRITE_FAILED;
	if (in->l4_check && !(in->udp && in->l4_old == 0)) {
		__sum16 l4_new = csum_replace4(in->l4_old, from, to);

		if (in->udp && l4_new == 0)
			l4_new = 0xffff;
		if (bpf_skb_store_bytes(skb, in->l4_check, &l4_new, 2, 0) < 0 ||
		    bpf_l4_csum_replace(skb, icmp_check, in->l4_old, l4_new, 2) < 0)
			return WRITE_FAILED;
	}
	return WRITTEN;
}

/* Rewrites the outer address at `off` (source or destination) with its IP
 * checksum and, where the packet carries one (l4_check an offset, not
 * L4_NO_CHECK), its L4 checksum. */
static __always_inline enum write_result rewrite_outer(struct __sk_buff *skb, const struct pkt *p,
							__u32 off, __be32 from, __be32 to,
							int l4_check, __u64 l4_flags)
{
	if (l4_check > L4_NO_CHECK &&
	    bpf_l4_csum_replace(skb, l4_check, from, to, l4_flags | 4) < 0)
		return WRITE_FAILED;
	if (bpf_l3_csum_replace(skb, p->l3 + IP_OFF_CHECK, from, to, 4) < 0)
		return WRITE_FAILED;
	return bpf_skb_store_bytes(skb, p->l3 + off, &to, 4, 0) < 0 ? WRITE_FAILED : WRITTEN;
}

static __always_inline void count_bytes(struct __sk_buff *skb, __be32 eip, enum nat_dir dir)
{
	struct juneau_nat_key key = { .addr = eip };
	struct juneau_nat_counters *c = bpf_map_lookup_elem(&juneau_nat_cnt, &key);
	__u64 packets = skb->gso_segs ? skb->gso_segs : 1;

	if (!c)
		return;
	if (dir == NAT_IN) {
		c->in_packets += packets;
		c->in_bytes += skb->len;
	} else {
		c->out_packets += packets;
		c->out_bytes += skb->len;
	}
}

/* In-cluster destinations keep the pod address (NAT-2). */
static __always_inline int in_cluster(__be32 daddr)
{
	struct juneau_guard_key key = { .prefixlen = 32, .addr = daddr };
	struct juneau_nat_skip_value *v = bpf_map_lookup_elem(&juneau_nat_skip, &key);

	if (!v)
		return 0;
	__sync_fetch_and_add(&v->hits, 1);
	return 1;
}

/* One translation in direction `dir`; returns the reason to count (DNAT or
 * SNAT when something was rewritten). Nothing is written unless every check
 * passed, so a packet that is passed is passed untouched. */
static __always_inline enum juneau_nat_reason translate(struct __sk_buff *skb, struct pkt *p,
							 enum nat_dir dir)
{
	__u32 off = dir == NAT_IN ? IP_OFF_DADDR : IP_OFF_SADDR;
	__be32 outer = dir == NAT_IN ? p->ip.daddr : p->ip.saddr;
	struct juneau_nat_value *v = binding(dir, outer), *iv = 0;
	__be32 outer_to = 0, inner_from = 0, inner_to = 0, eip;
	struct inner in = {};
	__u64 l4_flags = 0;
	int l4_check, icmp_error = 0;
	__u8 type;

	if (v)
		outer_to = v->addr;
	l4_check = l4_check_offset(p, &l4_flags);
	if (p->ip.protocol == IPPROTO_ICMP_ && !p->frag) {
		if (p->l4 + sizeof(struct icmp_hdr) > p->end ||
		    bpf_skb_load_bytes(skb, p->l4 + offsetof(struct icmp_hdr, type), &type, 1) < 0)
			return v ? JUNEAU_NAT_PASS_TRUNCATED : JUNEAU_NAT_PASS_UNMAPPED;
		icmp_error = icmp_is_error(type);
	}
	if (icmp_error) {
		int reason = parse_inner(skb, p, dir, &in);

		if (reason != NAT_PARSED)
			return reason;
		bpf_skb_load_bytes(skb, in.addr_off, &inner_from, 4);
		iv = binding(dir, inner_from);
		if (iv)
			inner_to = iv->addr;
	}
	if (!v && !iv)
		return JUNEAU_NAT_PASS_UNMAPPED;
	/* H1/M3: the pod's address from a device other than the pod's (or
	 * from this host: ingress_ifindex 0) is not the pod's. tc_nat_pod has
	 * dropped it already where it runs; tc_nat_out, which sees no MAC any
	 * more, leaves it untranslated. */
	if (dir == NAT_OUT && v && (!v->ifindex || v->ifindex != skb->ingress_ifindex))
		return JUNEAU_NAT_PASS_WRONG_DEVICE;
	/* Looked up only for packets of a binding: the LPM trie costs more
	 * than the hash lookups every other packet stops at. */
	if (dir == NAT_OUT && in_cluster(p->ip.daddr))
		return JUNEAU_NAT_PASS_IN_CLUSTER;
	if (v && l4_check == L4_CHECK_CUT)
		return JUNEAU_NAT_PASS_TRUNCATED;
	if (iv && rewrite_inner(skb, p, &in, inner_from, inner_to) != WRITTEN)
		return JUNEAU_NAT_PASS_REWRITE_FAILED;
	if (v && rewrite_outer(skb, p, off, outer, outer_to, l4_check, l4_flags) != WRITTEN)
		return JUNEAU_NAT_PASS_REWRITE_FAILED;
	/* Counted against the ElasticIP of the binding that matched. */
	if (dir == NAT_IN)
		eip = v ? outer : inner_from;
	else
		eip = v ? outer_to : inner_to;
	count_bytes(skb, eip, dir);
	if (p->frag || p->more)
		count(JUNEAU_NAT_EVENT_FRAGMENT);
	if (iv)
		count(JUNEAU_NAT_EVENT_ICMP_ERROR);
	return dir == NAT_IN ? JUNEAU_NAT_DNAT : JUNEAU_NAT_SNAT;
}

static __always_inline int nat(struct __sk_buff *skb, enum nat_dir dir)
{
	struct pkt p = {};
	int reason = parse_ipv4(skb, &p);

	if (reason != NAT_PARSED)
		return exit_with(reason);
	return exit_with(translate(skb, &p, dir));
}

/* route() results. */
enum route_result {
	ROUTE_KERNEL	= -1,	/* no route, TTL expiring, too big, forwarding off:
				 * the kernel decides (and sends the ICMP error) */
	ROUTE_MACS	= 0,	/* routed, next hop's MAC known */
	ROUTE_ELSEWHERE	= 1,	/* routed, but not through want_ifindex */
	ROUTE_NEIGH	= 2,	/* routed, next hop's MAC not resolved yet */
};

/* Where a packet with header `ip`, its destination `daddr` after any
 * rewrite, goes without the kernel's forwarding path: no netfilter (no
 * conntrack entry, no masquerade). The one fib lookup of every redirect, the
 * fast path's too. Fills `fib` (egress ifindex, next hop, MACs).
 * `want_ifindex` 0 accepts any interface. */
static __always_inline enum route_result route(struct __sk_buff *skb, const struct ipv4_hdr *ip,
					       __be32 daddr, __u32 want_ifindex,
					       struct bpf_fib_lookup *fib)
{
	int rc;

	if (ip->ttl <= 1)
		return ROUTE_KERNEL;
	fib->family = AF_INET_;
	fib->l4_protocol = ip->protocol;
	fib->tos = ip->tos;
	fib->ipv4_src = ip->saddr;
	fib->ipv4_dst = daddr;
	fib->ifindex = skb->ingress_ifindex;
	/* tot_len 0: the kernel checks the skb itself against the MTU, GSO
	 * included. */
	fib->tot_len = 0;
	rc = bpf_fib_lookup(skb, fib, sizeof(*fib), 0);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS && rc != BPF_FIB_LKUP_RET_NO_NEIGH)
		return ROUTE_KERNEL;
	if (want_ifindex && fib->ifindex != want_ifindex)
		return ROUTE_ELSEWHERE;
	return rc == BPF_FIB_LKUP_RET_SUCCESS ? ROUTE_MACS : ROUTE_NEIGH;
}

/* route() for a packet tc_nat_in or tc_nat_tun received: one that would
 * leave through the interface it arrived on is left to the kernel too. */
static __always_inline enum route_result route_in(struct __sk_buff *skb, const struct ipv4_hdr *ip,
						  __be32 daddr, struct bpf_fib_lookup *fib)
{
	enum route_result routed = route(skb, ip, daddr, 0, fib);

	if (routed == ROUTE_KERNEL || fib->ifindex == skb->ingress_ifindex)
		return ROUTE_KERNEL;
	return routed;
}

/* H1: whether a packet routed to `fib` goes to the pod of binding `v`: through
 * its device and, when the binding names the pod's MAC and the neighbour is
 * resolved, to that MAC. A pod that got the address after the binding's pod
 * left is behind another veth, or has another MAC. */
static __always_inline int to_binding_device(const struct juneau_nat_value *v, const struct bpf_fib_lookup *fib,
					     enum route_result routed)
{
	if (!v->ifindex || fib->ifindex != v->ifindex)
		return 0;
	return routed != ROUTE_MACS || !has_mac(v) || same_mac(fib->dmac, v->mac);
}

/* Whether tc_nat_in sends what it translated on itself; else the kernel's
 * forwarding does (JUNEAU_NAT_CFG_KERNEL_FORWARD, or no juneau_nat_cfg). */
static __always_inline int redirects_in(void)
{
	__u32 zero = 0;
	struct juneau_nat_config *cfg = bpf_map_lookup_elem(&juneau_nat_cfg, &zero);

	return cfg && !(cfg->flags & JUNEAU_NAT_CFG_KERNEL_FORWARD);
}

/* Decrements the TTL as forwarding would (the redirect skips ip_forward). */
static __always_inline enum write_result decrement_ttl(struct __sk_buff *skb, const struct pkt *p)
{
	__u8 ttl = p->ip.ttl - 1;
	__be16 old = bpf_htons((__u16)p->ip.ttl << 8);
	__be16 new = bpf_htons((__u16)ttl << 8);

	if (bpf_l3_csum_replace(skb, p->l3 + IP_OFF_CHECK, old, new, 2) < 0)
		return WRITE_FAILED;
	return bpf_skb_store_bytes(skb, p->l3 + IP_OFF_TTL, &ttl, 1, 0) < 0 ? WRITE_FAILED : WRITTEN;
}

/* Sends the packet to fib's next hop, whose MAC the kernel resolves
 * (ROUTE_NEIGH, or MACs that could not be written). */
static __always_inline int redirect_neigh(const struct bpf_fib_lookup *fib)
{
	struct bpf_redir_neigh nh;

	/* Every byte set, the IPv6 part of the union too: without CAP_PERFMON
	 * (the agent has only CAP_BPF and CAP_NET_ADMIN) the verifier refuses
	 * a helper reading uninitialised stack. */
	__builtin_memset(&nh, 0, sizeof(nh));
	nh.nh_family = AF_INET_;
	nh.ipv4_nh = fib->ipv4_dst;
	return bpf_redirect_neigh(fib->ifindex, &nh, sizeof(nh), 0);
}

/* Sends the packet out of fib->ifindex, TTL decremented as forwarding
 * would, counted with `reason`. With the next hop's MAC known, a plain
 * redirect; else the kernel resolves the neighbour. */
static __always_inline int forward(struct __sk_buff *skb, struct pkt *p,
				   const struct bpf_fib_lookup *fib, enum route_result routed,
				   enum juneau_nat_reason reason)
{
	if (decrement_ttl(skb, p) != WRITTEN)
		return exit_with(JUNEAU_NAT_PASS_REWRITE_FAILED);
	count(reason);
	if (routed == ROUTE_MACS &&
	    bpf_skb_store_bytes(skb, 0, fib->dmac, ETH_ALEN, 0) == 0 &&
	    bpf_skb_store_bytes(skb, ETH_ALEN, fib->smac, ETH_ALEN, 0) == 0)
		return bpf_redirect(fib->ifindex, 0);
	return redirect_neigh(fib);
}

static __always_inline struct juneau_nat_value *direct(__be32 eip)
{
	struct juneau_nat_key key = { .addr = eip };

	return bpf_map_lookup_elem(&juneau_nat_direct, &key);
}

/* DIR-1: a packet for a direct ElasticIP goes, unchanged, to the device that
 * routes to the NIC holding it, with that NIC's address as the next hop: the
 * node needs no route for the ElasticIP. */
static __always_inline int direct_in(struct __sk_buff *skb, struct pkt *p,
				     struct juneau_nat_value *nic)
{
	struct bpf_fib_lookup fib = {};
	enum route_result routed = route_in(skb, &p->ip, nic->addr, &fib);

	if (routed == ROUTE_KERNEL)
		return exit_with(JUNEAU_NAT_PASS_ROUTE);
	if (!to_binding_device(nic, &fib, routed))
		return exit_with(JUNEAU_NAT_PASS_WRONG_DEVICE);
	count_bytes(skb, p->ip.daddr, NAT_IN);
	return forward(skb, p, &fib, routed, JUNEAU_NAT_DIRECT_IN);
}

static __always_inline struct juneau_nat_remote *remote(__be32 eip)
{
	struct juneau_nat_key key = { .addr = eip };

	return bpf_map_lookup_elem(&juneau_nat_remote, &key);
}

/* The tunnel key without the fields Linux 6.0 added (local_ipv4...): the
 * helpers accept this size on every kernel Juneau supports (Cilium's
 * TUNNEL_KEY_WITHOUT_SRC_IP). */
#define TUNNEL_KEY_SIZE	offsetof(struct bpf_tunnel_key, local_ipv4)

/* EN-9: a packet for a direct ElasticIP of another node goes, unchanged
 * inside, to the VXLAN device with the pod's node and the network's VNI as
 * its tunnel metadata; the device encapsulates and the kernel routes the
 * outer UDP packet to that node. */
static __always_inline int remote_in(struct __sk_buff *skb, struct pkt *p,
				     struct juneau_nat_remote *r)
{
	struct bpf_tunnel_key key;

	__builtin_memset(&key, 0, sizeof(key));
	key.remote_ipv4 = bpf_ntohl(r->node);	/* the helper takes host order */
	key.tunnel_id = r->vni;
	key.tunnel_ttl = 64;
	if (!r->ifindex || !r->vni ||
	    bpf_skb_set_tunnel_key(skb, &key, TUNNEL_KEY_SIZE, 0) < 0)
		return exit_with(JUNEAU_NAT_PASS_TUNNEL_KEY);
	count_bytes(skb, p->ip.daddr, NAT_IN);
	count(JUNEAU_NAT_REMOTE_ENCAP);
	return bpf_redirect(r->ifindex, 0);
}

/* ---- Fast path ------------------------------------------------------------
 * The common packet, TCP or UDP, unfragmented, without IP options, with its
 * headers in the linear area: read and written in place (direct packet
 * access) instead of through bpf_skb_load_bytes/store_bytes and the checksum
 * helpers. Every helper call is a function call and return, and on a host
 * with return-stack mitigations (SRSO "Safe RET" here) each return is
 * expensive: the general path makes about a dozen per packet, this one the
 * binding, counter and route lookups, the redirect, and the L4 checksum
 * helper only when the packet has an L4 checksum to move. Whatever it does
 * not recognise goes to the general path, which handles everything.
 *
 * The IP header is rewritten in place with its checksum computed here
 * (RFC 1624): the sum over the header does not change, so neither does a
 * CHECKSUM_COMPLETE skb->csum. The TCP/UDP checksum goes through
 * bpf_l4_csum_replace, which knows every ip_summed state (CHECKSUM_PARTIAL
 * from a veth with offloads holds the pseudo header sum, not the checksum). */

/* nat_in_fast(): not a TC action, the packet is the general path's (nothing
 * has been written then). */
enum { FAST_FALLBACK = -1 };

/* Ethernet, IPv4 without options, and a TCP header without options. */
#define FAST_PULL	(ETH_HLEN + sizeof(struct ipv4_hdr) + sizeof(struct tcphdr))

/* The TCP or UDP checksum of a packet the fast path takes. */
struct fast_l4 {
	__u32  check_off;	/* offset from skb->data */
	__u64  flags;		/* bpf_l4_csum_replace flags for it */
	__sum16 check;		/* its value: a zero UDP checksum is none */
	__u8   proto;
};

/* The IPv4 header of a packet the fast path takes, with its L4 checksum in
 * *l4, or NULL for the general path. Pulls the headers into the linear area
 * if they are not there. */
static __always_inline struct ipv4_hdr *fast_parse(struct __sk_buff *skb, struct fast_l4 *l4)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ipv4_hdr *ip = data + ETH_HLEN;
	__u32 l4_off = ETH_HLEN + sizeof(*ip), tot_len;
	__sum16 *check;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return NULL;
	if (data + FAST_PULL > data_end) {
		/* Headers outside the linear area (a packet socket's frames
		 * carry only the Ethernet header there): one pull, which the
		 * kernel's own IP receive would do anyway. */
		if (bpf_skb_pull_data(skb, skb->len < FAST_PULL ? skb->len : FAST_PULL) < 0)
			return NULL;
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
		ip = data + ETH_HLEN;
	}
	if ((void *)(ip + 1) > data_end)
		return NULL;
	if (ip->ver_ihl != 0x45 || (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET)))
		return NULL;
	l4->proto = ip->protocol;
	/* The checksum field inside the datagram and the linear area. Constant
	 * offsets from the packet pointer: without CAP_PERFMON (the agent's
	 * case) the verifier refuses a variable one, so barrier_var() keeps the
	 * compiler from merging the two fields' addresses into one. */
	if (l4->proto == IPPROTO_UDP_) {
		check = &((struct udphdr *)(ip + 1))->check;
		barrier_var(check);
		l4->check_off = l4_off + UDP_OFF_CHECK;
		l4->flags = BPF_F_PSEUDO_HDR | BPF_F_MARK_MANGLED_0;
	} else if (l4->proto == IPPROTO_TCP_) {
		check = &((struct tcphdr *)(ip + 1))->check;
		barrier_var(check);
		l4->check_off = l4_off + TCP_OFF_CHECK;
		l4->flags = BPF_F_PSEUDO_HDR;
	} else {
		return NULL;
	}
	if ((void *)(check + 1) > data_end)
		return NULL;
	l4->check = *check;
	tot_len = bpf_ntohs(ip->tot_len);
	if (tot_len < l4->check_off + 2 - ETH_HLEN || ETH_HLEN + tot_len > skb->len)
		return NULL;
	return ip;
}

/* Rewrites the destination of a packet fast_parse() took from `eip` to `nic`,
 * and its TTL when it is `forwarded` past ip_forward: the L4 checksum through
 * the helper, then the IP header in place. Returns the Ethernet header (for
 * the MACs), or NULL when the helper refused (the L4 checksum may then be
 * written already). */
static __always_inline struct ethhdr *fast_rewrite(struct __sk_buff *skb, const struct fast_l4 *l4,
						   __be32 eip, __be32 nic, int forwarded)
{
	struct ethhdr *eth;
	struct ipv4_hdr *ip;
	__sum16 sum;

	/* L4 checksum first: the helper invalidates packet pointers. A zero
	 * UDP checksum (none) stays zero and needs no call. */
	if (!(l4->proto == IPPROTO_UDP_ && l4->check == 0) &&
	    bpf_l4_csum_replace(skb, l4->check_off, eip, nic, l4->flags | 4) < 0)
		return NULL;
	eth = (void *)(long)skb->data;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > (void *)(long)skb->data_end)
		return NULL;
	sum = csum_replace4(ip->check, eip, nic);
	ip->daddr = nic;
	if (forwarded) {
		__u8 ttl = ip->ttl;

		sum = csum_replace2(sum, bpf_htons((__u16)ttl << 8), bpf_htons((__u16)(ttl - 1) << 8));
		ip->ttl = ttl - 1;
	}
	ip->check = sum;
	return eth;
}

/* Sends a packet fast_rewrite() rewrote out of fib->ifindex, like forward()
 * with its MACs written in place. */
static __always_inline int fast_forward(struct ethhdr *eth, const struct bpf_fib_lookup *fib,
					enum route_result routed)
{
	count(JUNEAU_NAT_DNAT_REDIRECT);
	if (routed == ROUTE_MACS) {
		__builtin_memcpy(eth->h_dest, fib->dmac, ETH_ALEN);
		__builtin_memcpy(eth->h_source, fib->smac, ETH_ALEN);
		return bpf_redirect(fib->ifindex, 0);
	}
	return redirect_neigh(fib);
}

/* tc_nat_in's DNAT of the common packet. Returns the TC action, or
 * FAST_FALLBACK for the general path, which also handles direct and remote
 * ElasticIPs. */
static __always_inline int nat_in_fast(struct __sk_buff *skb)
{
	struct bpf_fib_lookup fib = {};
	enum route_result routed;
	struct juneau_nat_value *v;
	struct fast_l4 l4;
	struct ipv4_hdr *ip = fast_parse(skb, &l4);
	struct ethhdr *eth;
	__be32 eip, nic;

	if (!ip)
		return FAST_FALLBACK;
	eip = ip->daddr;
	v = binding(NAT_IN, eip);
	if (!v)
		return direct(eip) || remote(eip) ? FAST_FALLBACK : exit_with(JUNEAU_NAT_PASS_UNMAPPED);
	nic = v->addr;
	if (!v->ifindex)
		return exit_with(JUNEAU_NAT_PASS_WRONG_DEVICE);
	/* Where it goes, decided before anything is written: only to the
	 * binding's device (H1). */
	routed = redirects_in() ? route_in(skb, ip, nic, &fib) : ROUTE_KERNEL;
	if (routed != ROUTE_KERNEL && !to_binding_device(v, &fib, routed))
		return exit_with(JUNEAU_NAT_PASS_WRONG_DEVICE);
	eth = fast_rewrite(skb, &l4, eip, nic, routed != ROUTE_KERNEL);
	if (!eth)
		return exit_with(JUNEAU_NAT_PASS_REWRITE_FAILED);
	count_bytes(skb, eip, NAT_IN);
	if (routed == ROUTE_KERNEL)
		return exit_with(JUNEAU_NAT_DNAT);
	return fast_forward(eth, &fib, routed);
}

SEC("tc")
int tc_nat_in(struct __sk_buff *skb)
{
	struct bpf_fib_lookup fib = {};
	struct juneau_nat_remote *far;
	struct juneau_nat_value *nic, *bound;
	enum juneau_nat_reason done;
	enum route_result routed;
	struct pkt p = {};
	int reason;
	__be32 daddr;

	/* A frame for another host's MAC (a switch flooding an unknown
	 * unicast destination, a promiscuous port) or a broadcast/multicast
	 * one is not this node's to translate: the kernel drops it after us,
	 * but translated and redirected it would reach the pod a second time. */
	if (skb->pkt_type != PACKET_HOST_)
		return exit_with(JUNEAU_NAT_PASS_OTHER_HOST);
	reason = nat_in_fast(skb);
	if (reason != FAST_FALLBACK)
		return reason;
	reason = parse_ipv4(skb, &p);
	if (reason != NAT_PARSED)
		return exit_with(reason);
	/* As on the fast path: only to the binding's device (H1), decided
	 * before translate() writes. */
	bound = binding(NAT_IN, p.ip.daddr);
	if (bound && !bound->ifindex)
		return exit_with(JUNEAU_NAT_PASS_WRONG_DEVICE);
	if (bound && redirects_in()) {
		routed = route_in(skb, &p.ip, bound->addr, &fib);
		if (routed != ROUTE_KERNEL && !to_binding_device(bound, &fib, routed))
			return exit_with(JUNEAU_NAT_PASS_WRONG_DEVICE);
	}
	done = translate(skb, &p, NAT_IN);
	if (done == JUNEAU_NAT_PASS_UNMAPPED && (nic = direct(p.ip.daddr)))
		return direct_in(skb, &p, nic);
	if (done == JUNEAU_NAT_PASS_UNMAPPED && (far = remote(p.ip.daddr)))
		return remote_in(skb, &p, far);
	if (done != JUNEAU_NAT_DNAT || !redirects_in())
		return exit_with(done);
	/* The destination is now the NIC address (ICMP errors whose outer
	 * destination is not ours were rewritten inside only: they keep
	 * theirs and the kernel routes them). */
	if (bpf_skb_load_bytes(skb, p.l3 + IP_OFF_DADDR, &daddr, 4) < 0)
		return exit_with(done);
	routed = route_in(skb, &p.ip, daddr, &fib);
	if (routed == ROUTE_KERNEL)
		return exit_with(done);
	return forward(skb, &p, &fib, routed, JUNEAU_NAT_DNAT_REDIRECT);
}

/* EN-9, the pod's node: what the VXLAN device decapsulated. The device is the
 * agent's own and carries only EN-9 traffic: a VNI or a destination that is
 * not a direct ElasticIP held here is dropped, not handed to the kernel,
 * which would forward a packet any host able to reach UDP 4789 injected. The
 * inner Ethernet header still names the first node's MAC (the frame is the
 * one the router sent there); direct_in writes the next hop's MACs. */
SEC("tc")
int tc_nat_tun(struct __sk_buff *skb)
{
	struct juneau_nat_vni_value *accepted;
	struct juneau_nat_peer_value *peer;
	struct juneau_nat_vni_key vni = {};
	struct juneau_nat_key outer = {};
	struct juneau_nat_value *nic;
	struct bpf_tunnel_key key;
	struct pkt p = {};
	int reason;

	__builtin_memset(&key, 0, sizeof(key));
	if (bpf_skb_get_tunnel_key(skb, &key, TUNNEL_KEY_SIZE, 0) < 0)
		return exit_with(JUNEAU_NAT_PASS_NO_TUNNEL);
	/* H3: only the cluster's Nodes encapsulate for us. */
	outer.addr = bpf_htonl(key.remote_ipv4);	/* the helper gives host order */
	peer = bpf_map_lookup_elem(&juneau_nat_peers, &outer);
	if (!peer)
		return drop_with(JUNEAU_NAT_DROP_TUNNEL_PEER);
	__sync_fetch_and_add(&peer->packets, 1);
	vni.vni = key.tunnel_id;
	accepted = bpf_map_lookup_elem(&juneau_nat_vni, &vni);
	if (!accepted)
		return drop_with(JUNEAU_NAT_DROP_TUNNEL_VNI);
	reason = parse_ipv4(skb, &p);
	if (reason != NAT_PARSED)
		return exit_with(reason);
	nic = direct(p.ip.daddr);
	if (!nic)
		return drop_with(JUNEAU_NAT_DROP_TUNNEL_UNMAPPED);
	__sync_fetch_and_add(&accepted->packets, 1);
	count(JUNEAU_NAT_EVENT_TUNNEL_IN);
	return direct_in(skb, &p, nic);
}

SEC("tc")
int tc_nat_out(struct __sk_buff *skb)
{
	return nat(skb, NAT_OUT);
}

SEC("tc")
int tc_nat_pod(struct __sk_buff *skb)
{
	struct bpf_fib_lookup fib = {};
	struct juneau_nat_config *cfg;
	struct juneau_nat_value *v;
	enum juneau_nat_reason done;
	enum route_result routed;
	struct pkt p = {};
	__u8 smac[ETH_ALEN];
	__u32 zero = 0;
	int reason = parse_ipv4(skb, &p), is_direct;

	if (reason != NAT_PARSED)
		return exit_with(reason);
	v = direct(p.ip.saddr);
	is_direct = v != 0;
	if (!v)
		v = binding(NAT_OUT, p.ip.saddr);
	if (!v)
		return exit_with(JUNEAU_NAT_PASS_UNMAPPED);
	/* M3: a binding's address is the pod's only from the pod's device and
	 * MAC; another pod may send with it (CAP_NET_RAW), or hold it after
	 * the bound pod left (H1). A direct ElasticIP from elsewhere is
	 * dropped: the kernel would forward it in the holder's name. A NAT
	 * pod address from another device goes to the kernel untranslated,
	 * and tc_nat_out, which checks the device too, leaves it so. From the
	 * right device (a bridge) with another MAC, tc_nat_out could not tell:
	 * dropped, unless it stays in the cluster (never translated). */
	if (!v->ifindex)
		return exit_with(JUNEAU_NAT_PASS_WRONG_DEVICE);
	if (v->ifindex != skb->ingress_ifindex)
		return is_direct ? drop_with(JUNEAU_NAT_DROP_SPOOFED) : exit_with(JUNEAU_NAT_PASS_WRONG_DEVICE);
	if (has_mac(v) && (bpf_skb_load_bytes(skb, ETH_ALEN, smac, ETH_ALEN) < 0 || !same_mac(smac, v->mac)))
		return is_direct || !in_cluster(p.ip.daddr) ? drop_with(JUNEAU_NAT_DROP_SPOOFED)
							    : exit_with(JUNEAU_NAT_PASS_WRONG_DEVICE);
	/* SEC-10: to an ElasticIP held on this node (the pod's own, or its
	 * neighbour's). Translated and sent out, it would go to the external
	 * segment, where nobody answers for it (this node does, but not to
	 * itself): the connection would hang. The kernel decides instead, as
	 * without this hook: its ARP for the address fails and the pod gets
	 * EHOSTUNREACH at once. */
	if (binding(NAT_IN, p.ip.daddr) || direct(p.ip.daddr))
		return exit_with(JUNEAU_NAT_PASS_TO_ELASTIC_IP);
	cfg = bpf_map_lookup_elem(&juneau_nat_cfg, &zero);
	if (!cfg || !cfg->ext_ifindex)
		return exit_with(JUNEAU_NAT_PASS_NOT_EXTERNAL);
	/* Not routable here (TTL expiring: traceroute; too big: the kernel
	 * fragments or sends the pod a fragmentation-needed naming its own
	 * address): the kernel decides, and tc_nat_out translates on the way. */
	routed = route(skb, &p.ip, p.ip.daddr, cfg->ext_ifindex, &fib);
	if (routed == ROUTE_KERNEL)
		return exit_with(JUNEAU_NAT_PASS_ROUTE);
	if (routed == ROUTE_ELSEWHERE)
		return exit_with(JUNEAU_NAT_PASS_NOT_EXTERNAL);
	if (is_direct) {
		/* DIR-1 return path: sent on unchanged, past a reverse-path
		 * filter that knows no route for the ElasticIP via the pod. */
		count_bytes(skb, p.ip.saddr, NAT_OUT);
		return forward(skb, &p, &fib, routed, JUNEAU_NAT_DIRECT_OUT);
	}
	done = translate(skb, &p, NAT_OUT);
	if (done != JUNEAU_NAT_SNAT)
		return exit_with(done);
	/* No netfilter on the way: no masquerade, no conntrack entry. */
	return forward(skb, &p, &fib, routed, JUNEAU_NAT_SNAT_REDIRECT);
}

char _license[] SEC("license") = "Dual BSD/GPL";
