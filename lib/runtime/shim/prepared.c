/*
 * A monitor started ahead of need (see shim.h, `--prepared SOCKET`), so that a
 * container's start waits neither for a process forked from the daemon (a
 * large process: its page tables, and the daemon blocked until the exec) nor
 * for a network namespace to be made. It makes a network namespace (loopback
 * up), connects to the daemon's SOCKET and says `R <pid>\n`, then waits for its
 * command line: a 4-byte big-endian length and the arguments, each ended by a
 * NUL byte. With it, it runs as a monitor started with that command line, the
 * connection being its sync fd, and once it has reported its start it forks the
 * next prepared monitor (a small process: a cheap fork). EOF instead (the daemon let it go, or is gone): it exits quietly
 * and its namespace goes with it.
 */
#define _GNU_SOURCE
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define ARGS_MAX (64 * 1024)
#define ARGC_MAX 128
#define SYNC_FD 3

static char args_buf[ARGS_MAX + 1];
static char *args_v[ARGC_MAX + 1];
/* its own argument area (argv[0] to the end of the padding argument), where its command line is shown once it came */
static char *area_start, *area_end;
/* the padding argument a prepared monitor is started with (and starts the next one with): room for a command line */
#define PADDING 8192
static char padding[PADDING + 1];
/* set once a command line came: this monitor forks the next prepared one (prepared_next) */
static const char *next_self, *next_socket;

/* Reads exactly len bytes; false on EOF or an error. */
static bool read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len > 0) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

static int connect_daemon(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(addr.sun_path))
		return -1;
	strcpy(addr.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The next prepared monitor, in a session of its own (it keeps none of this one's descriptors: all are O_CLOEXEC).
 * Called once this monitor has reported its start: the next one's exec and namespace do not compete with this start.
 */
void prepared_next(void)
{
	if (next_self == NULL)
		return;
	const char *self = next_self, *socket_path = next_socket;
	next_self = NULL;
	pid_t pid = fork();
	if (pid < 0)
		diag("fork the next prepared monitor: %s", strerror(errno));
	if (pid != 0)
		return;
	setsid();
	memset(padding, ' ', PADDING);
	char *next[] = { (char *)self, "--prepared", (char *)socket_path, padding, NULL };
	execv(self, next);
	_exit(127);
}

/*
 * ps and /proc/PID/cmdline show the monitor's command line as they would for a monitor spawned with it: written over
 * the process's own argument area (the padding argument made the room; what does not fit is cut).
 */
static void show_command_line(const char *self, size_t len)
{
	if (area_start == NULL || area_end <= area_start)
		return;
	size_t room = (size_t)(area_end - area_start), at = 0;
	memset(area_start, 0, room);
	size_t n = strlen(self) + 1;
	if (n > room)
		return;
	memcpy(area_start, self, n);
	at = n;
	for (size_t i = 0; i < len && at < room;) {
		size_t k = strlen(args_buf + i) + 1;
		if (at + k > room)
			break;
		memcpy(area_start + at, args_buf + i, k);
		at += k;
		i += k;
	}
}

void prepared_wait(int *argc, char ***argv)
{
	if (*argc != 3 && *argc != 4)
		_exit(2);
	const char *self = (*argv)[0], *socket_path = (*argv)[2];
	if (*argc == 4) {
		area_start = (*argv)[0];
		area_end = (*argv)[3] + strlen((*argv)[3]);
	}
	/* fd 3 is the sync fd to be: held by /dev/null meanwhile, so the namespace's descriptors are not given 3 */
	int hold = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (hold >= 0 && hold != SYNC_FD) {
		if (dup3(hold, SYNC_FD, O_CLOEXEC) < 0)
			_exit(1);
		close(hold);
	}
	netns_prepare();
	int fd = connect_daemon(socket_path);
	if (fd < 0)
		_exit(0); /* no daemon to serve */
	char hello[32];
	int n = snprintf(hello, sizeof(hello), "R %ld\n", (long)getpid());
	if (write(fd, hello, (size_t)n) != n)
		_exit(0);
	uint8_t hdr[4];
	if (!read_full(fd, hdr, sizeof(hdr)))
		_exit(0); /* let go */
	size_t len = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
	if (len == 0 || len > ARGS_MAX || !read_full(fd, args_buf, len))
		_exit(0);
	args_buf[len] = '\0';
	/* --files N: the start's bundle files follow the command line on this connection (start-files.c) */
	for (size_t i = 0; i < len;) {
		size_t k = strlen(args_buf + i) + 1;
		if (strcmp(args_buf + i, "--files") == 0 && i + k < len) {
			size_t n = start_files_length(args_buf + i + k);
			uint8_t *files = n > 0 ? malloc(n) : NULL;
			if (files == NULL || !read_full(fd, files, n))
				_exit(0);
			start_files_take(files, n);
			break;
		}
		i += k;
	}
	/* (the shown command line overwrites argv's strings: self and the socket path are copied first) */
	static char self_copy[4096], socket_copy[4096];
	snprintf(self_copy, sizeof(self_copy), "%s", self);
	snprintf(socket_copy, sizeof(socket_copy), "%s", socket_path);
	self = self_copy;
	socket_path = socket_copy;
	show_command_line(self, len);
	/* the connection is the sync fd from here on (setup_sync_fd() takes it) */
	if (fd != SYNC_FD) {
		if (dup3(fd, SYNC_FD, O_CLOEXEC) < 0)
			_exit(1);
		close(fd);
	}
	next_self = self;
	next_socket = socket_path;
	int k = 0;
	args_v[k++] = (char *)self;
	for (size_t i = 0; i < len && k < ARGC_MAX;) {
		args_v[k++] = args_buf + i;
		i += strlen(args_buf + i) + 1;
	}
	args_v[k] = NULL;
	*argc = k;
	*argv = args_v;
}
