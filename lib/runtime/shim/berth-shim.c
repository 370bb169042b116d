/*
 * berth-shim — the per-container monitor process of Berth.
 *
 * One shim runs per container (or per exec'd process). It is the parent
 * (child subreaper) of the container's init process, writes the container's
 * output to a log file, holds the container's stdin pipe / pty master and
 * records the exit status, whether or not the daemon is running.
 * Single-threaded poll() loop, fixed-size buffers, no heap allocation.
 * Long because the one poll loop owns every descriptor it watches (the runtime's console socket, stdin, the
 * clients, the log, the sync and signal pipes) and their state; what joined since lives in its own file behind
 * shim.h (netns.c, ports.c, resolver*.c, log-lines.c, exec-wait.c, service-modes.c).
 *
 * Command line
 *   berth-shim --id ID --bundle DIR --state DIR --runtime PATH [--runtime-arg ARG]...
 *              --runtime-root DIR --log FILE [--tty] [--stdin] [--start]
 *              [--rootfs DIR [--overlay OPTIONS]] [--exec PROCESS_JSON_FILE]
 *              [--netns FILE [--veth SPEC]...]   (netns.c; see shim.h)
 *              [--publish PROTO,HOST_IP,HOST_PORT,TARGET_IP,TARGET_PORT]...
 *   berth-shim --version | notify STATE...   (service modes: service-modes.c)
 *   (--bundle is only required without --exec; --publish, container mode only, is in ports.h: the host ports are
 *   bound before the runtime runs, served by the monitor's relay, and free once the process has exited)
 *
 *   (--runtime-arg: up to MAX_RUNTIME_ARGS options the runtime gets before its own, in every command it runs:
 *   daemon.json's runtimeArgs)
 *   container mode: RUNTIME [ARG...] --root R --log STATE/runc.log --log-format json
 *                   create --bundle DIR --pid-file STATE/init.pid
 *                   [--console-socket STATE/console.sock] ID
 *                   The shim does not start the container (the daemon runs
 *                   `runc start ID`). With --start it runs
 *                   `run --detach` instead of `create` (same options): the
 *                   process is already running when the sync line is sent.
 *                   After the exit it runs `RUNTIME --root R delete --force ID`.
 *                   --rootfs names the container's root filesystem mount (the
 *                   daemon mounts it before the start): once the process has
 *                   exited, before exit.json is written, the shim detaches it
 *                   (umount2 MNT_DETACH), as dockerd unmounts a stopped
 *                   container's root filesystem.
 *                   --overlay OPTIONS makes the shim mount that root
 *                   filesystem itself (mount(2) of type overlay with OPTIONS,
 *                   e.g. lowerdir=…,upperdir=…,workdir=…) before it runs the
 *                   runtime, in place of a mount(8) by the daemon; if the
 *                   start fails, the shim detaches it again before reporting.
 *                   --oom-file FILE names the container cgroup's OOM counter
 *                   file (cgroup v1 memory.oom_control, cgroup v2
 *                   memory.events): once the process has exited the shim
 *                   reads its "oom_kill N" line, and N > 0 adds
 *                   "oomKilled":true to exit.json.
 *                   --resolver NETNS opens the container's embedded DNS
 *                   resolver in the network namespace at NETNS before the
 *                   runtime runs (resolver.h: sockets, redirection, the
 *                   frames spoken over attach.sock after message type 4).
 *   exec mode:      RUNTIME --root R --log STATE/runc.log --log-format json
 *                   exec --detach --process P --pid-file STATE/init.pid
 *                   [--console-socket STATE/console.sock] ID
 *
 * Files in STATE
 *   shim.pid     the shim's pid as decimal text + "\n" (written atomically)
 *   init.pid     written by the runtime
 *   attach.sock  Unix stream socket for attach clients (see below)
 *   console.sock only while the runtime runs with --tty
 *   runc.log     the runtime's JSON log
 *   exit.json    written atomically once the process has exited:
 *                {"exitCode":N,"exitedAtNs":"<decimal ns since epoch>","signal":S}
 *                (plus ,"oomKilled":true when --oom-file counted an OOM kill)
 *                exitCode = exit status, or 128+S when killed by signal S;
 *                signal = 0 for a normal exit. exitedAtNs is the time the
 *                shim reaped the process (CLOCK_REALTIME).
 *
 * Sync fd (fd 3, a pipe from the daemon): exactly one line is written once the
 * runtime command has finished (with --start and --exec: and the process runs
 * its command, no longer the runtime's code: exec-wait.c), then fd 3 is closed:
 *   {"pid":1234}\n          success: the runtime exited 0, init.pid is valid
 *   {"error":"message"}\n   failure: msg of the last "level":"error" record of
 *                           runc.log, else a description of the runtime's exit
 *                           status (or of the shim's own setup failure).
 *                           The shim then exits with status 1.
 *
 * Log file (--log, O_APPEND): a sequence of records, cut at newlines
 * (log-lines.c: one record per line of each read of up to 32 KiB of container
 * output, the records of one read appended with a single writev(2)):
 *   byte 0      stream: 1 = stdout (also all pty output), 2 = stderr
 *   byte 1      flags (shim-log.h): 0 the payload ends a line, 1 a piece of a
 *               line that goes on in the stream's next record, 2 (length 0)
 *               the stream ended in the middle of a line
 *   bytes 2..3  zero
 *   bytes 4..7  payload length, u32 big-endian (0 only with flags 2)
 *   bytes 8..15 timestamp, ns since the Unix epoch (CLOCK_REALTIME), u64 BE
 *   bytes 16..  payload
 * The first 8 bytes are a Docker stdcopy frame header once byte 1 is zeroed.
 * --log-max-size BYTES rotates the log: a record that would take the file past
 * BYTES (the file not being empty) first renames FILE to FILE.1 (FILE.1 to
 * FILE.2, ... up to FILE.(N-1) with --log-max-files N, default 1, the oldest
 * dropped) and opens a new FILE; with N = 1 the file is truncated instead.
 *
 * attach.sock: after appending a record the shim sends the single byte 'o'
 * ("output tick") to every connected client (non-blocking; a tick dropped
 * because the client's socket buffer is full is not resent). Clients send
 * messages [type u8][payload length u32 BE][payload]:
 *   1 STDIN   payload = bytes for the container's stdin (pipe or pty master);
 *             discarded when there is no stdin (neither --stdin nor --tty)
 *             or it has been closed.
 *   2 CLOSE   close stdin once the pending data is written; with a tty the
 *             EOF character ^D (0x04) is written instead. Payload ignored.
 *   3 RESIZE  payload = rows u16 BE, cols u16 BE (exactly 4 bytes);
 *             TIOCSWINSZ on the pty master; ignored without a tty.
 * Unknown types, a length above 1 MiB, or a RESIZE whose length is not 4
 * drop the client. A client's EOF only drops that client (stdin stays open).
 * While stdin data is pending (at most 64 KiB) no client is read from.
 * At most 256 clients are served at once; further connections are closed.
 * When the process has exited, its output has been drained (EOF, or at most
 * 2 s) and exit.json written, every client is sent the byte 'x' followed by
 * exit.json's text (one line; not resent when its socket buffer is full), all
 * clients are closed and attach.sock is removed: EOF on attach.sock (or no
 * attach.sock at all once the sync line was sent) means exit.json exists.
 * Only then (container mode) does the runtime's delete run, so the runtime's
 * record of ID outlives the EOF briefly: a caller that re-uses ID waits for
 * RUNTIME_ROOT/ID to disappear.
 *
 * Signals: SIGTERM, SIGINT, SIGHUP and SIGPIPE are ignored (the daemon stops
 * containers with `runc kill`); SIGCHLD is handled with a self-pipe.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "service-modes.h"

#include "resolver.h"
#include "shim.h"
#include "ports.h"
#include "shim-log.h"

#define SYNC_FD 3
#define READ_CHUNK (32 * 1024)
#define RECORD_HDR 16
#define STDIN_CAP (64 * 1024)
#define MSG_HDR 5
#define MAX_MSG_LEN (1024u * 1024u)
#define MAX_CLIENTS 256
#define DRAIN_MS 2000
#define DELETE_TIMEOUT_MS 10000
#define WRITE_TIMEOUT_MS 1000
#define EARLY_EXITS 64
#define ERR_MSG_CAP 2048
#define RUNC_LOG_TAIL (64 * 1024)
#define MAX_RUNTIME_ARGS 8
#define MAX_ARGS (24 + MAX_RUNTIME_ARGS)

enum msg_type { MSG_STDIN = 1, MSG_CLOSE_STDIN = 2, MSG_RESIZE = 3 };
enum stream { STREAM_STDOUT = 1, STREAM_STDERR = 2 };

struct options {
	const char *id, *bundle, *state, *runtime, *runtime_root, *log, *exec_process, *rootfs, *overlay, *oom_file, *log_max_size, *log_max_files;
	const char *resolver; /* --resolver NETNS: the embedded DNS resolver, in that namespace (resolver.h) */
	bool tty, open_stdin, start, publish, files;
	const char *runtime_args[MAX_RUNTIME_ARGS]; /* --runtime-arg, in order */
	int n_runtime_args;
};

struct client {
	int fd;
	bool told; /* it has the exit message */
	uint8_t hdr[MSG_HDR];
	uint8_t hdr_len;
	uint8_t type;
	uint32_t remaining;
	uint8_t resize[4];
	uint8_t resize_len;
};

struct output {
	int fd;
	uint8_t stream;
};

struct early_exit {
	pid_t pid;
	int status;
};

static struct options opt;

static struct {
	char shim_pid[PATH_MAX], init_pid[PATH_MAX], attach_sock[PATH_MAX];
	char console_sock[PATH_MAX], runc_log[PATH_MAX], exit_json[PATH_MAX];
} paths;

static int sync_fd = -1;
static int sig_pipe[2] = { -1, -1 };
static int listen_fd = -1;
static int log_fd = -1;
static int console_listen_fd = -1;
static int console_conn_fd = -1;
static int pty_master = -1;

/* Container output: [0] = stdout or the pty master, [1] = stderr. */
static struct output outputs[2] = { { -1, STREAM_STDOUT }, { -1, STREAM_STDERR } };

/* Container stdin: a pipe's write end, or the pty master (owned by outputs[0]). */
static int stdin_fd = -1;
static uint8_t stdin_buf[STDIN_CAP];
static size_t stdin_off, stdin_len;
static bool stdin_close_requested;

static struct client clients[MAX_CLIENTS];
static int nclients;

/* Children. */
static pid_t runtime_pid = -1;
static bool runtime_done;
static int runtime_status;
static pid_t init_pid = -1;
static bool init_exited;
static int exit_code, exit_signal;
static uint64_t exited_at_ns;
static struct early_exit early_exits[EARLY_EXITS];
static unsigned early_exit_next;

static uint8_t record_buf[RECORD_HDR + READ_CHUNK];
static uint8_t client_buf[READ_CHUNK];

/* ------------------------------------------------------------------ utils */

void diag(const char *fmt, ...)
{
	/* stderr is /dev/null under the daemon; useful when run by hand. */
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	ssize_t w = write(STDERR_FILENO, "berth-shim: ", 12);
	if (w >= 0)
		w = write(STDERR_FILENO, buf, (size_t)n);
	(void)w;
}

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd); /* errors on close are not actionable here */
		*fd = -1;
	}
}

static uint64_t now_realtime_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int64_t now_mono_ms(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	return 0;
}

static int set_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFD);
	if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
		return -1;
	return 0;
}

/* Writes all of buf; waits (bounded) for non-blocking fds. */
static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			int r = poll(&pfd, 1, WRITE_TIMEOUT_MS);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return -1;
			continue;
		}
		return -1;
	}
	return 0;
}

static int state_path(char *out, const char *name)
{
	int n = snprintf(out, PATH_MAX, "%s/%s", opt.state, name);
	return n < 0 || n >= PATH_MAX ? -1 : 0;
}

/*
 * Writes path.tmp and renames it over path: readers see the old file or the whole new one, whenever the shim or the
 * daemon is killed. No fsync: these files describe processes, which a power loss ends anyway (the daemon then finds
 * a dead monitor and records the exit as such), and they sit on the start and exit paths of every container.
 */
static int write_file_atomic(const char *path, const char *data, size_t len)
{
	char tmp[PATH_MAX];
	int n = snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (n < 0 || n >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (write_all(fd, data, len) < 0) {
		int e = errno;
		close(fd);
		unlink(tmp);
		errno = e;
		return -1;
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------- JSON */

/* Appends the JSON-escaped form of in to out (cap bytes incl. NUL). */
static void json_escape(const char *in, char *out, size_t cap)
{
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
		char tmp[8];
		const char *rep = NULL;
		switch (*p) {
		case '"': rep = "\\\""; break;
		case '\\': rep = "\\\\"; break;
		case '\n': rep = "\\n"; break;
		case '\r': rep = "\\r"; break;
		case '\t': rep = "\\t"; break;
		case '\b': rep = "\\b"; break;
		case '\f': rep = "\\f"; break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				snprintf(tmp, sizeof(tmp), "\\u%04x", *p);
				rep = tmp;
			}
		}
		size_t need = rep ? strlen(rep) : 1;
		if (o + need >= cap)
			break;
		if (rep) {
			memcpy(out + o, rep, need);
		} else {
			out[o] = (char)*p;
		}
		o += need;
	}
	out[o] = '\0';
}

struct strbuf {
	char *buf; /* may be NULL: only validate/skip */
	size_t cap, len;
	bool full;
};

static void sb_put(struct strbuf *sb, const char *s, size_t n)
{
	if (!sb->buf || sb->full)
		return;
	if (sb->len + n >= sb->cap) {
		sb->full = true; /* never split a UTF-8 sequence we produce */
		return;
	}
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

static void sb_put_codepoint(struct strbuf *sb, uint32_t cp)
{
	char u[4];
	size_t n;
	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12);
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | cp >> 18);
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	sb_put(sb, u, n);
}

/* Drops a trailing incomplete UTF-8 sequence (after truncation). */
static void sb_trim_utf8(struct strbuf *sb)
{
	if (!sb->buf || !sb->full)
		return;
	size_t i = sb->len, back = 0;
	while (i > 0 && back < 4 && ((unsigned char)sb->buf[i - 1] & 0xc0) == 0x80) {
		i--;
		back++;
	}
	if (i == 0)
		return;
	unsigned char lead = (unsigned char)sb->buf[i - 1];
	size_t want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
	if (want > 1 && back + 1 < want) {
		sb->len = i - 1;
		sb->buf[sb->len] = '\0';
	}
}

static const char *json_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

static int hex4(const char *p, const char *end, uint32_t *out)
{
	uint32_t v = 0;
	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* Parses a JSON string at p ('"'), decoding into sb. Returns the position after it, or NULL. */
static const char *json_string(const char *p, const char *end, struct strbuf *sb)
{
	if (p >= end || *p != '"')
		return NULL;
	for (p++; p < end; p++) {
		char c = *p;
		if (c == '"')
			return p + 1;
		if (c != '\\') {
			sb_put(sb, p, 1);
			continue;
		}
		if (++p >= end)
			return NULL;
		char esc = 0;
		switch (*p) {
		case '"': esc = '"'; break;
		case '\\': esc = '\\'; break;
		case '/': esc = '/'; break;
		case 'b': esc = '\b'; break;
		case 'f': esc = '\f'; break;
		case 'n': esc = '\n'; break;
		case 'r': esc = '\r'; break;
		case 't': esc = '\t'; break;
		case 'u': {
			uint32_t cp, lo;
			if (hex4(p + 1, end, &cp) < 0)
				return NULL;
			p += 4;
			if (cp >= 0xd800 && cp < 0xdc00 && end - p >= 7 && p[1] == '\\' && p[2] == 'u' &&
			    hex4(p + 3, end, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				p += 6;
			} else if (cp >= 0xd800 && cp < 0xe000) {
				cp = 0xfffd;
			}
			sb_put_codepoint(sb, cp);
			continue;
		}
		default:
			return NULL;
		}
		sb_put(sb, &esc, 1);
	}
	return NULL;
}

/* Skips any JSON value. Returns the position after it, or NULL. */
static const char *json_skip(const char *p, const char *end)
{
	struct strbuf none = { 0 };
	if (p >= end)
		return NULL;
	if (*p == '"')
		return json_string(p, end, &none);
	if (*p == '{' || *p == '[') {
		int depth = 0;
		while (p < end) {
			if (*p == '"') {
				p = json_string(p, end, &none);
				if (!p)
					return NULL;
				continue;
			}
			if (*p == '{' || *p == '[')
				depth++;
			else if ((*p == '}' || *p == ']') && --depth == 0)
				return p + 1;
			p++;
		}
		return NULL;
	}
	const char *start = p;
	while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
		p++;
	return p > start ? p : NULL;
}

/* If line is a JSON object with "level":"error" and a string "msg", stores msg and returns true. */
static bool parse_error_record(const char *p, const char *end, char *msg, size_t cap)
{
	char key[16], level[16];
	bool have_msg = false;
	level[0] = '\0';
	p = json_ws(p, end);
	if (p >= end || *p != '{')
		return false;
	p = json_ws(p + 1, end);
	if (p < end && *p == '}')
		return false;
	while (p && p < end) {
		struct strbuf k = { key, sizeof(key), 0, false };
		key[0] = '\0';
		p = json_string(p, end, &k);
		if (!p)
			return false;
		p = json_ws(p, end);
		if (p >= end || *p != ':')
			return false;
		p = json_ws(p + 1, end);
		if (!k.full && strcmp(key, "level") == 0 && p < end && *p == '"') {
			struct strbuf l = { level, sizeof(level), 0, false };
			p = json_string(p, end, &l);
		} else if (!k.full && strcmp(key, "msg") == 0 && p < end && *p == '"') {
			struct strbuf m = { msg, cap, 0, false };
			msg[0] = '\0';
			p = json_string(p, end, &m);
			sb_trim_utf8(&m);
			have_msg = p != NULL;
		} else {
			p = json_skip(p, end);
		}
		if (!p)
			return false;
		p = json_ws(p, end);
		if (p < end && *p == ',') {
			p = json_ws(p + 1, end);
			continue;
		}
		if (p < end && *p == '}')
			break;
		return false;
	}
	return have_msg && strcmp(level, "error") == 0;
}

/* Finds the msg of the last error record in the tail of STATE/runc.log. */
static bool last_runtime_error(char *msg, size_t cap)
{
	static char tail[RUNC_LOG_TAIL];
	char cand[ERR_MSG_CAP];
	bool found = false;
	int fd = open(paths.runc_log, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return false;
	}
	off_t start = st.st_size > RUNC_LOG_TAIL ? st.st_size - RUNC_LOG_TAIL : 0;
	size_t len = 0;
	while (len < sizeof(tail)) {
		ssize_t n = pread(fd, tail + len, sizeof(tail) - len, start + (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	const char *p = tail, *end = tail + len;
	if (start > 0) { /* skip the partial first line */
		const char *nl = memchr(p, '\n', len);
		p = nl ? nl + 1 : end;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		if (parse_error_record(p, eol, cand, sizeof(cand))) {
			snprintf(msg, cap, "%s", cand);
			found = true;
		}
		p = nl ? nl + 1 : end;
	}
	return found;
}

/* ------------------------------------------------------------------- sync */

static void sync_send(const char *line)
{
	if (sync_fd < 0)
		return;
	if (write_all(sync_fd, line, strlen(line)) < 0)
		diag("write sync fd: %s", strerror(errno));
	close_fd(&sync_fd);
}

static void sync_error(const char *msg)
{
	char esc[ERR_MSG_CAP * 6 + 1];
	char line[sizeof(esc) + 32];
	json_escape(msg, esc, sizeof(esc));
	snprintf(line, sizeof(line), "{\"error\":\"%s\"}\n", esc);
	sync_send(line);
}

static void cleanup_sockets(void)
{
	if (listen_fd >= 0) {
		close_fd(&listen_fd);
		if (unlink(paths.attach_sock) < 0 && errno != ENOENT)
			diag("unlink %s: %s", paths.attach_sock, strerror(errno));
	}
	close_fd(&console_conn_fd);
	if (console_listen_fd >= 0) {
		close_fd(&console_listen_fd);
		if (unlink(paths.console_sock) < 0 && errno != ENOENT)
			diag("unlink %s: %s", paths.console_sock, strerror(errno));
	}
}

/* set once --overlay mounted the root filesystem; fail() before the sync line undoes it */
static bool overlay_mounted;

void fail(const char *fmt, ...)
{
	char msg[ERR_MSG_CAP];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	diag("%s", msg);
	if (overlay_mounted && sync_fd >= 0 && umount2(opt.rootfs, MNT_DETACH) < 0)
		diag("umount %s: %s", opt.rootfs, strerror(errno));
	if (sync_fd >= 0)
		netns_abort();
	sync_error(msg);
	prepared_next();
	cleanup_sockets();
	exit(1);
}

/* ---------------------------------------------------------------- options */

static void usage_error(const char *what, const char *arg) __attribute__((noreturn));
static void usage_error(const char *what, const char *arg)
{
	fail("usage: %s%s%s (berth-shim --id ID --bundle DIR --state DIR --runtime PATH "
	     "--runtime-root DIR --log FILE [--tty] [--stdin] [--exec PROCESS_JSON])",
	     what, arg ? ": " : "", arg ? arg : "");
}

static void parse_args(int argc, char **argv)
{
	static const struct {
		const char *name;
		const char **dst;
	} valued[] = {
		{ "--id", &opt.id }, { "--bundle", &opt.bundle }, { "--state", &opt.state },
		{ "--runtime", &opt.runtime }, { "--runtime-root", &opt.runtime_root },
		{ "--log", &opt.log }, { "--exec", &opt.exec_process }, { "--rootfs", &opt.rootfs },
		{ "--overlay", &opt.overlay }, { "--oom-file", &opt.oom_file },
		{ "--log-max-size", &opt.log_max_size }, { "--log-max-files", &opt.log_max_files },
		{ "--resolver", &opt.resolver },
	};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--tty") == 0) {
			opt.tty = true;
			continue;
		}
		if (strcmp(a, "--stdin") == 0) {
			opt.open_stdin = true;
			continue;
		}
		if (strcmp(a, "--start") == 0) {
			opt.start = true;
			continue;
		}
		if (strcmp(a, "--runtime-arg") == 0) {
			if (i + 1 >= argc || argv[i + 1][0] == '\0')
				usage_error("missing value for", a);
			if (opt.n_runtime_args == MAX_RUNTIME_ARGS)
				usage_error("too many --runtime-arg (at most 8)", NULL);
			opt.runtime_args[opt.n_runtime_args++] = argv[++i];
			continue;
		}
		if (strcmp(a, "--files") == 0) {
			if (i + 1 >= argc || start_files_length(argv[++i]) == 0)
				usage_error("bad --files (a length)", i < argc ? argv[i] : NULL);
			opt.files = true;
			continue;
		}
		if (strcmp(a, "--keep-trees-if") == 0) {
			if (i + 1 >= argc || !remove_tree_keep_option(argv[++i]))
				usage_error("bad --keep-trees-if (one absolute path)", i < argc ? argv[i] : NULL);
			continue;
		}
		if (strcmp(a, "--remove-tree") == 0) {
			if (i + 1 >= argc || !remove_tree_option(argv[++i]))
				usage_error("bad --remove-tree (an absolute path, at most 4)", i < argc ? argv[i] : NULL);
			continue;
		}
		if (strcmp(a, "--publish") == 0) {
			if (i + 1 >= argc || ports_parse(argv[++i]) < 0)
				usage_error("bad --publish (PROTO,HOST_IP,HOST_PORT,TARGET_IP,TARGET_PORT)", i < argc ? argv[i] : NULL);
			opt.publish = true;
			continue;
		}
		if (i + 1 < argc && netns_option(a, argv[i + 1])) {
			i++;
			continue;
		}
		size_t k;
		for (k = 0; k < sizeof(valued) / sizeof(valued[0]); k++)
			if (strcmp(a, valued[k].name) == 0)
				break;
		if (k == sizeof(valued) / sizeof(valued[0]))
			usage_error("unknown option", a);
		if (i + 1 >= argc || argv[i + 1][0] == '\0')
			usage_error("missing value for", a);
		*valued[k].dst = argv[++i];
	}
	if (!opt.id || !opt.state || !opt.runtime || !opt.runtime_root || !opt.log)
		usage_error("missing required option", NULL);
	if (!opt.exec_process && !opt.bundle)
		usage_error("missing required option", "--bundle");
	if (opt.overlay && (!opt.rootfs || opt.exec_process))
		usage_error("--overlay needs --rootfs (container mode)", NULL);
	if (opt.publish && opt.exec_process)
		usage_error("--publish is for container mode", NULL);
	if (opt.files && (opt.exec_process || !opt.bundle))
		usage_error("--files is for container mode", NULL);
	if (remove_tree_wanted() && (opt.exec_process || !opt.rootfs))
		usage_error("--remove-tree needs --rootfs (container mode)", NULL);
}

static void init_paths(void)
{
	if (state_path(paths.shim_pid, "shim.pid") < 0 || state_path(paths.init_pid, "init.pid") < 0 ||
	    state_path(paths.attach_sock, "attach.sock") < 0 || state_path(paths.console_sock, "console.sock") < 0 ||
	    state_path(paths.runc_log, "runc.log") < 0 || state_path(paths.exit_json, "exit.json") < 0)
		fail("state directory path too long");
}

/* ---------------------------------------------------------------- signals */

static void on_sigchld(int sig)
{
	(void)sig;
	int e = errno;
	ssize_t w = write(sig_pipe[1], "c", 1); /* full pipe: a wake-up is pending anyway */
	(void)w;
	errno = e;
}

static void setup_signals(void)
{
	if (pipe2(sig_pipe, O_NONBLOCK | O_CLOEXEC) < 0)
		fail("pipe: %s", strerror(errno));
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_IGN;
	const int ignored[] = { SIGPIPE, SIGTERM, SIGINT, SIGHUP };
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		if (sigaction(ignored[i], &sa, NULL) < 0)
			fail("sigaction: %s", strerror(errno));
	sa.sa_handler = on_sigchld;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	if (sigaction(SIGCHLD, &sa, NULL) < 0)
		fail("sigaction SIGCHLD: %s", strerror(errno));
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_UNBLOCK, &set, NULL) < 0)
		fail("sigprocmask: %s", strerror(errno));
}

/* In a forked child before exec: undo the shim's signal setup. */
static void reset_signals_in_child(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	const int sigs[] = { SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static void drain_sig_pipe(void)
{
	char buf[64];
	while (read(sig_pipe[0], buf, sizeof(buf)) > 0)
		;
}

/* --------------------------------------------------------------- children */

static void record_init_exit(int status, uint64_t at_ns)
{
	ports_stop(); /* the published ports are free before the exit is known */
	init_exited = true;
	exited_at_ns = at_ns;
	if (WIFSIGNALED(status)) {
		exit_signal = WTERMSIG(status);
		exit_code = 128 + exit_signal;
	} else {
		exit_signal = 0;
		exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
	}
}

static void note_child_exit(pid_t pid, int status)
{
	if (ports_reaped(pid, status))
		return;
	if (pid == runtime_pid) {
		runtime_done = true;
		runtime_status = status;
		runtime_pid = -1;
		return;
	}
	if (init_pid > 0) {
		if (pid == init_pid && !init_exited)
			record_init_exit(status, now_realtime_ns());
		return; /* some orphan: reaped and forgotten */
	}
	/* init.pid not read yet: remember, the process may turn out to be init. */
	early_exits[early_exit_next % EARLY_EXITS] = (struct early_exit){ pid, status };
	early_exit_next++;
}

static void reap_children(void)
{
	drain_sig_pipe();
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0)
			break; /* 0: none ready; ECHILD: no children */
		note_child_exit(pid, status);
	}
}

static void check_early_exits(void)
{
	for (unsigned i = 0; i < EARLY_EXITS && i < early_exit_next; i++)
		if (early_exits[i].pid == init_pid) {
			record_init_exit(early_exits[i].status, now_realtime_ns());
			break;
		}
}

/*
 * In a child whose exec failed: why, as an error record of the runtime's log (read back as the runtime's own records
 * are, last_runtime_error), in Go's words as dockerd reports them: `exec: "runc": executable file not found in $PATH`,
 * `fork/exec /opt/runc: permission denied`. (The monitor has one thread: the child may format.)
 */
static void note_exec_failure(const char *file, int err)
{
	char what[PATH_MAX + 64], line[2 * sizeof(what) + 64];
	if (err == ENOENT && !strchr(file, '/'))
		snprintf(what, sizeof(what), "exec: \"%s\": executable file not found in $PATH", file);
	else {
		snprintf(what, sizeof(what), "fork/exec %s: %s", file, strerror(err));
		char *e = what + strlen(file) + strlen("fork/exec : ");
		if (e < what + sizeof(what) && *e >= 'A' && *e <= 'Z')
			*e = (char)(*e - 'A' + 'a');
	}
	size_t n = (size_t)snprintf(line, sizeof(line), "{\"level\":\"error\",\"msg\":\"");
	for (const char *c = what; *c && n < sizeof(line) - 8; c++) {
		if (*c == '"' || *c == '\\')
			line[n++] = '\\';
		line[n++] = (unsigned char)*c < 0x20 ? '?' : *c;
	}
	n += (size_t)snprintf(line + n, sizeof(line) - n, "\"}\n");
	int fd = open(paths.runc_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0) {
		ssize_t w = write(fd, line, n);
		(void)w;
		close(fd);
	}
}

/* Forks and execs argv with the given stdio; the child keeps no other shim fd (all are O_CLOEXEC). */
static pid_t spawn(char *const argv[], int in, int out, int err)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid; /* parent, or -1 */
	reset_signals_in_child();
	if (dup2(in, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0)
		_exit(127);
	execvp(argv[0], argv);
	note_exec_failure(argv[0], errno);
	_exit(127);
}

static void describe_status(int status, char *buf, size_t cap)
{
	if (WIFEXITED(status))
		snprintf(buf, cap, "%s exited with status %d", opt.runtime, WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, cap, "%s killed by signal %d", opt.runtime, WTERMSIG(status));
	else
		snprintf(buf, cap, "%s ended with wait status %d", opt.runtime, status);
}

/* ---------------------------------------------------------------- console */

static void listen_unix(int *fd, const char *path, const char *what)
{
	struct sockaddr_un addr;
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(addr.sun_path))
		fail("%s socket path too long: %s", what, path);
	strcpy(addr.sun_path, path);
	if (unlink(path) < 0 && errno != ENOENT)
		fail("unlink %s: %s", path, strerror(errno));
	*fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (*fd < 0)
		fail("socket: %s", strerror(errno));
	if (bind(*fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		fail("bind %s: %s", path, strerror(errno));
	if (chmod(path, 0600) < 0)
		fail("chmod %s: %s", path, strerror(errno));
	if (listen(*fd, SOMAXCONN) < 0)
		fail("listen %s: %s", path, strerror(errno));
}

static void console_accept(void)
{
	if (console_listen_fd < 0 || console_conn_fd >= 0 || pty_master >= 0)
		return;
	int fd = accept4(console_listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd >= 0)
		console_conn_fd = fd;
	else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
		diag("accept console: %s", strerror(errno));
}

/* Receives the pty master sent by the runtime with SCM_RIGHTS. */
static void console_receive(void)
{
	if (console_conn_fd < 0)
		return;
	char data[512];
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} ctl;
	struct iovec iov = { .iov_base = data, .iov_len = sizeof(data) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	ssize_t n = recvmsg(console_conn_fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n < 0)
		diag("recvmsg console: %s", strerror(errno));
	for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfds; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (pty_master < 0)
				pty_master = fd;
			else
				close(fd);
		}
	}
	if (pty_master >= 0 || n <= 0)
		close_fd(&console_conn_fd);
}

static void console_close(void)
{
	close_fd(&console_conn_fd);
	if (console_listen_fd >= 0) {
		close_fd(&console_listen_fd);
		if (unlink(paths.console_sock) < 0 && errno != ENOENT)
			diag("unlink %s: %s", paths.console_sock, strerror(errno));
	}
}

/* Waits for the runtime command to exit, handling the console socket meanwhile.
 * timeout_ms < 0: no limit. Returns false on timeout. */
static bool wait_runtime(int timeout_ms)
{
	int64_t deadline = timeout_ms >= 0 ? now_mono_ms() + timeout_ms : -1;
	while (!runtime_done) {
		struct pollfd pfd[3];
		int n = 0;
		pfd[n++] = (struct pollfd){ .fd = sig_pipe[0], .events = POLLIN };
		if (console_listen_fd >= 0 && console_conn_fd < 0 && pty_master < 0)
			pfd[n++] = (struct pollfd){ .fd = console_listen_fd, .events = POLLIN };
		if (console_conn_fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = console_conn_fd, .events = POLLIN };
		int wait = -1;
		if (deadline >= 0) {
			int64_t left = deadline - now_mono_ms();
			if (left <= 0)
				return false;
			wait = (int)left;
		}
		if (poll(pfd, (nfds_t)n, wait) < 0 && errno != EINTR)
			fail("poll: %s", strerror(errno));
		console_accept();
		console_receive();
		reap_children();
	}
	/* The runtime may have sent the console just before exiting. */
	console_accept();
	console_receive();
	return true;
}

/* ------------------------------------------------------------------ setup */

static void ensure_std_fds(void)
{
	for (int fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF && open("/dev/null", O_RDWR) < 0)
			exit(1);
}

static void setup_sync_fd(void)
{
	if (fcntl(SYNC_FD, F_GETFD) < 0)
		return; /* not given: run without reporting */
	sync_fd = SYNC_FD;
	if (set_cloexec(sync_fd) < 0 || set_nonblock(sync_fd) < 0)
		diag("fcntl sync fd: %s", strerror(errno));
}

static void write_shim_pid(void)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (write_file_atomic(paths.shim_pid, buf, (size_t)n) < 0)
		fail("write %s: %s", paths.shim_pid, strerror(errno));
}

static unsigned long long log_size, log_max_size;
static unsigned log_max_files = 1;

static void open_log(void)
{
	log_fd = open(opt.log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (log_fd < 0)
		fail("open log %s: %s", opt.log, strerror(errno));
	struct stat st;
	log_size = fstat(log_fd, &st) == 0 ? (unsigned long long)st.st_size : 0;
	if (opt.log_max_size)
		log_max_size = strtoull(opt.log_max_size, NULL, 10);
	if (opt.log_max_files) {
		unsigned long n = strtoul(opt.log_max_files, NULL, 10);
		log_max_files = n < 1 ? 1 : n > 100 ? 100 : (unsigned)n;
	}
}

/* Renames FILE.(i-1) to FILE.i down to FILE to FILE.1 and opens a new FILE; or truncates with one file. */
static void rotate_log(void)
{
	if (log_max_files <= 1) {
		if (ftruncate(log_fd, 0) < 0)
			diag("truncate log: %s", strerror(errno));
		log_size = 0;
		return;
	}
	char from[PATH_MAX], to[PATH_MAX];
	for (unsigned i = log_max_files - 1; i >= 1; i--) {
		if (i == 1)
			snprintf(from, sizeof(from), "%s", opt.log);
		else
			snprintf(from, sizeof(from), "%s.%u", opt.log, i - 1);
		snprintf(to, sizeof(to), "%s.%u", opt.log, i);
		if (rename(from, to) < 0 && errno != ENOENT)
			diag("rotate %s: %s", from, strerror(errno));
	}
	int fd = open(opt.log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0) {
		diag("open log %s: %s", opt.log, strerror(errno));
		return;
	}
	close(log_fd);
	log_fd = fd;
	log_size = 0;
}

static void make_pipe(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC) < 0)
		fail("pipe: %s", strerror(errno));
}

/* Creates the container's stdio. child[] receives the runtime's 0/1/2 (to be closed after spawn). */
static void setup_stdio(int child[3])
{
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0)
		fail("open /dev/null: %s", strerror(errno));
	if (opt.tty) {
		child[0] = devnull;
		child[1] = dup(devnull);
		child[2] = dup(devnull);
		if (child[1] < 0 || child[2] < 0)
			fail("dup: %s", strerror(errno));
		listen_unix(&console_listen_fd, paths.console_sock, "console");
		return;
	}
	int out[2], err[2];
	make_pipe(out);
	make_pipe(err);
	outputs[0].fd = out[0];
	outputs[1].fd = err[0];
	child[1] = out[1];
	child[2] = err[1];
	if (opt.open_stdin) {
		int in[2];
		make_pipe(in);
		child[0] = in[0];
		stdin_fd = in[1];
		close(devnull);
	} else {
		child[0] = devnull;
	}
	if (set_nonblock(out[0]) < 0 || set_nonblock(err[0]) < 0 || (stdin_fd >= 0 && set_nonblock(stdin_fd) < 0))
		fail("fcntl: %s", strerror(errno));
}

/* The runtime, its --runtime-arg options and its --root: the start of every command line it is run with. */
static int runtime_prefix(char **argv)
{
	int n = 0;
	argv[n++] = (char *)opt.runtime;
	for (int i = 0; i < opt.n_runtime_args; i++)
		argv[n++] = (char *)opt.runtime_args[i];
	argv[n++] = "--root";
	argv[n++] = (char *)opt.runtime_root;
	return n;
}

static void build_runtime_argv(char *argv[MAX_ARGS])
{
	int n = runtime_prefix(argv);
	argv[n++] = "--log";
	argv[n++] = paths.runc_log;
	argv[n++] = "--log-format";
	argv[n++] = "json";
	if (opt.exec_process) {
		argv[n++] = "exec";
		argv[n++] = "--detach";
		argv[n++] = "--process";
		argv[n++] = (char *)opt.exec_process;
	} else {
		if (opt.start) {
			argv[n++] = "run";
			argv[n++] = "--detach";
		} else {
			argv[n++] = "create";
		}
		argv[n++] = "--bundle";
		argv[n++] = (char *)opt.bundle;
	}
	argv[n++] = "--pid-file";
	argv[n++] = paths.init_pid;
	if (opt.tty) {
		argv[n++] = "--console-socket";
		argv[n++] = paths.console_sock;
	}
	argv[n++] = (char *)opt.id;
	argv[n] = NULL;
}

static pid_t read_init_pid(void)
{
	char buf[32];
	int fd = open(paths.init_pid, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n;
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *end;
	errno = 0;
	long v = strtol(buf, &end, 10);
	if (errno || end == buf || v <= 0 || v > INT_MAX)
		return -1;
	return (pid_t)v;
}

static void run_delete(void);

/* --overlay: the root filesystem, mounted here with one system call rather than by the daemon through mount(8). */
static void mount_overlay(void)
{
	if (!opt.overlay)
		return;
	if (mount("overlay", opt.rootfs, "overlay", 0, opt.overlay) < 0)
		fail("mount overlay on %s: %s", opt.rootfs, strerror(errno));
	overlay_mounted = true;
}

/* --publish: the ports bound (a port taken fails the start before the runtime runs) and their relay started. */
static void publish_ports(void)
{
	char err[ERR_MSG_CAP];
	if (ports_bind(err, sizeof(err)) < 0 || ports_serve(err, sizeof(err)) < 0)
		fail("%s", err);
}

/* Runs runc create / exec, reports the result on the sync fd. Exits on failure. */
static void create_process(void)
{
	int child[3] = { -1, -1, -1 };
	char *argv[MAX_ARGS];
	setup_stdio(child);
	build_runtime_argv(argv);
	runtime_done = false;
	runtime_pid = spawn(argv, child[0], child[1], child[2]);
	if (runtime_pid < 0)
		fail("fork: %s", strerror(errno));
	for (int i = 0; i < 3; i++)
		close_fd(&child[i]);
	wait_runtime(-1);
	console_close();

	char msg[ERR_MSG_CAP];
	if (!WIFEXITED(runtime_status) || WEXITSTATUS(runtime_status) != 0) {
		if (!last_runtime_error(msg, sizeof(msg)))
			describe_status(runtime_status, msg, sizeof(msg));
		fail("%s", msg);
	}
	init_pid = read_init_pid();
	if (init_pid <= 0 || (opt.tty && pty_master < 0)) {
		snprintf(msg, sizeof(msg), init_pid <= 0 ? "cannot read pid file %s" : "%s did not send the console",
			 init_pid <= 0 ? paths.init_pid : opt.runtime);
		if (!opt.exec_process)
			run_delete();
		fail("%s", msg);
	}
	if (opt.tty) {
		if (set_nonblock(pty_master) < 0)
			fail("fcntl pty: %s", strerror(errno));
		outputs[0].fd = pty_master;
		stdin_fd = pty_master; /* a tty always has an input side */
	}
	if (opt.start || opt.exec_process)
		wait_process_exec(init_pid);
	check_early_exits();
	char line[64];
	snprintf(line, sizeof(line), "{\"pid\":%ld}\n", (long)init_pid);
	sync_send(line);
	prepared_next();
}

static void run_delete(void)
{
	char *argv[MAX_RUNTIME_ARGS + 7];
	int n = runtime_prefix(argv);
	argv[n++] = "delete";
	argv[n++] = "--force";
	argv[n++] = (char *)opt.id;
	argv[n] = NULL;
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0) {
		diag("open /dev/null: %s", strerror(errno));
		return;
	}
	runtime_done = false;
	runtime_pid = spawn(argv, devnull, devnull, devnull);
	close(devnull);
	if (runtime_pid < 0) {
		diag("fork: %s", strerror(errno));
		return;
	}
	if (!wait_runtime(DELETE_TIMEOUT_MS)) {
		diag("%s delete timed out", opt.runtime);
		kill(runtime_pid, SIGKILL);
		runtime_pid = -1;
	} else if (!WIFEXITED(runtime_status) || WEXITSTATUS(runtime_status) != 0) {
		char msg[128];
		describe_status(runtime_status, msg, sizeof(msg));
		diag("delete: %s", msg);
	}
}

/* ------------------------------------------------------------------ stdin */

static bool stdin_accepting(void)
{
	return stdin_fd >= 0 && (opt.tty || !stdin_close_requested);
}

static void stdin_append(const uint8_t *p, size_t n)
{
	if (!stdin_accepting())
		return;
	size_t room = STDIN_CAP - stdin_len;
	if (n > room) /* cannot happen: reads are bounded by the free space */
		n = room;
	memcpy(stdin_buf + stdin_len, p, n);
	stdin_len += n;
}

static void stdin_discard(void)
{
	stdin_off = stdin_len = 0;
}

static void stdin_maybe_close(void)
{
	if (opt.tty || !stdin_close_requested || stdin_len > 0)
		return;
	close_fd(&stdin_fd);
}

static void stdin_broken(void)
{
	stdin_discard();
	if (opt.tty)
		stdin_fd = -1; /* the master itself is closed by the output side */
	else
		close_fd(&stdin_fd);
}

static void stdin_flush(void)
{
	while (stdin_fd >= 0 && stdin_off < stdin_len) {
		ssize_t n = write(stdin_fd, stdin_buf + stdin_off, stdin_len - stdin_off);
		if (n > 0) {
			stdin_off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		stdin_broken(); /* EPIPE: the container closed its stdin; EIO: pty gone */
		return;
	}
	stdin_discard();
	stdin_maybe_close();
}

static void stdin_request_close(void)
{
	if (stdin_fd < 0)
		return;
	if (opt.tty) {
		static const uint8_t eot = 0x04;
		stdin_append(&eot, 1);
		return;
	}
	stdin_close_requested = true;
	stdin_maybe_close();
}

static void apply_resize(const uint8_t p[4])
{
	if (pty_master < 0)
		return;
	struct winsize ws = { .ws_row = get_be16(p), .ws_col = get_be16(p + 2) };
	if (ioctl(pty_master, TIOCSWINSZ, &ws) < 0)
		diag("TIOCSWINSZ: %s", strerror(errno));
}

/* ---------------------------------------------------------------- clients */

static void drop_client(struct client *c)
{
	close_fd(&c->fd);
}

/* Removes dropped clients; called when no poll indexes refer to clients. */
static void compact_clients(void)
{
	int j = 0;
	for (int i = 0; i < nclients; i++)
		if (clients[i].fd >= 0)
			clients[j++] = clients[i];
	nclients = j;
}

static void accept_clients(void)
{
	for (;;) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				diag("accept: %s", strerror(errno));
			return;
		}
		if (nclients >= MAX_CLIENTS) {
			diag("too many attach clients");
			close(fd);
			continue;
		}
		clients[nclients++] = (struct client){ .fd = fd };
	}
}

static void notify_clients(void)
{
	for (int i = 0; i < nclients; i++) {
		struct client *c = &clients[i];
		if (c->fd < 0)
			continue;
		if (send(c->fd, "o", 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN &&
		    errno != EWOULDBLOCK && errno != EINTR)
			drop_client(c);
	}
}

static void finish_message(struct client *c)
{
	if (c->type == MSG_CLOSE_STDIN)
		stdin_request_close();
	else if (c->type == MSG_RESIZE)
		apply_resize(c->resize);
	c->hdr_len = 0;
	c->resize_len = 0;
}

/* Validates a complete header. Returns false for a malformed message. */
static bool begin_message(struct client *c)
{
	c->type = c->hdr[0];
	c->remaining = get_be32(c->hdr + 1);
	if (c->remaining > MAX_MSG_LEN)
		return false;
	switch (c->type) {
	case MSG_STDIN:
	case MSG_CLOSE_STDIN:
		break;
	case MSG_RESIZE:
		if (c->remaining != 4)
			return false;
		break;
	default:
		return false;
	}
	if (c->remaining == 0)
		finish_message(c);
	return true;
}

static void message_payload(struct client *c, const uint8_t *p, size_t n)
{
	if (c->type == MSG_STDIN) {
		stdin_append(p, n);
	} else if (c->type == MSG_RESIZE) {
		memcpy(c->resize + c->resize_len, p, n); /* n <= 4 - resize_len */
		c->resize_len = (uint8_t)(c->resize_len + n);
	}
}

static bool client_consume(struct client *c, const uint8_t *p, size_t n)
{
	while (n > 0) {
		if (c->hdr_len < MSG_HDR) {
			size_t k = MSG_HDR - c->hdr_len;
			if (k > n)
				k = n;
			memcpy(c->hdr + c->hdr_len, p, k);
			c->hdr_len = (uint8_t)(c->hdr_len + k);
			p += k;
			n -= k;
			if (c->hdr_len == MSG_HDR && c->hdr[0] == MSG_RESOLVER && get_be32(c->hdr + 1) == 0) {
				resolver_take_peer(c->fd, p, n); /* the resolver's peer from now on (resolver.h) */
				c->fd = -1;
				return true;
			}
			if (c->hdr_len == MSG_HDR && !begin_message(c))
				return false;
			continue;
		}
		size_t k = c->remaining < n ? c->remaining : n;
		message_payload(c, p, k);
		p += k;
		n -= k;
		c->remaining -= (uint32_t)k;
		if (c->remaining == 0)
			finish_message(c);
	}
	return true;
}

static void read_client(struct client *c)
{
	size_t limit = sizeof(client_buf);
	if (stdin_accepting()) {
		size_t room = STDIN_CAP - stdin_len;
		if (room == 0)
			return; /* filled by another client this round */
		if (room < limit)
			limit = room;
	}
	ssize_t n = read(c->fd, client_buf, limit);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0 || !client_consume(c, client_buf, (size_t)n))
		drop_client(c);
}

static void close_clients(void)
{
	for (int i = 0; i < nclients; i++)
		drop_client(&clients[i]);
	nclients = 0;
}

/* ----------------------------------------------------------------- output */

static void close_output(struct output *o)
{
	if (o->fd >= 0)
		log_lines_end(o->stream, now_realtime_ns());
	if (o->fd == pty_master && pty_master >= 0) {
		if (stdin_fd == pty_master) {
			stdin_fd = -1;
			stdin_discard();
		}
		pty_master = -1;
	}
	close_fd(&o->fd);
}

/* The log writer's hooks (shim-log.h): a record that would take the file past max-size rotates it first. */
bool shim_log_would_rotate(size_t pending, size_t record_len)
{
	return log_max_size > 0 && log_size + pending > 0 && log_size + pending + record_len > log_max_size;
}

void shim_log_rotate(void)
{
	rotate_log();
}

void shim_log_writev(const struct iovec *iov, int iovcnt, size_t bytes)
{
	struct iovec v[iovcnt];
	memcpy(v, iov, sizeof(v));
	int i = 0;
	while (bytes > 0) {
		ssize_t n = writev(log_fd, v + i, iovcnt - i);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			diag("write log: %s", n < 0 ? strerror(errno) : "short write");
			return;
		}
		log_size += (size_t)n;
		bytes -= (size_t)n;
		size_t k = (size_t)n;
		while (i < iovcnt && k >= v[i].iov_len)
			k -= v[i++].iov_len;
		if (k > 0) {
			v[i].iov_base = (uint8_t *)v[i].iov_base + k;
			v[i].iov_len -= k;
		}
	}
}

static void read_output(struct output *o)
{
	ssize_t n = read(o->fd, record_buf + RECORD_HDR, READ_CHUNK);
	if (n > 0) {
		log_lines_write(o->stream, record_buf + RECORD_HDR, (size_t)n, now_realtime_ns());
		notify_clients();
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n < 0 && errno != EIO) /* EIO: pty without slave, i.e. EOF */
		diag("read output: %s", strerror(errno));
	close_output(o);
}

static bool outputs_open(void)
{
	return outputs[0].fd >= 0 || outputs[1].fd >= 0;
}

/* -------------------------------------------------------------- main loop */

static void run_loop(void)
{
	static struct pollfd pfd[4 + MAX_CLIENTS + RESOLVER_MAX_FDS];
	static int pfd_client[4 + MAX_CLIENTS + RESOLVER_MAX_FDS];
	int64_t drain_deadline = -1;

	for (;;) {
		if (init_exited) {
			if (drain_deadline < 0)
				drain_deadline = now_mono_ms() + DRAIN_MS;
			if (!outputs_open() || now_mono_ms() >= drain_deadline)
				return;
		}
		bool pending = stdin_len > stdin_off;
		int n = 0, out_idx[2] = { -1, -1 }, stdin_idx = -1, listen_idx = -1;
		pfd[n++] = (struct pollfd){ .fd = sig_pipe[0], .events = POLLIN };
		if (listen_fd >= 0) {
			listen_idx = n;
			pfd[n++] = (struct pollfd){ .fd = listen_fd, .events = POLLIN };
		}
		for (int i = 0; i < 2; i++) {
			if (outputs[i].fd < 0)
				continue;
			out_idx[i] = n;
			short ev = POLLIN;
			if (pending && outputs[i].fd == stdin_fd)
				ev |= POLLOUT;
			pfd[n++] = (struct pollfd){ .fd = outputs[i].fd, .events = ev };
		}
		if (pending && stdin_fd >= 0 && stdin_fd != pty_master) {
			stdin_idx = n;
			pfd[n++] = (struct pollfd){ .fd = stdin_fd, .events = POLLOUT };
		}
		int first_client = n;
		if (!pending) {
			for (int i = 0; i < nclients; i++) {
				pfd_client[n] = i;
				pfd[n++] = (struct pollfd){ .fd = clients[i].fd, .events = POLLIN };
			}
		}
		int first_resolver = n;
		n += resolver_poll_fill(pfd + n, RESOLVER_MAX_FDS);
		int timeout = resolver_timeout_ms();
		if (drain_deadline >= 0) {
			int64_t left = drain_deadline - now_mono_ms();
			if (timeout < 0 || left < timeout)
				timeout = left > 0 ? (int)left : 0;
		}
		int r = poll(pfd, (nfds_t)n, timeout);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			fail("poll: %s", strerror(errno));
		}
		if (pfd[0].revents)
			reap_children();
		/* Accept before reading output so a new client gets this round's tick. */
		if (listen_idx >= 0 && (pfd[listen_idx].revents & POLLIN))
			accept_clients();
		for (int i = 0; i < 2; i++) {
			if (out_idx[i] < 0 || outputs[i].fd < 0)
				continue;
			short re = pfd[out_idx[i]].revents;
			if ((re & POLLOUT) && stdin_fd == outputs[i].fd)
				stdin_flush();
			if (outputs[i].fd >= 0 && (re & (POLLIN | POLLHUP | POLLERR)))
				read_output(&outputs[i]);
		}
		if (stdin_idx >= 0 && pfd[stdin_idx].revents)
			stdin_flush();
		resolver_poll_handle(pfd + first_resolver, n - first_resolver);
		for (int k = first_client; k < first_resolver; k++) {
			struct client *c = &clients[pfd_client[k]];
			if (c->fd >= 0 && pfd[k].revents)
				read_client(c);
		}
		compact_clients();
	}
}

/* ---------------------------------------------------------------- finish */

/* Whether the cgroup's OOM counter file (--oom-file) counts a kill: its "oom_kill N" line with N > 0. */
static bool oom_killed(void)
{
	if (!opt.oom_file)
		return false;
	char buf[1024];
	int fd = open(opt.oom_file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	for (char *line = buf; line && *line; ) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strncmp(line, "oom_kill ", 9) == 0)
			return strtoull(line + 9, NULL, 10) > 0;
		line = next;
	}
	return false;
}

/* Writes exit.json and, once it is there, tells every client its text after the byte 'x' (see attach.sock above). */
/* The exit message: `x` and exit.json's text (made once the process has exited). */
static char exit_msg[161];
static int exit_msg_len = -1;

static void make_exit_message(void)
{
	exit_msg[0] = 'x';
	int n = snprintf(exit_msg + 1, sizeof(exit_msg) - 1, "{\"exitCode\":%d,\"exitedAtNs\":\"%llu\",\"signal\":%d%s}\n",
			 exit_code, (unsigned long long)exited_at_ns, exit_signal, oom_killed() ? ",\"oomKilled\":true" : "");
	exit_msg_len = n < 0 || n >= (int)sizeof(exit_msg) - 1 ? 0 : n;
}

/* Sends the exit message to every client that does not have it yet (one that connected since gets it too). */
static void tell_clients(void)
{
	if (listen_fd >= 0)
		accept_clients();
	for (int i = 0; i < nclients; i++) {
		struct client *c = &clients[i];
		if (c->fd < 0 || c->told)
			continue;
		(void)send(c->fd, exit_msg, (size_t)exit_msg_len + 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		c->told = true;
	}
}

static void write_exit_json(void)
{
	if (write_file_atomic(paths.exit_json, exit_msg + 1, (size_t)exit_msg_len) < 0)
		diag("write %s: %s", paths.exit_json, strerror(errno));
}

static void finish(void)
{
	resolver_close();
	for (int i = 0; i < 2; i++)
		close_output(&outputs[i]);
	if (!opt.tty)
		close_fd(&stdin_fd);
	close_fd(&log_fd); /* not fsynced, as dockerd's json-file logs are not: a daemon crash loses nothing written */
	/*
	 * The daemon learns of the exit first (a client still in the listen queue too: the daemon connects just after the
	 * sync line); the unmounts (~1 ms: the kernel waits out an RCU grace period) and exit.json follow, and only then
	 * do the connections close: the daemon waits for that close before it touches the root filesystem or the
	 * namespace file again (a new start, a removal). exit.json is written after the unmounts: a restarted daemon that
	 * finds it finds them done.
	 */
	make_exit_message();
	tell_clients();
	bool unmounted = true;
	if (opt.rootfs && !opt.exec_process && umount2(opt.rootfs, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT) {
		diag("umount %s: %s", opt.rootfs, strerror(errno));
		unmounted = false;
	}
	netns_detach();
	/* an auto-removed container's trees (never under a root filesystem still mounted) */
	if (unmounted)
		remove_trees();
	write_exit_json();
	tell_clients();
	/* the runtime's delete (several ms) runs after the close, not before */
	close_clients();
	cleanup_sockets();
	if (!opt.exec_process)
		run_delete();
	netns_remove_links();
}

int main(int argc, char **argv)
{
	int service = service_mode(argc, argv);
	if (service >= 0)
		return service;
	ensure_std_fds();
	ports_cmdline(argc, argv); /* (the process's own argument area, before a prepared monitor's command line replaces argv) */
	if (argc > 1 && strcmp(argv[1], "--prepared") == 0)
		prepared_wait(&argc, &argv); /* prepared.c: the command line (and the sync fd) come from the daemon later */
	setup_sync_fd();
	parse_args(argc, argv);
	init_paths();
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		fail("prctl(PR_SET_CHILD_SUBREAPER): %s", strerror(errno));
	setup_signals();
	write_shim_pid();
	listen_unix(&listen_fd, paths.attach_sock, "attach");
	open_log();
	netns_setup(); /* before the resolver: it serves inside the namespace made here (--netns FILE = --resolver FILE) */
	if (opt.resolver) {
		char err[256];
		if (resolver_open(opt.resolver, err, sizeof(err)) < 0)
			fail("%s", err);
	}
	publish_ports();
	if (opt.files)
		start_files_write(opt.bundle);
	mount_overlay();
	create_process();
	run_loop();
	finish();
	return 0;
}
