/*
 * The resolver's port redirection inside a container's network namespace: one nf_tables batch over netlink (no
 * iptables process), as dockerd's iptables rules do it:
 *
 *   table ip berth {
 *     chain resolver { type nat hook output priority -100;
 *       ip daddr 127.0.0.11 meta l4proto udp udp dport 53 dnat to 127.0.0.11:UDP_PORT
 *       ip daddr 127.0.0.11 meta l4proto tcp tcp dport 53 dnat to 127.0.0.11:TCP_PORT } }
 *
 * Replies are translated back to port 53 by connection tracking.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "resolver.h"

#define NAT_BUF 4096
#define NEST_MAX 8

struct nlbuf {
	uint8_t b[NAT_BUF];
	size_t len;
	size_t msg;                 /* offset of the message being built */
	size_t nest[NEST_MAX];
	int depth;
	bool overflow;
	uint32_t seq;
};

static void *nl_reserve(struct nlbuf *m, size_t n)
{
	size_t need = NLMSG_ALIGN(n);
	if (m->overflow || m->len + need > sizeof(m->b)) {
		m->overflow = true;
		return NULL;
	}
	void *p = m->b + m->len;
	memset(p, 0, need);
	m->len += need;
	return p;
}

static void nl_begin(struct nlbuf *m, uint16_t type, uint16_t flags, uint8_t family, uint16_t res_id)
{
	m->msg = m->len;
	struct nlmsghdr *h = nl_reserve(m, NLMSG_HDRLEN);
	struct nfgenmsg *g = nl_reserve(m, sizeof(struct nfgenmsg));
	if (!h || !g)
		return;
	h->nlmsg_type = type;
	h->nlmsg_flags = (uint16_t)(NLM_F_REQUEST | flags);
	h->nlmsg_seq = ++m->seq;
	g->nfgen_family = family;
	g->version = NFNETLINK_V0;
	g->res_id = htons(res_id);
}

static void nl_end(struct nlbuf *m)
{
	if (m->overflow)
		return;
	((struct nlmsghdr *)(m->b + m->msg))->nlmsg_len = (uint32_t)(m->len - m->msg);
}

static void nl_attr(struct nlbuf *m, uint16_t type, const void *data, size_t n)
{
	struct nlattr *a = nl_reserve(m, NLA_HDRLEN + n);
	if (!a)
		return;
	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + n);
	memcpy((uint8_t *)a + NLA_HDRLEN, data, n);
}

static void nl_str(struct nlbuf *m, uint16_t type, const char *s)
{
	nl_attr(m, type, s, strlen(s) + 1);
}

static void nl_u32(struct nlbuf *m, uint16_t type, uint32_t v)
{
	uint32_t be = htonl(v);
	nl_attr(m, type, &be, sizeof(be));
}

static void nl_nest(struct nlbuf *m, uint16_t type)
{
	if (m->depth >= NEST_MAX) {
		m->overflow = true;
		return;
	}
	size_t at = m->len;
	struct nlattr *a = nl_reserve(m, NLA_HDRLEN);
	if (!a)
		return;
	a->nla_type = (uint16_t)(type | NLA_F_NESTED);
	m->nest[m->depth++] = at;
}

static void nl_nest_end(struct nlbuf *m)
{
	if (m->overflow || m->depth == 0)
		return;
	size_t at = m->nest[--m->depth];
	((struct nlattr *)(m->b + at))->nla_len = (uint16_t)(m->len - at);
}

/* One expression of a rule: its name and its attributes are written by the caller between this and nl_expr_end. */
static void nl_expr(struct nlbuf *m, const char *name)
{
	nl_nest(m, NFTA_LIST_ELEM);
	nl_str(m, NFTA_EXPR_NAME, name);
	nl_nest(m, NFTA_EXPR_DATA);
}

static void nl_expr_end(struct nlbuf *m)
{
	nl_nest_end(m);
	nl_nest_end(m);
}

static void nl_data(struct nlbuf *m, uint16_t type, const void *v, size_t n)
{
	nl_nest(m, type);
	nl_attr(m, NFTA_DATA_VALUE, v, n);
	nl_nest_end(m);
}

static void expr_payload(struct nlbuf *m, uint32_t base, uint32_t offset, uint32_t len)
{
	nl_expr(m, "payload");
	nl_u32(m, NFTA_PAYLOAD_DREG, NFT_REG_1);
	nl_u32(m, NFTA_PAYLOAD_BASE, base);
	nl_u32(m, NFTA_PAYLOAD_OFFSET, offset);
	nl_u32(m, NFTA_PAYLOAD_LEN, len);
	nl_expr_end(m);
}

static void expr_cmp_eq(struct nlbuf *m, const void *v, size_t n)
{
	nl_expr(m, "cmp");
	nl_u32(m, NFTA_CMP_SREG, NFT_REG_1);
	nl_u32(m, NFTA_CMP_OP, NFT_CMP_EQ);
	nl_data(m, NFTA_CMP_DATA, v, n);
	nl_expr_end(m);
}

static void expr_immediate(struct nlbuf *m, uint32_t reg, const void *v, size_t n)
{
	nl_expr(m, "immediate");
	nl_u32(m, NFTA_IMMEDIATE_DREG, reg);
	nl_data(m, NFTA_IMMEDIATE_DATA, v, n);
	nl_expr_end(m);
}

static void rule_dnat(struct nlbuf *m, uint8_t proto, uint16_t to_port)
{
	static const uint8_t resolver_ip[4] = { 127, 0, 0, 11 };
	uint16_t dns_port = htons(53), port = htons(to_port);
	nl_begin(m, (uint16_t)(NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_NEWRULE), NLM_F_CREATE | NLM_F_APPEND | NLM_F_ACK,
		 NFPROTO_IPV4, 0);
	nl_str(m, NFTA_RULE_TABLE, "berth");
	nl_str(m, NFTA_RULE_CHAIN, "resolver");
	nl_nest(m, NFTA_RULE_EXPRESSIONS);
	expr_payload(m, NFT_PAYLOAD_NETWORK_HEADER, 16, 4); /* ip daddr */
	expr_cmp_eq(m, resolver_ip, 4);
	nl_expr(m, "meta");
	nl_u32(m, NFTA_META_KEY, NFT_META_L4PROTO);
	nl_u32(m, NFTA_META_DREG, NFT_REG_1);
	nl_expr_end(m);
	expr_cmp_eq(m, &proto, 1);
	expr_payload(m, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2); /* dport */
	expr_cmp_eq(m, &dns_port, 2);
	expr_immediate(m, NFT_REG_1, resolver_ip, 4);
	expr_immediate(m, NFT_REG_2, &port, 2);
	nl_expr(m, "nat");
	nl_u32(m, NFTA_NAT_TYPE, NFT_NAT_DNAT);
	nl_u32(m, NFTA_NAT_FAMILY, NFPROTO_IPV4);
	nl_u32(m, NFTA_NAT_REG_ADDR_MIN, NFT_REG_1);
	nl_u32(m, NFTA_NAT_REG_PROTO_MIN, NFT_REG_2);
	nl_expr_end(m);
	nl_nest_end(m);
	nl_end(m);
}

/* Reads the kernel's acknowledgements of `want` messages; the first error wins. */
static int read_acks(int fd, int want, char *err, size_t cap)
{
	static uint8_t buf[NAT_BUF];
	while (want > 0) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(err, cap, "nf_tables: %s", n < 0 ? strerror(errno) : "no answer");
			return -1;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type != NLMSG_ERROR)
				continue;
			const struct nlmsgerr *e = NLMSG_DATA(h);
			if (e->error != 0) {
				snprintf(err, cap, "nf_tables: %s", strerror(-e->error));
				return -1;
			}
			want--;
		}
	}
	return 0;
}

int resolver_nat(uint16_t udp_port, uint16_t tcp_port, char *err, size_t cap)
{
	static struct nlbuf m;
	memset(&m, 0, sizeof(m));
	nl_begin(&m, NFNL_MSG_BATCH_BEGIN, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
	nl_end(&m);

	nl_begin(&m, (uint16_t)(NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_NEWTABLE), NLM_F_CREATE | NLM_F_ACK, NFPROTO_IPV4, 0);
	nl_str(&m, NFTA_TABLE_NAME, "berth");
	nl_end(&m);

	nl_begin(&m, (uint16_t)(NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_NEWCHAIN), NLM_F_CREATE | NLM_F_ACK, NFPROTO_IPV4, 0);
	nl_str(&m, NFTA_CHAIN_TABLE, "berth");
	nl_str(&m, NFTA_CHAIN_NAME, "resolver");
	nl_nest(&m, NFTA_CHAIN_HOOK);
	nl_u32(&m, NFTA_HOOK_HOOKNUM, NF_INET_LOCAL_OUT);
	nl_u32(&m, NFTA_HOOK_PRIORITY, (uint32_t)-100);
	nl_nest_end(&m);
	nl_str(&m, NFTA_CHAIN_TYPE, "nat");
	nl_end(&m);

	rule_dnat(&m, IPPROTO_UDP, udp_port);
	rule_dnat(&m, IPPROTO_TCP, tcp_port);

	nl_begin(&m, NFNL_MSG_BATCH_END, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
	nl_end(&m);
	if (m.overflow) {
		snprintf(err, cap, "nf_tables: batch too large");
		return -1;
	}

	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
	if (fd < 0) {
		snprintf(err, cap, "netlink: %s", strerror(errno));
		return -1;
	}
	struct timeval tv = { .tv_sec = 2 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	int rc = -1;
	if (sendto(fd, m.b, m.len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) != (ssize_t)m.len)
		snprintf(err, cap, "nf_tables: send: %s", strerror(errno));
	else
		rc = read_acks(fd, 4, err, cap);
	close(fd);
	return rc;
}
