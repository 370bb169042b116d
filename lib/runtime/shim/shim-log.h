/*
 * The container log's records, between the monitor's main loop (berth-shim.c: the log file, its rotation) and the
 * writer that cuts container output into records at newlines (log-lines.c).
 *
 * Record: [stream u8][flags u8][0,0][payload length u32 BE][timestamp ns u64 BE][payload]
 * flags:  LOG_LINE    the payload ends a line (ends with '\n'); also every record of logs written before flags
 *         LOG_CONT    the payload is a piece of a line that goes on in the stream's next record
 *         LOG_END     zero-length: the stream ended in the middle of a line (its last record was LOG_CONT)
 */
#ifndef BERTH_SHIM_LOG_H
#define BERTH_SHIM_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define LOG_RECORD_HDR 16

enum log_flags { LOG_LINE = 0, LOG_CONT = 1, LOG_END = 2 };

/* log-lines.c */
void log_lines_write(uint8_t stream, const uint8_t *data, size_t len, uint64_t now_ns);
void log_lines_end(uint8_t stream, uint64_t now_ns);

/* berth-shim.c */
void put_be32(uint8_t *p, uint32_t v);
void put_be64(uint8_t *p, uint64_t v);
/* Whether a record of record_len bytes, after pending bytes not written yet, rotates the log first. */
bool shim_log_would_rotate(size_t pending, size_t record_len);
void shim_log_rotate(void);
/* Appends whole records (bytes in all) with one writev(2). */
void shim_log_writev(const struct iovec *iov, int iovcnt, size_t bytes);

#endif
