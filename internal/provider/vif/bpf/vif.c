// SPDX-License-Identifier: GPL-2.0
// The classifiers of wirefs's VIFs (see bpf.go and ingress.go).
// wirefs_vif_in is a cls_bpf program on the IFB device that an
// interface's incoming packets are redirected to: it finds the local
// socket a packet is for and returns the HTB class the egress program
// recorded for that socket on the interface the packet came in by (0:
// none, the default class).
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct key {
	__u64 cgroup;
	__u32 ifindex;
	__u32 pad;
};

// the egress program's map (bpf.go), shared
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct key);
	__type(value, __u32);
} wirefs_vif SEC(".maps");

// the class of a socket's incoming packets, by socket: set by the egress
// program (every TCP socket sends, if only ACKs), read by the ingress one
struct sk_class {
	__u32 classid;
	__u32 ifindex;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sk_class);
} wirefs_sk SEC(".maps");

#define MAJOR 0x7766

// wirefs_vif_out is the egress classifier (see bpf.go): the priority of
// a packet of a wirefs cgroup names its VIF's leaf class, which HTB
// takes as the class; a socket's own priority naming a wirefs class is
// kept. It also records the class for the socket's incoming packets.
SEC("cgroup_skb/egress")
int wirefs_vif_out(struct __sk_buff *skb)
{
	struct key k = {.cgroup = bpf_skb_cgroup_id(skb), .ifindex = skb->ifindex};
	__u32 *classid = bpf_map_lookup_elem(&wirefs_vif, &k);
	__u32 cls = 0;
	if ((skb->priority >> 16) == MAJOR)
		cls = skb->priority; // the socket's own VIF (SO_PRIORITY)
	else if (classid)
		cls = skb->priority = *classid;
	struct bpf_sock *sk = skb->sk;
	if (sk)
		sk = bpf_sk_fullsock(sk);
	if (!sk)
		return 1;
	if (!cls) {
		bpf_sk_storage_delete(&wirefs_sk, sk);
		return 1;
	}
	struct sk_class *c = bpf_sk_storage_get(&wirefs_sk, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (c) {
		c->classid = cls;
		c->ifindex = skb->ifindex;
	}
	return 1;
}

SEC("tc")
int wirefs_vif_in(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct bpf_sock_tuple t = {};
	__u32 tlen;
	__u8 proto;
	void *l4;

	if ((void *)(eth + 1) > end)
		return 0;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > end || ip->ihl != 5)
			return 0;
		proto = ip->protocol;
		l4 = ip + 1;
		t.ipv4.saddr = ip->saddr;
		t.ipv4.daddr = ip->daddr;
		tlen = sizeof(t.ipv4);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > end)
			return 0;
		proto = ip6->nexthdr;
		l4 = ip6 + 1;
		__builtin_memcpy(t.ipv6.saddr, &ip6->saddr, 16);
		__builtin_memcpy(t.ipv6.daddr, &ip6->daddr, 16);
		tlen = sizeof(t.ipv6);
	} else {
		return 0;
	}
	// the ports sit at the same place in both headers
	struct udphdr *ports = l4;
	if ((void *)(ports + 1) > end)
		return 0;
	if (tlen == sizeof(t.ipv4)) {
		t.ipv4.sport = ports->source;
		t.ipv4.dport = ports->dest;
	} else {
		t.ipv6.sport = ports->source;
		t.ipv6.dport = ports->dest;
	}
	struct bpf_sock *sk;
	if (proto == IPPROTO_TCP)
		sk = bpf_sk_lookup_tcp(skb, &t, tlen, BPF_F_CURRENT_NETNS, 0);
	else if (proto == IPPROTO_UDP)
		sk = bpf_sk_lookup_udp(skb, &t, tlen, BPF_F_CURRENT_NETNS, 0);
	else
		return 0;
	if (!sk)
		return 0;
	__u32 classid = 0;
	struct sk_class *c = bpf_sk_storage_get(&wirefs_sk, sk, 0, 0);
	if (c && c->ifindex == skb->ingress_ifindex)
		classid = c->classid;
	bpf_sk_release(sk);
	return classid;
}

char _license[] SEC("license") = "GPL";
