/*
 * --files N (a prepared monitor only: see prepared.c): the start's bundle files (config.json, hosts, hostname,
 * resolv.conf) follow the command line on the daemon's connection as N bytes of records
 * [u32 BE mode][u32 BE path length][path][u32 BE data length][data], and the monitor writes them before the runtime
 * runs (the daemon's thread pool does not). They go on the daemon's socket, not on the command line, which ps shows
 * (config.json holds the container's environment). Each path is inside the bundle directory (--bundle) and opened
 * O_NOFOLLOW; a file that cannot be written fails the start.
 */
#define _GNU_SOURCE
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define START_FILES_MAX (1024 * 1024)

static uint8_t *blob;
static size_t blob_len;

size_t start_files_length(const char *value)
{
	char *end;
	errno = 0;
	unsigned long n = strtoul(value, &end, 10);
	if (errno != 0 || *end != '\0' || value[0] == '\0' || n == 0 || n > START_FILES_MAX)
		return 0;
	return (size_t)n;
}

void start_files_take(uint8_t *data, size_t len)
{
	blob = data;
	blob_len = len;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static bool write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

void start_files_write(const char *bundle)
{
	if (blob == NULL)
		fail("start files: --files without the files (only a prepared monitor takes them)");
	size_t blen = strlen(bundle);
	size_t at = 0;
	while (at < blob_len) {
		if (blob_len - at < 8)
			fail("start files: a truncated record");
		uint32_t mode = be32(blob + at), plen = be32(blob + at + 4);
		at += 8;
		if (plen == 0 || plen > 4095 || blob_len - at < (size_t)plen + 4)
			fail("start files: a truncated record");
		char path[4096];
		memcpy(path, blob + at, plen);
		path[plen] = '\0';
		at += plen;
		uint32_t dlen = be32(blob + at);
		at += 4;
		if (blob_len - at < dlen)
			fail("start files: a truncated record");
		/* only directly in the bundle directory: a name, no subdirectory */
		if (strlen(path) != plen || strncmp(path, bundle, blen) != 0 || path[blen] != '/' ||
		    strchr(path + blen + 1, '/') != NULL || path[blen + 1] == '\0' || path[blen + 1] == '.')
			fail("start files: %s is not a file of the bundle %s", path, bundle);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, (mode_t)(mode & 07777));
		if (fd < 0)
			fail("write %s: %s", path, strerror(errno));
		if (!write_all(fd, blob + at, dlen)) {
			int e = errno;
			close(fd);
			fail("write %s: %s", path, strerror(e));
		}
		if (close(fd) < 0)
			fail("write %s: %s", path, strerror(errno));
		at += dlen;
	}
	free(blob);
	blob = NULL;
}
