/*
 * The runtime reports a start as soon as it has let the container's init go
 * (runc: the exec FIFO written); the init still runs the runtime's own code
 * for a moment before it executes the command. A signal sent in that moment
 * reaches the runtime's code, not the command (a SIGTERM the command ignores
 * would end the container). The start is reported once the init runs the
 * command (see shim.h).
 */
#define _GNU_SOURCE
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXEC_WAIT_MS 1000
#define EXEC_POLL_NS 100000L

/* Reads /proc/PID/NAME into buf (NUL-terminated); false when the process is gone. */
static bool proc_read(pid_t pid, const char *name, char *buf, size_t cap)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/%s", (long)pid, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n;
	do
		n = read(fd, buf, cap - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

/* Still the runtime's code: runc names its init "runc:[2:INIT]" until it executes the command. */
static bool in_runtime(pid_t pid)
{
	char comm[64], stat[256];
	if (!proc_read(pid, "comm", comm, sizeof(comm)) || strncmp(comm, "runc:[", 6) != 0)
		return false;
	/* a zombie keeps its last name: it will never run the command */
	if (!proc_read(pid, "stat", stat, sizeof(stat)))
		return false;
	const char *close_paren = strrchr(stat, ')');
	return close_paren && close_paren[1] == ' ' && close_paren[2] != 'Z' && close_paren[2] != 'X';
}

void wait_process_exec(pid_t pid)
{
	struct timespec step = { 0, EXEC_POLL_NS };
	for (long waited = 0; waited < EXEC_WAIT_MS * 1000000L && in_runtime(pid); waited += EXEC_POLL_NS)
		nanosleep(&step, NULL);
}
