/*
 * ports.c — published ports held by the container's monitor and served by one unprivileged relay per container.
 * The protocol is in ports.h. The monitor binds (as root: ports below 1024 need it), the relay (a fork, no exec)
 * serves: an epoll loop, edge-triggered for relayed connections, with no heap allocation.
 * Long because the relay is one loop over its tables (listening maps, TCP pairs spliced through pipes, UDP flows
 * and their expiry) beside the monitor's side (parse, bind, fork, reap, stop).
 */
#define _GNU_SOURCE
#include "ports.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PORTS_MAX 4096
#define CONNS_MAX 1024
#define FLOWS_MAX 1024
#define FDS_PER_CONN 6 /* two sockets, two pipes */
#define UDP_IDLE_MS 90000 /* dockerd's proxy keeps a UDP flow 90 s */
#define DGRAM_MAX 65536
#define PIPE_CAP 65536 /* a pipe's default size: what one direction of a connection holds in flight */
#define DGRAMS_PER_WAKE 64
#define RELAY_UID 65534
#define RELAY_GID 65534
#define RELAY_RESTARTS 3
#define EVENTS 64

enum kind { K_LISTENER = 1, K_CLIENT = 2, K_UPSTREAM = 3, K_FLOW = 4 };

struct mapping {
	int type; /* SOCK_STREAM or SOCK_DGRAM */
	struct sockaddr_storage host, target;
	socklen_t host_len, target_len;
	int fd;
	char text[128]; /* "tcp 0.0.0.0:8080", for errors */
};

/* One direction of a relayed connection: src's bytes through a pipe to dst. */
struct dir {
	int rd, wr;
	size_t pending;
	bool eof, shut;
};

/*
 * A relayed TCP connection. The tables are zero until used (untouched pages cost no memory): fd[0] == 0 marks a
 * free slot (fd 0 is the relay's /dev/null, never a connection's).
 */
struct conn {
	int fd[2]; /* 0 the client, 1 the upstream */
	uint32_t gen; /* counts the slot's uses: an event queued for a closed connection never reaches the next one */
	bool readable[2], writable[2];
	bool connected;
	struct dir dir[2]; /* 0 client → upstream, 1 upstream → client */
};

struct flow {
	int fd; /* 0: a free slot (fd 0 is the relay's /dev/null, never a flow's) */
	int mapping;
	union {
		struct sockaddr sa;
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} client;
	socklen_t client_len;
	int64_t last_ms;
};

static struct mapping maps[PORTS_MAX];
static int nmaps;
static char *cmdline_start, *cmdline_end;
static pid_t relay_pid = -1;
static int relay_restarts;

/* ---------------------------------------------------------------- options */

void ports_cmdline(int argc, char **argv)
{
	if (argc < 1)
		return;
	cmdline_start = argv[0];
	cmdline_end = argv[argc - 1] + strlen(argv[argc - 1]);
}

static int parse_addr(const char *ip, const char *port, struct sockaddr_storage *ss, socklen_t *len)
{
	char *end;
	long p = strtol(port, &end, 10);
	if (*port == '\0' || *end != '\0' || p < 0 || p > 65535)
		return -1;
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, ip, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)p);
		*len = sizeof(*v4);
		return 0;
	}
	if (inet_pton(AF_INET6, ip, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)p);
		*len = sizeof(*v6);
		return 0;
	}
	return -1;
}

int ports_parse(const char *spec)
{
	char buf[256];
	char *field[5];
	if (nmaps >= PORTS_MAX || strlen(spec) >= sizeof(buf))
		return -1;
	strcpy(buf, spec);
	char *p = buf;
	for (int i = 0; i < 5; i++) {
		field[i] = p;
		char *comma = strchr(p, ',');
		if ((comma == NULL) != (i == 4))
			return -1;
		if (comma) {
			*comma = '\0';
			p = comma + 1;
		}
	}
	struct mapping *m = &maps[nmaps];
	if (strcmp(field[0], "tcp") == 0)
		m->type = SOCK_STREAM;
	else if (strcmp(field[0], "udp") == 0)
		m->type = SOCK_DGRAM;
	else
		return -1;
	if (parse_addr(field[1], field[2], &m->host, &m->host_len) < 0 ||
	    parse_addr(field[3], field[4], &m->target, &m->target_len) < 0)
		return -1;
	snprintf(m->text, sizeof(m->text), "%s %s%s%s:%s", field[0], m->host.ss_family == AF_INET6 ? "[" : "", field[1],
		 m->host.ss_family == AF_INET6 ? "]" : "", field[2]);
	m->fd = -1;
	nmaps++;
	return 0;
}

/* ------------------------------------------------------------ the monitor */

static void close_all_maps(void)
{
	for (int i = 0; i < nmaps; i++)
		if (maps[i].fd >= 0) {
			close(maps[i].fd);
			maps[i].fd = -1;
		}
}

int ports_bind(char *err, size_t cap)
{
	for (int i = 0; i < nmaps; i++) {
		struct mapping *m = &maps[i];
		int fd = socket(m->host.ss_family, m->type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		int one = 1;
		if (fd >= 0 && m->type == SOCK_STREAM && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0) {
			close(fd);
			fd = -1;
		}
		if (fd >= 0 && m->host.ss_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)); /* v4 is mapped separately */
		if (fd < 0 || bind(fd, (struct sockaddr *)&m->host, m->host_len) < 0 ||
		    (m->type == SOCK_STREAM && listen(fd, SOMAXCONN) < 0)) {
			int e = errno;
			if (fd >= 0)
				close(fd);
			close_all_maps();
			snprintf(err, cap, "bind %s: %s", m->text, strerror(e));
			return -1;
		}
		m->fd = fd;
	}
	return 0;
}

static void relay_main(pid_t monitor) __attribute__((noreturn));

int ports_serve(char *err, size_t cap)
{
	if (nmaps == 0)
		return 0;
	pid_t monitor = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, cap, "fork the port relay: %s", strerror(errno));
		return -1;
	}
	if (pid == 0)
		relay_main(monitor);
	relay_pid = pid;
	return 0;
}

bool ports_reaped(pid_t pid, int status)
{
	(void)status;
	if (pid <= 0 || pid != relay_pid)
		return false;
	relay_pid = -1;
	/* killed on purpose by ports_stop, or died on its own: the monitor still holds the ports, so a new relay takes over */
	if (maps[0].fd >= 0 && relay_restarts < RELAY_RESTARTS) {
		char err[160];
		relay_restarts++;
		ports_serve(err, sizeof(err)); /* failing that, the ports stay held (refusing nothing) until the container exits */
	}
	return true;
}

void ports_stop(void)
{
	close_all_maps();
	if (relay_pid <= 0)
		return;
	pid_t pid = relay_pid;
	relay_pid = -1;
	kill(pid, SIGKILL);
	/* its sockets are closed once it is reaped (the ports free); the monitor's reaper may have taken it already */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* -------------------------------------------------------------- the relay */

static int ep = -1;
static struct conn conns[CONNS_MAX];
static int nconns, conn_cap = CONNS_MAX;
static bool accepting = true;
static struct flow flows[FLOWS_MAX];
static int nflows, flows_hi; /* flows_hi: one past the highest slot ever used */
static uint8_t dgram[DGRAM_MAX];

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* An event's data: the kind (8 bits), a connection's generation (24 bits), the index (32 bits). */
static uint64_t tag(enum kind k, int idx, uint32_t gen)
{
	return (uint64_t)k << 56 | (uint64_t)(gen & 0xffffff) << 32 | (uint32_t)idx;
}

static int watch(int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };
	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* Closes every fd but stdio and the ports: the relay keeps nothing of the monitor's (its sync pipe above all). */
static void close_other_fds(void)
{
	unsigned lo = 3;
	for (;;) {
		/* the lowest port fd at or above lo (a few: no need to sort) */
		unsigned next = ~0U;
		for (int i = 0; i < nmaps; i++)
			if ((unsigned)maps[i].fd >= lo && (unsigned)maps[i].fd < next)
				next = (unsigned)maps[i].fd;
		if (next > lo) {
			bool done = false;
#ifdef SYS_close_range
			done = syscall(SYS_close_range, lo, next - 1, 0) == 0;
#endif
			for (unsigned fd = lo; !done && fd < next && fd < 65536; fd++)
				close((int)fd);
		}
		if (next == ~0U)
			return;
		lo = next + 1;
	}
}

/* As root still: room for every connection's fds (the container does not inherit the relay's limits). */
static void raise_fd_limit(void)
{
	rlim_t want = (rlim_t)(nmaps + FLOWS_MAX + CONNS_MAX * FDS_PER_CONN + 32);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_cur < want) {
		struct rlimit more = { want, rl.rlim_max > want ? rl.rlim_max : want };
		if (setrlimit(RLIMIT_NOFILE, &more) < 0) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	long room = (long)rl.rlim_cur - nmaps - FLOWS_MAX - 32;
	conn_cap = room / FDS_PER_CONN < CONNS_MAX ? (int)(room > 0 ? room / FDS_PER_CONN : 1) : CONNS_MAX;
	if (conn_cap < 1)
		conn_cap = 1;
}

/* No root: the ports are bound already, relaying needs no privilege. */
static void drop_privileges(void)
{
	if (getuid() != 0)
		return; /* a monitor run by hand as a user: nothing to drop */
	gid_t none[1] = { RELAY_GID };
	if (setgroups(1, none) < 0 || setresgid(RELAY_GID, RELAY_GID, RELAY_GID) < 0 ||
	    setresuid(RELAY_UID, RELAY_UID, RELAY_UID) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(1);
	if (chdir("/") < 0)
		_exit(1);
}

static void set_listening(bool on)
{
	if (accepting == on)
		return;
	accepting = on;
	for (int i = 0; i < nmaps; i++) {
		if (maps[i].type != SOCK_STREAM)
			continue;
		struct epoll_event ev = { .events = on ? EPOLLIN : 0, .data.u64 = tag(K_LISTENER, i, 0) };
		epoll_ctl(ep, EPOLL_CTL_MOD, maps[i].fd, &ev);
	}
}

static void close_conn(int idx)
{
	struct conn *c = &conns[idx];
	int fds[] = { c->fd[0], c->fd[1], c->dir[0].rd, c->dir[0].wr, c->dir[1].rd, c->dir[1].wr };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		close(fds[i]);
	*c = (struct conn){ .gen = c->gen + 1 };
	nconns--;
	set_listening(true);
}

static bool would_block(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK;
}

/*
 * Moves what can move, until nothing does. A read into a pipe that still holds data may fail with EAGAIN because
 * the pipe's slots are full, not because the socket is empty: the readable mark is cleared only when the pipe was
 * empty, and the read is tried again after each write.
 */
static void pump(int idx)
{
	struct conn *c = &conns[idx];
	if (!c->connected)
		return;
	bool progress = true;
	while (progress) {
		progress = false;
		for (int d = 0; d < 2; d++) {
			struct dir *x = &c->dir[d];
			int src = c->fd[d], dst = c->fd[1 - d];
			if (!x->eof && c->readable[d] && x->pending < PIPE_CAP) {
				ssize_t n = splice(src, NULL, x->wr, NULL, PIPE_CAP - x->pending, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
				if (n > 0) {
					x->pending += (size_t)n;
					progress = true;
				} else if (n == 0) {
					x->eof = true;
					progress = true;
				} else if (would_block()) {
					if (x->pending == 0)
						c->readable[d] = false;
				} else if (errno != EINTR) {
					close_conn(idx);
					return;
				}
			}
			if (x->pending > 0 && c->writable[1 - d]) {
				ssize_t n = splice(x->rd, NULL, dst, NULL, x->pending, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
				if (n > 0) {
					x->pending -= (size_t)n;
					progress = true;
				} else if (n < 0 && would_block()) {
					c->writable[1 - d] = false;
				} else if (n < 0 && errno != EINTR) {
					close_conn(idx);
					return;
				}
			}
			if (x->eof && x->pending == 0 && !x->shut) {
				shutdown(dst, SHUT_WR);
				x->shut = true;
				progress = true;
			}
		}
	}
	if (c->dir[0].shut && c->dir[1].shut)
		close_conn(idx);
}

static void accept_tcp(int mi)
{
	struct mapping *m = &maps[mi];
	for (;;) {
		if (nconns >= conn_cap) {
			set_listening(false); /* the backlog holds the next ones until a connection ends */
			return;
		}
		int cfd = accept4(m->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				set_listening(false);
			return;
		}
		int idx = 0;
		while (conns[idx].fd[0] != 0)
			idx++;
		struct conn *c = &conns[idx];
		int p0[2] = { -1, -1 }, p1[2] = { -1, -1 };
		int ufd = socket(m->target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (ufd < 0 || pipe2(p0, O_NONBLOCK | O_CLOEXEC) < 0 || pipe2(p1, O_NONBLOCK | O_CLOEXEC) < 0) {
			int fds[] = { cfd, ufd, p0[0], p0[1], p1[0], p1[1] };
			for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
				if (fds[i] >= 0)
					close(fds[i]);
			continue;
		}
		int one = 1;
		setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* relayed writes go out as they come */
		setsockopt(ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		*c = (struct conn){ .fd = { cfd, ufd }, .gen = c->gen, .dir = { { p0[0], p0[1], 0, false, false }, { p1[0], p1[1], 0, false, false } } };
		nconns++;
		bool now = connect(ufd, (struct sockaddr *)&m->target, m->target_len) == 0;
		if (!now && errno != EINPROGRESS) {
			close_conn(idx); /* the client sees its connection closed, as with dockerd's proxy */
			continue;
		}
		c->connected = now;
		uint32_t ev = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
		if (watch(cfd, ev, tag(K_CLIENT, idx, c->gen)) < 0 || watch(ufd, ev, tag(K_UPSTREAM, idx, c->gen)) < 0) {
			close_conn(idx);
			continue;
		}
	}
}

static void conn_event(int idx, uint32_t gen, int side, uint32_t events)
{
	struct conn *c = &conns[idx];
	if (c->fd[0] == 0 || (c->gen & 0xffffff) != gen)
		return; /* closed by an earlier event of this round (and maybe reused) */
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		c->readable[side] = true;
	if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
		c->writable[side] = true;
	if (side == 1 && !c->connected && (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))) {
		int e = 0;
		socklen_t len = sizeof(e);
		if (getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &e, &len) < 0 || e != 0) {
			close_conn(idx);
			return;
		}
		c->connected = true;
	}
	pump(idx);
}

static void close_flow(int i)
{
	close(flows[i].fd); /* leaves the epoll set with it */
	flows[i].fd = 0;
	nflows--;
}

static int new_flow(int mi, const struct sockaddr_storage *from, socklen_t len, int64_t now)
{
	int slot = -1, oldest = -1;
	for (int i = 0; i < flows_hi && slot < 0; i++) {
		if (flows[i].fd == 0)
			slot = i;
		else if (oldest < 0 || flows[i].last_ms < flows[oldest].last_ms)
			oldest = i;
	}
	if (slot < 0 && flows_hi < FLOWS_MAX)
		slot = flows_hi++;
	if (slot < 0) {
		close_flow(oldest); /* full: the least recently used client goes */
		slot = oldest;
	}
	struct mapping *m = &maps[mi];
	int fd = socket(m->target.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&m->target, m->target_len) < 0 || watch(fd, EPOLLIN, tag(K_FLOW, slot, 0)) < 0) {
		close(fd);
		return -1;
	}
	flows[slot] = (struct flow){ .fd = fd, .mapping = mi, .client_len = len, .last_ms = now };
	memcpy(&flows[slot].client, from, len < sizeof(flows[slot].client) ? len : sizeof(flows[slot].client));
	nflows++;
	return slot;
}

static void udp_in(int mi)
{
	int64_t now = mono_ms();
	for (int k = 0; k < DGRAMS_PER_WAKE; k++) {
		struct sockaddr_storage from;
		socklen_t len = sizeof(from);
		ssize_t n = recvfrom(maps[mi].fd, dgram, sizeof(dgram), MSG_DONTWAIT, (struct sockaddr *)&from, &len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		int f = -1;
		for (int i = 0; i < flows_hi && f < 0; i++)
			if (flows[i].fd != 0 && flows[i].mapping == mi && flows[i].client_len == len && memcmp(&flows[i].client, &from, len) == 0)
				f = i;
		if (f < 0 && (f = new_flow(mi, &from, len, now)) < 0)
			continue;
		flows[f].last_ms = now;
		send(flows[f].fd, dgram, (size_t)n, MSG_DONTWAIT); /* a datagram the container cannot take is dropped */
	}
}

static void udp_back(int f)
{
	if (flows[f].fd == 0)
		return;
	for (int k = 0; k < DGRAMS_PER_WAKE; k++) {
		ssize_t n = recv(flows[f].fd, dgram, sizeof(dgram), MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == ECONNREFUSED)
				continue; /* ECONNREFUSED: an ICMP error for an earlier datagram */
			return;
		}
		flows[f].last_ms = mono_ms();
		struct mapping *m = &maps[flows[f].mapping];
		sendto(m->fd, dgram, (size_t)n, MSG_DONTWAIT, &flows[f].client.sa, flows[f].client_len);
	}
}

/* Closes the idle flows; the wait until the next one is idle (-1: none). */
static int expire_flows(void)
{
	if (nflows == 0)
		return -1;
	int64_t now = mono_ms(), next = -1;
	for (int i = 0; i < flows_hi; i++) {
		if (flows[i].fd == 0)
			continue;
		int64_t left = flows[i].last_ms + UDP_IDLE_MS - now;
		if (left <= 0)
			close_flow(i);
		else if (next < 0 || left < next)
			next = left;
	}
	return (int)next;
}

static void relay_main(pid_t monitor)
{
	/* gone with the monitor, whichever way it ends */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != monitor)
		_exit(0);
	prctl(PR_SET_NAME, "berth-ports", 0, 0, 0);
	if (cmdline_start && cmdline_end - cmdline_start >= (ptrdiff_t)sizeof("berth-ports")) {
		memset(cmdline_start, 0, (size_t)(cmdline_end - cmdline_start));
		strcpy(cmdline_start, "berth-ports");
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	const int dfl[] = { SIGTERM, SIGINT, SIGHUP, SIGCHLD };
	for (size_t i = 0; i < sizeof(dfl) / sizeof(dfl[0]); i++)
		sigaction(dfl[i], &sa, NULL);
	sa.sa_handler = SIG_IGN; /* a write to a closed connection is EPIPE, not a signal */
	sigaction(SIGPIPE, &sa, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	close_other_fds();
	raise_fd_limit();
	drop_privileges();

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		_exit(1);
	for (int i = 0; i < nmaps; i++)
		if (watch(maps[i].fd, EPOLLIN, tag(K_LISTENER, i, 0)) < 0)
			_exit(1);

	struct epoll_event evs[EVENTS];
	for (;;) {
		int n = epoll_wait(ep, evs, EVENTS, expire_flows());
		if (n < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		for (int i = 0; i < n; i++) {
			enum kind k = (enum kind)(evs[i].data.u64 >> 56);
			uint32_t gen = (uint32_t)(evs[i].data.u64 >> 32) & 0xffffff;
			int idx = (int)(uint32_t)evs[i].data.u64;
			switch (k) {
			case K_LISTENER:
				if (maps[idx].type == SOCK_STREAM)
					accept_tcp(idx);
				else
					udp_in(idx);
				break;
			case K_CLIENT:
			case K_UPSTREAM:
				conn_event(idx, gen, k == K_CLIENT ? 0 : 1, evs[i].events);
				break;
			case K_FLOW:
				udp_back(idx);
				break;
			}
		}
	}
}
