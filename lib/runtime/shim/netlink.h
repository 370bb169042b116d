/*
 * Requests to the kernel's routing netlink (NETLINK_ROUTE): one fixed-size
 * request buffer with nested attributes, sent and acknowledged one at a time.
 * No heap allocation. Used by netns.c (links, addresses, routes).
 */
#ifndef BERTH_NETLINK_H
#define BERTH_NETLINK_H

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stddef.h>
#include <stdint.h>

#define NL_REQ_MAX 1024

struct nl_req {
	union {
		struct nlmsghdr h;
		char buf[NL_REQ_MAX];
	} u;
	/* set once an attribute did not fit: nl_talk() then fails with EMSGSIZE */
	int overflow;
};

/* A NETLINK_ROUTE socket in the calling thread's network namespace, or -1 (errno set). */
int nl_open(void);

/* Starts a request of `type` (RTM_NEWLINK, ...) with NLM_F_REQUEST|NLM_F_ACK|`flags` and a zeroed header of `hdr_len` bytes (ifinfomsg, ifaddrmsg, rtmsg); returns that header. */
void *nl_begin(struct nl_req *r, uint16_t type, uint16_t flags, size_t hdr_len);

/* Appends an attribute; returns it (NULL when the request is full). */
struct rtattr *nl_put(struct nl_req *r, uint16_t type, const void *data, size_t len);
struct rtattr *nl_put_u32(struct nl_req *r, uint16_t type, uint32_t v);
struct rtattr *nl_put_str(struct nl_req *r, uint16_t type, const char *s);

/* A nested attribute: nl_nest() opens it, nl_nest_end() sets its length. Raw bytes (a nested ifinfomsg) go through nl_put_raw(). */
struct rtattr *nl_nest(struct nl_req *r, uint16_t type);
void nl_nest_end(struct nl_req *r, struct rtattr *nest);
void *nl_put_raw(struct nl_req *r, size_t len);

/* Sends the request and reads its acknowledgement: 0, or -errno (the kernel's, or the socket's). */
int nl_talk(int fd, struct nl_req *r);

/* The index of link `name` in the socket's namespace (RTM_GETLINK), or -errno. */
int nl_link_index(int fd, const char *name);

#endif
