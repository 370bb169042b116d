/* Routing netlink requests (see netlink.h). */
#define _GNU_SOURCE
#include "netlink.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NL_ALIGN(n) (((n) + 3u) & ~3u)

static uint32_t nl_seq;

int nl_open(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -1;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

void *nl_begin(struct nl_req *r, uint16_t type, uint16_t flags, size_t hdr_len)
{
	memset(r, 0, sizeof(*r));
	r->u.h.nlmsg_type = type;
	r->u.h.nlmsg_flags = (uint16_t)(NLM_F_REQUEST | NLM_F_ACK | flags);
	r->u.h.nlmsg_len = (uint32_t)NLMSG_LENGTH(hdr_len);
	r->u.h.nlmsg_seq = ++nl_seq;
	return NLMSG_DATA(&r->u.h);
}

void *nl_put_raw(struct nl_req *r, size_t len)
{
	size_t at = NL_ALIGN(r->u.h.nlmsg_len);
	if (at + NL_ALIGN(len) > sizeof(r->u.buf)) {
		r->overflow = 1;
		return NULL;
	}
	void *p = r->u.buf + at;
	memset(p, 0, NL_ALIGN(len));
	r->u.h.nlmsg_len = (uint32_t)(at + NL_ALIGN(len));
	return p;
}

struct rtattr *nl_put(struct nl_req *r, uint16_t type, const void *data, size_t len)
{
	struct rtattr *a = nl_put_raw(r, RTA_LENGTH(len));
	if (!a)
		return NULL;
	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	if (len > 0)
		memcpy(RTA_DATA(a), data, len);
	return a;
}

struct rtattr *nl_put_u32(struct nl_req *r, uint16_t type, uint32_t v)
{
	return nl_put(r, type, &v, sizeof(v));
}

struct rtattr *nl_put_str(struct nl_req *r, uint16_t type, const char *s)
{
	return nl_put(r, type, s, strlen(s) + 1);
}

struct rtattr *nl_nest(struct nl_req *r, uint16_t type)
{
	return nl_put(r, type, NULL, 0);
}

void nl_nest_end(struct nl_req *r, struct rtattr *nest)
{
	if (nest)
		nest->rta_len = (unsigned short)((char *)&r->u.buf[r->u.h.nlmsg_len] - (char *)nest);
}

/* Reads replies to `seq` until its ack (or error) comes; a reply with data first (RTM_GETLINK) goes to `data`. */
static int nl_recv(int fd, uint32_t seq, int (*data)(struct nlmsghdr *, void *), void *arg)
{
	static char buf[8192];
	int result = 1;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);
				if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
					return -EBADMSG;
				/* 0 is the ack; with a data reply before it, that reply's result stands */
				return e->error != 0 ? e->error : result <= 0 ? result : 0;
			}
			if (h->nlmsg_type == NLMSG_DONE)
				return result <= 0 ? result : 0;
			if (data)
				result = data(h, arg);
		}
	}
}

static int nl_send(int fd, struct nl_req *r)
{
	if (r->overflow)
		return -EMSGSIZE;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	ssize_t n;
	do
		n = sendto(fd, r->u.buf, r->u.h.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa));
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : 0;
}

int nl_talk(int fd, struct nl_req *r)
{
	int err = nl_send(fd, r);
	return err < 0 ? err : nl_recv(fd, r->u.h.nlmsg_seq, NULL, NULL);
}

static int link_index_of(struct nlmsghdr *h, void *arg)
{
	if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg)))
		return -EBADMSG;
	struct ifinfomsg *ifi = NLMSG_DATA(h);
	*(int *)arg = ifi->ifi_index;
	return ifi->ifi_index > 0 ? 0 : -ENODEV;
}

int nl_link_index(int fd, const char *name)
{
	struct nl_req r;
	struct ifinfomsg *ifi = nl_begin(&r, RTM_GETLINK, 0, sizeof(struct ifinfomsg));
	ifi->ifi_family = AF_UNSPEC;
	nl_put_str(&r, IFLA_IFNAME, name);
	int err = nl_send(fd, &r);
	if (err < 0)
		return err;
	/* the reply carries the index; the ack (NLM_F_ACK) follows it */
	int index = 0;
	err = nl_recv(fd, r.u.h.nlmsg_seq, link_index_of, &index);
	return err < 0 ? err : index;
}
