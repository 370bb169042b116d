/*
 * berth-shim's service modes (declared in service-modes.h):
 *
 *   berth-shim --version
 *       prints "berth-shim VERSION" and exits 0: the daemon's start check that this binary runs on this machine
 *       (right architecture, loader and C library present).
 *
 *   berth-shim notify STATE...
 *       sd_notify(3): sends the STATE lines (READY=1, STOPPING=1, STATUS=…, MAINPID=…) as one datagram to the Unix
 *       socket $NOTIFY_SOCKET (a path, or an abstract name starting with '@'), then waits up to 5 s for the service
 *       manager to have read it: a BARRIER=1 datagram carries a pipe's write end, which systemd closes once every
 *       earlier message is processed (sd_notify_barrier). Without the wait, a sender that exits at once may no
 *       longer be attributed to its service. Node has no Unix datagram sockets, hence this mode. Exit 0 when sent
 *       (or when $NOTIFY_SOCKET is unset), 1 with a message on stderr otherwise.
 *
 *   berth-shim lock FD...
 *       flock(2) LOCK_EX | LOCK_NB on each inherited descriptor, in order: the daemon's locks on its data root and
 *       exec root (lib/util/dir-lock.ts) in one process. A flock lock belongs to the open file description, which the
 *       daemon keeps open: the locks outlive this process, and the kernel drops them when the daemon's descriptors
 *       close. Exit 0 when every one is taken, 75 + i when the i-th (from 0) is held elsewhere (those before it stay
 *       taken until the daemon closes them), 1 with a message on stderr otherwise.
 */
#define _GNU_SOURCE
#include "service-modes.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef BERTH_VERSION
#define BERTH_VERSION "dev"
#endif

#define NOTIFY_MAX 4096
#define BARRIER_WAIT_MS 5000

static int notify_address(struct sockaddr_un *sa, socklen_t *len)
{
	const char *path = getenv("NOTIFY_SOCKET");
	size_t n = path ? strlen(path) : 0;
	if (n == 0)
		return 0;
	if (n >= sizeof(sa->sun_path) || (path[0] != '/' && path[0] != '@')) {
		fprintf(stderr, "berth-shim notify: NOTIFY_SOCKET is not a socket path: %s\n", path);
		return -1;
	}
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, n);
	if (path[0] == '@')
		sa->sun_path[0] = '\0';
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (path[0] == '@' ? 0 : 1));
	return 1;
}

static int notify(int argc, char **argv)
{
	struct sockaddr_un sa;
	socklen_t salen = 0;
	int r = notify_address(&sa, &salen);
	if (r <= 0)
		return r == 0 ? 0 : 1;
	char msg[NOTIFY_MAX];
	size_t used = 0;
	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]);
		if (used + n + 1 >= sizeof(msg)) {
			fprintf(stderr, "berth-shim notify: message too long\n");
			return 1;
		}
		memcpy(msg + used, argv[i], n);
		used += n;
		msg[used++] = '\n';
	}
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || sendto(fd, msg, used, MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0) {
		fprintf(stderr, "berth-shim notify: %s: %s\n", getenv("NOTIFY_SOCKET"), strerror(errno));
		return 1;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return 0; /* sent; only the wait is lost */
	char barrier[] = "BARRIER=1";
	struct iovec iov = { .iov_base = barrier, .iov_len = sizeof(barrier) - 1 };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} control;
	memset(&control, 0, sizeof(control));
	struct msghdr mh = { .msg_name = &sa, .msg_namelen = salen, .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = control.buf, .msg_controllen = sizeof(control.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &p[1], sizeof(int));
	int sent = sendmsg(fd, &mh, MSG_NOSIGNAL) >= 0;
	close(p[1]);
	close(fd);
	if (sent) {
		/* the read end reports EOF (or POLLHUP) once the manager closed its copy of the write end */
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		while (poll(&pf, 1, BARRIER_WAIT_MS) < 0 && errno == EINTR)
			;
	}
	close(p[0]);
	return 0;
}

#define LOCK_MAX 16
#define LOCK_BUSY 75

static int lock_fds(int argc, char **argv)
{
	if (argc < 1 || argc > LOCK_MAX) {
		fprintf(stderr, "berth-shim lock: 1 to %d descriptors\n", LOCK_MAX);
		return 1;
	}
	for (int i = 0; i < argc; i++) {
		char *end;
		errno = 0;
		long fd = strtol(argv[i], &end, 10);
		if (errno != 0 || end == argv[i] || *end != '\0' || fd < 0 || fd > INT_MAX) {
			fprintf(stderr, "berth-shim lock: not a descriptor: %s\n", argv[i]);
			return 1;
		}
		while (flock((int)fd, LOCK_EX | LOCK_NB) < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EWOULDBLOCK)
				return LOCK_BUSY + i;
			fprintf(stderr, "berth-shim lock: descriptor %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
	}
	return 0;
}

int service_mode(int argc, char **argv)
{
	if (argc < 2)
		return -1;
	if (strcmp(argv[1], "--version") == 0) {
		printf("berth-shim %s\n", BERTH_VERSION);
		return fflush(stdout) == 0 ? 0 : 1;
	}
	if (strcmp(argv[1], "notify") == 0)
		return notify(argc - 2, argv + 2);
	if (strcmp(argv[1], "lock") == 0)
		return lock_fds(argc - 2, argv + 2);
	return -1;
}
