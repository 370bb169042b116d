/*
 * Container output into log records cut at newlines, as dockerd's log copier cuts messages: one record per line, so
 * `docker logs` gives one frame and one timestamp per line however the program wrote it. Each read becomes a
 * record per complete line and, for a trailing piece without a newline, a LOG_CONT record: nothing is held back,
 * so attached clients see a prompt without newline at once (they read every record as it comes), while log
 * readers join a line's pieces (lib/engine/log-reader.ts). The records of one read go out in one writev(2): a
 * record is two iovecs, its header and its slice of the read buffer (payloads are not copied).
 */
#define _GNU_SOURCE
#include <string.h>

#include "shim-log.h"

#define MAX_RECORDS 256

static uint8_t headers[MAX_RECORDS][LOG_RECORD_HDR];
static struct iovec iov[2 * MAX_RECORDS];
static int nrec;
static size_t pending;

/* Whether the stream's last record was LOG_CONT (indexed by stream: 1 stdout, 2 stderr). */
static bool mid_line[3];

static void flush(void)
{
	if (nrec > 0)
		shim_log_writev(iov, 2 * nrec, pending);
	nrec = 0;
	pending = 0;
}

static void add(uint8_t stream, uint8_t flags, uint64_t ts, const uint8_t *p, size_t len)
{
	size_t size = LOG_RECORD_HDR + len;
	if (shim_log_would_rotate(pending, size)) {
		flush();
		shim_log_rotate();
	}
	uint8_t *h = headers[nrec];
	h[0] = stream;
	h[1] = flags;
	h[2] = h[3] = 0;
	put_be32(h + 4, (uint32_t)len);
	put_be64(h + 8, ts);
	iov[2 * nrec] = (struct iovec){ .iov_base = h, .iov_len = LOG_RECORD_HDR };
	iov[2 * nrec + 1] = (struct iovec){ .iov_base = (void *)p, .iov_len = len };
	nrec++;
	pending += size;
	if (nrec == MAX_RECORDS)
		flush();
}

void log_lines_write(uint8_t stream, const uint8_t *data, size_t len, uint64_t now_ns)
{
	if (stream > 2)
		return;
	while (len > 0) {
		const uint8_t *nl = memchr(data, '\n', len);
		size_t piece = nl ? (size_t)(nl - data) + 1 : len;
		add(stream, nl ? LOG_LINE : LOG_CONT, now_ns, data, piece);
		mid_line[stream] = !nl;
		data += piece;
		len -= piece;
	}
	flush();
}

void log_lines_end(uint8_t stream, uint64_t now_ns)
{
	if (stream > 2 || !mid_line[stream])
		return;
	mid_line[stream] = false;
	add(stream, LOG_END, now_ns, NULL, 0);
	flush();
}
