/*
 * The container's embedded DNS resolver (protocol and reach in resolver.h): sockets on 127.0.0.11 inside the
 * container's network namespace, queries relayed to the daemon, the names it does not answer forwarded to the
 * container's upstreams from the container's namespace (or, for the host's own resolvers, from the monitor's).
 * Non-blocking throughout: nothing a container sends can stall the monitor (a client that does not read its answer
 * loses it); fixed-size tables, no heap allocation.
 * Long because the four parties of a query (the UDP and TCP listeners, the TCP clients, the daemon, the upstreams)
 * share one table of pending queries and one poll loop; the redirection's netlink is apart in resolver-nat.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "resolver.h"

#define RESOLVER_IP "127.0.0.11"
#define MAX_PENDING 32
#define MAX_CONNS 16
#define MAX_UPSTREAMS 3
#define MAX_QUERY 1500
#define DNS_HDR 12
#define WAIT_DAEMON_MS 10000
#define UPSTREAM_MS 4000
#define CONN_IDLE_MS 10000
#define PEER_WRITE_MS 1000
#define UDP_BURST 32
#define FRAME_HDR 5
#define PEER_IN_CAP (FRAME_HDR + 4 + 65535)

enum rcode { RCODE_SERVFAIL = 2, RCODE_REFUSED = 5 };
enum pstate { P_FREE, P_DAEMON, P_CONNECT, P_RECV };
enum kind { K_UDP, K_LISTEN, K_PEER, K_CONN, K_UP };

struct upstream {
	bool host, v6;
	uint16_t port;
	uint8_t addr[16];
};

struct pending {
	uint32_t token;
	uint8_t state;
	bool tcp;
	int conn;                 /* TCP: the client's index in conns, -1 once it is gone */
	struct sockaddr_in from;  /* UDP: the client */
	uint16_t qlen;
	uint8_t query[MAX_QUERY];
	int up;                   /* the upstream being asked */
	int fd;                   /* the socket to it */
	int64_t deadline;
	/* TCP reply relay: its length and header are read first (the rcode decides), then streamed */
	uint8_t head[2 + DNS_HDR];
	uint8_t head_len;
	uint32_t left;
};

struct conn {
	int fd;
	uint16_t len;
	bool busy;                /* a query of it is pending: not read until answered */
	int64_t deadline;
	uint8_t buf[2 + MAX_QUERY];
};

static int udp_fd = -1, listen_fd = -1, peer_fd = -1;
static int netns_fd = -1, self_ns_fd = -1;
static struct upstream ups[MAX_UPSTREAMS];
static int nups;
static struct pending pend[MAX_PENDING];
static struct conn conns[MAX_CONNS];
static uint32_t generation;
static uint8_t peer_in[PEER_IN_CAP];
static size_t peer_in_len;
static uint8_t io_buf[65536];
static struct {
	uint8_t kind;
	int idx;
} polled[RESOLVER_MAX_FDS];

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	/* stderr is /dev/null under the daemon; useful when the monitor runs by hand */
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0) {
		ssize_t w = write(STDERR_FILENO, buf, strnlen(buf, sizeof(buf)));
		w = write(STDERR_FILENO, "\n", 1);
		(void)w;
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

/* ------------------------------------------------------------ namespaces */

/* Back to the monitor's own namespace; the monitor cannot go on from any other. */
static void leave_netns(void)
{
	if (setns(self_ns_fd, CLONE_NEWNET) < 0) {
		note("berth-shim: resolver: cannot return to the monitor's network namespace: %s", strerror(errno));
		abort();
	}
}

/* A socket in the container's namespace (host false) or the monitor's own. */
static int socket_in(bool host, int domain, int type)
{
	if (host)
		return socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (setns(netns_fd, CLONE_NEWNET) < 0)
		return -1;
	int fd = socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int e = errno;
	leave_netns();
	errno = e;
	return fd;
}

static int bind_resolver(int type, uint16_t port, uint16_t *bound)
{
	int fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	/* the address is lo's whether or not lo is up yet */
	setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	inet_pton(AF_INET, RESOLVER_IP, &a.sin_addr);
	socklen_t alen = sizeof(a);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || (type == SOCK_STREAM && listen(fd, 16) < 0) ||
	    getsockname(fd, (struct sockaddr *)&a, &alen) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	*bound = ntohs(a.sin_port);
	return fd;
}

/* In the container's namespace: the two sockets on ports the kernel picks, and 53 redirected to them. */
static int open_sockets(char *err, size_t cap)
{
	uint16_t up = 0, tp = 0;
	udp_fd = bind_resolver(SOCK_DGRAM, 0, &up);
	listen_fd = udp_fd < 0 ? -1 : bind_resolver(SOCK_STREAM, 0, &tp);
	if (udp_fd < 0 || listen_fd < 0) {
		snprintf(err, cap, "resolver: bind %s: %s", RESOLVER_IP, strerror(errno));
		return -1;
	}
	char why[128];
	if (resolver_nat(up, tp, why, sizeof(why)) == 0)
		return 0;
	/* no nf_tables: port 53 itself (a program of the container binding port 53 on every address then fails) */
	note("berth-shim: resolver: %s; binding %s:53", why, RESOLVER_IP);
	close_fd(&udp_fd);
	close_fd(&listen_fd);
	udp_fd = bind_resolver(SOCK_DGRAM, 53, &up);
	listen_fd = udp_fd < 0 ? -1 : bind_resolver(SOCK_STREAM, 53, &tp);
	if (udp_fd < 0 || listen_fd < 0) {
		snprintf(err, cap, "resolver: bind %s:53: %s", RESOLVER_IP, strerror(errno));
		return -1;
	}
	return 0;
}

int resolver_open(const char *netns, char *err, size_t cap)
{
	if (udp_fd >= 0)
		return 0;
	if (self_ns_fd < 0 && (self_ns_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(err, cap, "resolver: /proc/self/ns/net: %s", strerror(errno));
		return -1;
	}
	close_fd(&netns_fd);
	if ((netns_fd = open(netns, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(err, cap, "resolver: %s: %s", netns, strerror(errno));
		return -1;
	}
	if (setns(netns_fd, CLONE_NEWNET) < 0) {
		snprintf(err, cap, "resolver: setns %s: %s", netns, strerror(errno));
		close_fd(&netns_fd);
		return -1;
	}
	int rc = open_sockets(err, cap);
	leave_netns();
	if (rc < 0) {
		close_fd(&udp_fd);
		close_fd(&listen_fd);
		close_fd(&netns_fd);
	}
	return rc;
}

/* ------------------------------------------------------------- messages */

/* The end of a message's question (one name, type, class), or 0 when it does not parse. */
static size_t question_end(const uint8_t *q, size_t n)
{
	if (n < DNS_HDR || (q[4] << 8 | q[5]) != 1)
		return 0;
	size_t off = DNS_HDR;
	for (;;) {
		if (off >= n)
			return 0;
		uint8_t l = q[off++];
		if (l == 0)
			break;
		if (l > 63 || off + l > n)
			return 0;
		off += l;
	}
	return off + 4 <= n ? off + 4 : 0;
}

/* A header-and-question reply to query q with rcode, in out (at least n bytes); returns its length. */
static size_t failure_reply(const uint8_t *q, size_t n, uint8_t rcode, uint8_t *out)
{
	size_t end = question_end(q, n);
	memcpy(out, q, end > 0 ? end : DNS_HDR);
	out[2] = (uint8_t)(0x80 | (q[2] & 0x79)); /* QR, opcode and RD kept */
	out[3] = (uint8_t)(0x80 | rcode);          /* RA */
	out[4] = 0;
	out[5] = end > 0 ? 1 : 0;
	memset(out + 6, 0, 6);
	return end > 0 ? end : DNS_HDR;
}

/* ---------------------------------------------------------------- peer */

static void drop_peer(void)
{
	close_fd(&peer_fd);
	peer_in_len = 0;
}

static int peer_write(const uint8_t *p, size_t n)
{
	int64_t deadline = now_ms() + PEER_WRITE_MS;
	while (n > 0) {
		ssize_t w = send(peer_fd, p, n, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int64_t left = deadline - now_ms();
			struct pollfd pfd = { .fd = peer_fd, .events = POLLOUT };
			if (left > 0 && poll(&pfd, 1, (int)left) >= 0)
				continue;
		}
		return -1;
	}
	return 0;
}

static void peer_frame(uint8_t type, const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	if (peer_fd < 0)
		return;
	uint8_t h[FRAME_HDR];
	h[0] = type;
	put32(h + 1, (uint32_t)(an + bn));
	if (peer_write(h, sizeof(h)) < 0 || (an > 0 && peer_write(a, an) < 0) || (bn > 0 && peer_write(b, bn) < 0))
		drop_peer();
}

static void send_query(struct pending *p)
{
	uint8_t h[5];
	put32(h, p->token);
	h[4] = p->tcp ? 1 : 0;
	peer_frame('Q', h, sizeof(h), p->query, p->qlen);
}

/* -------------------------------------------------------------- pending */

static struct pending *find_pending(uint32_t token)
{
	struct pending *p = &pend[token & 0xff];
	return (token & 0xff) < MAX_PENDING && p->state != P_FREE && p->token == token ? p : NULL;
}

static void free_pending(struct pending *p)
{
	close_fd(&p->fd);
	if (p->tcp && p->conn >= 0) {
		conns[p->conn].busy = false;
		conns[p->conn].deadline = now_ms() + CONN_IDLE_MS;
	}
	p->state = P_FREE;
}

static void close_conn(int i)
{
	close_fd(&conns[i].fd);
	for (int k = 0; k < MAX_PENDING; k++)
		if (pend[k].state != P_FREE && pend[k].tcp && pend[k].conn == i)
			pend[k].conn = -1;
}

/* Sends a whole message to the pending query's client (with its length over TCP), never waiting. */
static void reply(struct pending *p, const uint8_t *msg, size_t n)
{
	if (!p->tcp) {
		sendto(udp_fd, msg, n, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&p->from, sizeof(p->from));
	} else if (p->conn >= 0) {
		uint8_t len[2] = { (uint8_t)(n >> 8), (uint8_t)n };
		struct iovec iov[2] = { { len, 2 }, { (void *)msg, n } };
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
		if (sendmsg(conns[p->conn].fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)(n + 2))
			close_conn(p->conn);
	}
	free_pending(p);
}

static void fail_pending(struct pending *p, uint8_t rcode)
{
	uint8_t out[MAX_QUERY];
	reply(p, out, failure_reply(p->query, p->qlen, rcode, out));
}

/* A new query from a client; a full table refuses it (REFUSED, as dockerd past its limit). */
static void new_query(const uint8_t *q, size_t n, bool tcp, int conn, const struct sockaddr_in *from)
{
	if (n < DNS_HDR || (q[2] & 0x80) != 0)
		return; /* not a query */
	struct pending *p = NULL;
	for (int i = 0; i < MAX_PENDING && !p; i++)
		if (pend[i].state == P_FREE)
			p = &pend[i];
	if (!p || n > MAX_QUERY) {
		uint8_t out[MAX_QUERY];
		struct pending tmp = { .tcp = tcp, .conn = conn, .fd = -1, .qlen = (uint16_t)(n > MAX_QUERY ? DNS_HDR : n) };
		if (from)
			tmp.from = *from;
		memcpy(tmp.query, q, tmp.qlen);
		size_t k = failure_reply(tmp.query, tmp.qlen, RCODE_REFUSED, out);
		tmp.state = P_DAEMON;
		if (tcp)
			conns[conn].busy = true;
		reply(&tmp, out, k);
		return;
	}
	generation = (generation + 1) & 0xffffff;
	p->token = generation << 8 | (uint32_t)(p - pend);
	p->state = P_DAEMON;
	p->tcp = tcp;
	p->conn = conn;
	if (from)
		p->from = *from;
	p->qlen = (uint16_t)n;
	memcpy(p->query, q, n);
	p->up = -1;
	p->fd = -1;
	p->deadline = now_ms() + WAIT_DAEMON_MS;
	if (tcp)
		conns[conn].busy = true;
	send_query(p);
}

/* ------------------------------------------------------------ upstreams */

static void next_upstream(struct pending *p);

static void upstream_sent(struct pending *p)
{
	p->state = P_RECV;
	p->head_len = 0;
	p->left = 0;
}

static void next_upstream(struct pending *p)
{
	for (;;) {
		close_fd(&p->fd);
		if (++p->up >= nups) {
			fail_pending(p, RCODE_SERVFAIL);
			return;
		}
		const struct upstream *u = &ups[p->up];
		struct sockaddr_storage ss;
		socklen_t sl;
		memset(&ss, 0, sizeof(ss));
		if (u->v6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
			a->sin6_family = AF_INET6;
			a->sin6_port = htons(u->port);
			memcpy(&a->sin6_addr, u->addr, 16);
			sl = sizeof(*a);
		} else {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;
			a->sin_family = AF_INET;
			a->sin_port = htons(u->port);
			memcpy(&a->sin_addr, u->addr, 4);
			sl = sizeof(*a);
		}
		p->fd = socket_in(u->host, u->v6 ? AF_INET6 : AF_INET, p->tcp ? SOCK_STREAM : SOCK_DGRAM);
		if (p->fd < 0)
			continue;
		p->deadline = now_ms() + UPSTREAM_MS;
		int rc = connect(p->fd, (struct sockaddr *)&ss, sl);
		if (p->tcp) {
			if (rc < 0 && errno != EINPROGRESS)
				continue;
			p->state = P_CONNECT;
			return;
		}
		if (rc < 0 || send(p->fd, p->query, p->qlen, MSG_NOSIGNAL) != p->qlen)
			continue;
		upstream_sent(p);
		return;
	}
}

static void forward(struct pending *p)
{
	p->up = -1;
	next_upstream(p);
}

static bool failure_rcode(const uint8_t *hdr)
{
	uint8_t rc = hdr[3] & 0x0f;
	return rc == RCODE_SERVFAIL || rc == RCODE_REFUSED;
}

static void upstream_udp(struct pending *p)
{
	ssize_t n = recv(p->fd, io_buf, sizeof(io_buf), 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	/* a reply to another query (or none at all) is ignored; an error or a failure asks the next one */
	if (n >= 0 && (n < DNS_HDR || (io_buf[2] & 0x80) == 0 || memcmp(io_buf, p->query, 2) != 0))
		return;
	if (n < 0 || failure_rcode(io_buf)) {
		next_upstream(p);
		return;
	}
	reply(p, io_buf, (size_t)n);
}

static void upstream_tcp(struct pending *p, short revents)
{
	if (p->state == P_CONNECT) {
		int e = 0;
		socklen_t el = sizeof(e);
		if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
			return;
		if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e != 0) {
			next_upstream(p);
			return;
		}
		uint8_t len[2] = { (uint8_t)(p->qlen >> 8), (uint8_t)p->qlen };
		struct iovec iov[2] = { { len, 2 }, { p->query, p->qlen } };
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
		if (sendmsg(p->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) != p->qlen + 2) {
			next_upstream(p);
			return;
		}
		upstream_sent(p);
		return;
	}
	if (p->head_len < sizeof(p->head)) {
		ssize_t n = recv(p->fd, p->head + p->head_len, sizeof(p->head) - p->head_len, 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			next_upstream(p);
			return;
		}
		p->head_len = (uint8_t)(p->head_len + n);
		if (p->head_len < sizeof(p->head))
			return;
		uint32_t len = (uint32_t)(p->head[0] << 8 | p->head[1]);
		if (len < DNS_HDR || failure_rcode(p->head + 2)) {
			next_upstream(p);
			return;
		}
		if (p->conn < 0) {
			free_pending(p);
			return;
		}
		if (send(conns[p->conn].fd, p->head, sizeof(p->head), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(p->head)) {
			close_conn(p->conn);
			free_pending(p);
			return;
		}
		p->left = len - DNS_HDR;
		if (p->left == 0)
			free_pending(p);
		return;
	}
	size_t want = p->left < sizeof(io_buf) ? p->left : sizeof(io_buf);
	ssize_t n = recv(p->fd, io_buf, want, 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	/* the reply was cut short after its start went to the client: the client's connection ends too */
	if (n <= 0 || p->conn < 0 ||
	    send(conns[p->conn].fd, io_buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) != n) {
		if (p->conn >= 0)
			close_conn(p->conn);
		free_pending(p);
		return;
	}
	p->left -= (uint32_t)n;
	if (p->left == 0)
		free_pending(p);
}

/* ------------------------------------------------------------ peer input */

/* Lines "h|c ADDRESS PORT": h from the monitor's namespace, c from the container's. */
static void set_upstreams(const uint8_t *p, size_t n)
{
	char line[128];
	nups = 0;
	while (n > 0 && nups < MAX_UPSTREAMS) {
		const uint8_t *nl = memchr(p, '\n', n);
		size_t len = nl ? (size_t)(nl - p) : n;
		if (len < sizeof(line)) {
			memcpy(line, p, len);
			line[len] = '\0';
			char where, addr[64];
			unsigned port;
			struct upstream *u = &ups[nups];
			if (sscanf(line, "%c %63s %u", &where, addr, &port) == 3 && (where == 'h' || where == 'c') &&
			    port > 0 && port < 65536) {
				u->host = where == 'h';
				u->port = (uint16_t)port;
				u->v6 = strchr(addr, ':') != NULL;
				if (inet_pton(u->v6 ? AF_INET6 : AF_INET, addr, u->addr) == 1)
					nups++;
			}
		}
		if (!nl)
			break;
		n -= len + 1;
		p = nl + 1;
	}
}

static void start_frame(const uint8_t *p, size_t n)
{
	char path[4096], err[256] = "";
	if (n == 0 || n >= sizeof(path)) {
		snprintf(err, sizeof(err), "resolver: bad namespace path");
	} else {
		memcpy(path, p, n);
		path[n] = '\0';
		resolver_open(path, err, sizeof(err));
	}
	peer_frame('R', (const uint8_t *)err, udp_fd >= 0 ? 0 : strlen(err), NULL, 0);
}

/* Handles one frame; false for a malformed one (the peer is dropped). */
static bool peer_message(uint8_t type, const uint8_t *p, size_t n)
{
	switch (type) {
	case 'S':
		start_frame(p, n);
		return true;
	case 'U':
		set_upstreams(p, n);
		return true;
	case 'A':
	case 'F': {
		if (n < 4 || (type == 'A' && n < 4 + DNS_HDR))
			return false;
		struct pending *q = find_pending(get32(p));
		if (!q || q->state != P_DAEMON)
			return true; /* answered already (timed out) */
		if (type == 'A')
			reply(q, p + 4, n - 4);
		else
			forward(q);
		return true;
	}
	default:
		return false;
	}
}

static void peer_input(const uint8_t *rest, size_t rn)
{
	if (rn > 0) {
		if (rn > sizeof(peer_in) - peer_in_len) {
			drop_peer();
			return;
		}
		memcpy(peer_in + peer_in_len, rest, rn);
		peer_in_len += rn;
	}
	size_t off = 0;
	while (peer_fd >= 0 && peer_in_len - off >= FRAME_HDR) {
		uint32_t len = get32(peer_in + off + 1);
		if (len > sizeof(peer_in) - FRAME_HDR) {
			drop_peer();
			return;
		}
		if (peer_in_len - off < FRAME_HDR + len)
			break;
		if (!peer_message(peer_in[off], peer_in + off + FRAME_HDR, len)) {
			drop_peer();
			return;
		}
		off += FRAME_HDR + len;
	}
	if (peer_fd < 0)
		return;
	memmove(peer_in, peer_in + off, peer_in_len - off);
	peer_in_len -= off;
}

void resolver_take_peer(int fd, const uint8_t *rest, size_t n)
{
	drop_peer();
	peer_fd = fd;
	/* every query still waiting for a daemon goes to this one */
	for (int i = 0; i < MAX_PENDING && peer_fd >= 0; i++)
		if (pend[i].state == P_DAEMON)
			send_query(&pend[i]);
	peer_input(rest, n);
}

static void read_peer(void)
{
	ssize_t n = read(peer_fd, peer_in + peer_in_len, sizeof(peer_in) - peer_in_len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		drop_peer();
		return;
	}
	peer_in_len += (size_t)n;
	peer_input(NULL, 0);
}

/* --------------------------------------------------------------- clients */

static void read_udp(void)
{
	for (int i = 0; i < UDP_BURST; i++) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(udp_fd, io_buf, sizeof(io_buf), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
		if (n < 0)
			return;
		if (fl == sizeof(from) && from.sin_family == AF_INET)
			new_query(io_buf, (size_t)n, false, -1, &from);
	}
}

static void accept_conns(void)
{
	for (;;) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		int i;
		for (i = 0; i < MAX_CONNS && conns[i].fd >= 0; i++)
			;
		if (i == MAX_CONNS) {
			close(fd);
			continue;
		}
		conns[i].fd = fd;
		conns[i].len = 0;
		conns[i].busy = false;
		conns[i].deadline = now_ms() + CONN_IDLE_MS;
	}
}

/* A connection's next complete query (length-prefixed), if its buffer holds one. */
static void conn_next(int i)
{
	struct conn *c = &conns[i];
	if (c->busy || c->len < 2)
		return;
	size_t qn = (size_t)(c->buf[0] << 8 | c->buf[1]);
	if (qn > MAX_QUERY) {
		close_conn(i);
		return;
	}
	if (c->len < 2 + qn)
		return;
	new_query(c->buf + 2, qn, true, i, NULL);
	if (c->fd < 0)
		return;
	memmove(c->buf, c->buf + 2 + qn, c->len - 2 - qn);
	c->len = (uint16_t)(c->len - 2 - qn);
}

static void read_conn(int i)
{
	struct conn *c = &conns[i];
	ssize_t n = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close_conn(i);
		return;
	}
	c->len = (uint16_t)(c->len + n);
	c->deadline = now_ms() + CONN_IDLE_MS;
	conn_next(i);
}

/* -------------------------------------------------------------- the loop */

static int add(struct pollfd *pfd, int n, int cap, int fd, short ev, uint8_t kind, int idx)
{
	if (n >= cap || n >= RESOLVER_MAX_FDS)
		return n;
	pfd[n] = (struct pollfd){ .fd = fd, .events = ev };
	polled[n].kind = kind;
	polled[n].idx = idx;
	return n + 1;
}

int resolver_poll_fill(struct pollfd *pfd, int cap)
{
	int n = 0;
	if (udp_fd >= 0)
		n = add(pfd, n, cap, udp_fd, POLLIN, K_UDP, 0);
	if (listen_fd >= 0)
		n = add(pfd, n, cap, listen_fd, POLLIN, K_LISTEN, 0);
	if (peer_fd >= 0)
		n = add(pfd, n, cap, peer_fd, POLLIN, K_PEER, 0);
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i].fd >= 0 && !conns[i].busy)
			n = add(pfd, n, cap, conns[i].fd, POLLIN, K_CONN, i);
	for (int i = 0; i < MAX_PENDING; i++)
		if (pend[i].state == P_CONNECT || pend[i].state == P_RECV)
			n = add(pfd, n, cap, pend[i].fd, pend[i].state == P_CONNECT ? POLLOUT : POLLIN, K_UP, i);
	return n;
}

static void expire(void)
{
	int64_t now = now_ms();
	for (int i = 0; i < MAX_PENDING; i++) {
		struct pending *p = &pend[i];
		if (p->state == P_FREE || now < p->deadline)
			continue;
		if (p->state == P_DAEMON)
			fail_pending(p, RCODE_SERVFAIL);
		else if (p->tcp && p->state == P_RECV && p->head_len == sizeof(p->head)) {
			/* part of the reply went out already */
			if (p->conn >= 0)
				close_conn(p->conn);
			free_pending(p);
		} else
			next_upstream(p);
	}
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i].fd >= 0 && !conns[i].busy && now >= conns[i].deadline)
			close_conn(i);
}

void resolver_poll_handle(const struct pollfd *pfd, int n)
{
	for (int k = 0; k < n; k++) {
		short re = pfd[k].revents;
		if (!re)
			continue;
		int i = polled[k].idx;
		switch (polled[k].kind) {
		case K_UDP:
			read_udp();
			break;
		case K_LISTEN:
			accept_conns();
			break;
		case K_PEER:
			if (peer_fd == pfd[k].fd)
				read_peer();
			break;
		case K_CONN:
			if (conns[i].fd == pfd[k].fd && !conns[i].busy)
				read_conn(i);
			break;
		case K_UP:
			if (pend[i].fd != pfd[k].fd)
				break;
			if (pend[i].tcp)
				upstream_tcp(&pend[i], re);
			else if (pend[i].state == P_RECV)
				upstream_udp(&pend[i]);
			break;
		}
	}
	/* connections whose query was answered may hold the next one already */
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i].fd >= 0)
			conn_next(i);
	expire();
}

int resolver_timeout_ms(void)
{
	int64_t next = -1;
	for (int i = 0; i < MAX_PENDING; i++)
		if (pend[i].state != P_FREE && (next < 0 || pend[i].deadline < next))
			next = pend[i].deadline;
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i].fd >= 0 && !conns[i].busy && (next < 0 || conns[i].deadline < next))
			next = conns[i].deadline;
	if (next < 0)
		return -1;
	int64_t left = next - now_ms();
	return left <= 0 ? 0 : left > 60000 ? 60000 : (int)left;
}

void resolver_close(void)
{
	for (int i = 0; i < MAX_PENDING; i++)
		if (pend[i].state != P_FREE)
			free_pending(&pend[i]);
	for (int i = 0; i < MAX_CONNS; i++)
		close_fd(&conns[i].fd);
	close_fd(&udp_fd);
	close_fd(&listen_fd);
	drop_peer();
	close_fd(&netns_fd);
}

__attribute__((constructor)) static void resolver_init(void)
{
	for (int i = 0; i < MAX_CONNS; i++)
		conns[i].fd = -1;
	for (int i = 0; i < MAX_PENDING; i++)
		pend[i].fd = -1;
}
