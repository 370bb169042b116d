/*
 * Upload bodies received by the helper (blob-sender.c has the channel and the loop): the registry hands over the
 * connection of a PATCH or PUT whose body has a Content-Length once Node has stopped reading it and has written the
 * body bytes its parser had already read. The line
 *
 *     {"cmd":"NODE_HANDLE",…,"msg":{"id":N,"recv":"<file>","at":A,"hashed":H,"length":L,"idle":MS[,"state":"<hex>"]}}
 *
 * asks for the next L bytes of the connection to be appended to the upload file <file> (one name in the ingest
 * directory given as the helper's second argument; opened without following a link, never created here), which
 * holds A bytes. The bytes are hashed (sha256) as they are written, after the file's: "state" is the hash of its
 * first H bytes as an earlier receive reported it (no state: H is 0); bytes H to A (what Node's parser had read of
 * this body, or bytes the registry wrote itself) are read back from the file and hashed first. The answer,
 * {"id":N,"received":X,"state":"<hex>","digest":"<hex>"} with ,"error":"<errno name>" when it stopped early, says
 * how many bytes were written (and hashed: always the same bytes), the hash's state after them and the sha256 of the
 * whole file so far; Node carries both in its upload writer (fs-driver.ts). Errors: ENODATA the client ended the
 * body early, ETIMEDOUT nothing arrived for MS milliseconds, ECANCELED Node's abort, else the read's or write's.
 * Not a byte past L is read from the connection (what follows is the client's next request, which Node refuses by
 * closing the connection after its reply). The file is flushed to disk in the background as it grows.
 *
 * With "chunked":1 the body is in chunked transfer coding and L is the most it may hold (decoded): the message also
 * says where Node's parser stopped in the framing, "phase":0 at a chunk-size line's start, 1 in a chunk's data with
 * "chunk":C bytes left, 2 or 3 before the CR or the LF that ends a chunk's data. The helper decodes the rest (chunk
 * extensions and trailers skipped, at most 4 KiB each), appends the data and ends at the last chunk's blank line;
 * more than L bytes of data is EFBIG (nothing past L written), a framing error EPROTO. It may read past the
 * message's end (the connection is closed after the reply anyway).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "blob-helper.h"

#ifdef BERTH_NO_RECEIVE

int receiver_init (const char *ingest) { (void)ingest; return 0; }
void receive_start (const char *line, int sock) {
  char out[96];
  int64_t id = number(line, "\"id\":");
  close(sock);
  snprintf(out, sizeof out, "{\"id\":%" PRId64 ",\"received\":0,\"error\":\"ENOSYS\"}\n", id < 0 ? 0 : id);
  say(out);
}
void receive_pump (struct transfer *t) { (void)t; }
void receive_finish (struct transfer *t, int err) { (void)t; (void)err; }
int receive_expire (void) { return -1; }

#else

/* the one-call sha256 API is deprecated in OpenSSL 3, but it is the one whose state can be carried between calls */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

/** Socket reads go into this much memory per receive (read, hashed, written). */
#define RECV_BUFFER (256 * 1024)
/** The connection wakes the helper once this much has arrived (SO_RCVLOWAT; less for a body's last bytes): a
 * wake-up and a read per 64 KiB or so, as the socket delivers, cost more than the reads' copies. */
#define RECV_LOWAT (128 * 1024)
/** One wake-up reads at most this much from one connection, so one upload never starves the others. */
#define RECV_STEP (4 * 1024 * 1024)
/** The file's pages are queued for writeback every this many bytes, so a commit's fsync has only the tail left. */
#define FLUSH_EVERY (8 * 1024 * 1024)

/** Where a chunked body's decoder is. */
enum phase { SIZE, DATA, DATA_CR, DATA_LF, EXT, SIZE_LF, TRAILER, TRAILER_LINE, TRAILER_LF, END_LF, DONE };
/** Chunk extensions and trailer lines are skipped, up to this many bytes each. */
#define LINE_SKIP_MAX 4096

struct receive {
  SHA256_CTX sha;
  unsigned char *buf;
  int64_t idle_ms;
  int64_t deadline;
  off_t flushed;
  int lowat;
  int chunked;
  enum phase phase;
  uint64_t chunk;   /* DATA: bytes left in the chunk; SIZE: the size read so far */
  int digits;       /* SIZE: hex digits read */
  int skipped;      /* EXT, TRAILER_LINE: bytes skipped on this line */
};

static int ingestdir = -1;

static int64_t now_ms (void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int receiver_init (const char *ingest) {
  ingestdir = open(ingest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  return ingestdir >= 0;
}

static void hex (const unsigned char *in, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) { out[2 * i] = digits[in[i] >> 4]; out[2 * i + 1] = digits[in[i] & 15]; }
  out[2 * n] = 0;
}

/** The hash state after `at` bytes from the line's "state", checked against `at`; 0, or -1. */
static int state_from (const char *line, SHA256_CTX *sha, uint64_t at) {
  const char *p = strstr(line, "\"state\":\"");
  if (p == NULL) return -1;
  p += 9;
  unsigned char *raw = (unsigned char *)sha;
  for (size_t i = 0; i < sizeof *sha; i++) {
    int v = 0;
    for (int k = 0; k < 2; k++) {
      char c = p[2 * i + (size_t)k];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    raw[i] = (unsigned char)v;
  }
  if (p[2 * sizeof *sha] != '"') return -1;
  uint64_t bits = ((uint64_t)sha->Nh << 32) | sha->Nl;
  if (sha->md_len != SHA256_DIGEST_LENGTH || sha->num >= SHA256_CBLOCK || bits != at * 8) return -1;
  return 0;
}

/** Hashes the file's bytes from `from` to `at` into the state; 0, or an errno value. */
static int hash_file (struct transfer *t, uint64_t from, uint64_t at) {
  off_t pos = (off_t)from;
  while ((uint64_t)pos < at) {
    size_t want = at - (uint64_t)pos > RECV_BUFFER ? RECV_BUFFER : (size_t)(at - (uint64_t)pos);
    ssize_t n = pread(t->file, t->rx->buf, want, pos);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return ENODATA;
    SHA256_Update(&t->rx->sha, t->rx->buf, (size_t)n);
    pos += n;
  }
  return 0;
}

void receive_finish (struct transfer *t, int err) {
  char state[2 * sizeof(SHA256_CTX) + 1], digest[2 * SHA256_DIGEST_LENGTH + 1], line[2 * sizeof(SHA256_CTX) + 256];
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256_CTX copy = t->rx->sha;
  hex((const unsigned char *)&t->rx->sha, sizeof t->rx->sha, state);
  SHA256_Final(md, &copy);
  hex(md, sizeof md, digest);
  int n = snprintf(line, sizeof line, "{\"id\":%" PRIu64 ",\"received\":%" PRIu64 ",\"state\":\"%s\",\"digest\":\"%s\"", t->id, t->sent, state, digest);
  if (err != 0) n += snprintf(line + n, sizeof line - (size_t)n, ",\"error\":\"%s\"", errno_name(err));
  snprintf(line + n, sizeof line - (size_t)n, "}\n");
  free(t->rx->buf);
  free(t->rx);
  t->rx = NULL;
  drop_transfer(t);
  say(line);
}

/** A failure before the state is known: nothing was received. */
static void refuse (struct transfer *t, int err) {
  SHA256_Init(&t->rx->sha);
  receive_finish(t, err);
}

/** Asks for a wake-up once RECV_LOWAT bytes (or the body's rest) have arrived. */
static void set_lowat (struct transfer *t) {
  uint64_t rest = t->rx->chunked ? (t->rx->phase == DATA ? t->rx->chunk : 1) : t->left;
  int want = rest < RECV_LOWAT ? (int)rest : RECV_LOWAT;
  if (want < 1) want = 1;
  if (want == t->rx->lowat) return;
  t->rx->lowat = want;
  setsockopt(t->sock, SOL_SOCKET, SO_RCVLOWAT, &want, sizeof want); /* best effort: without it, more wake-ups */
}

void receive_start (const char *line, int sock) {
  int64_t id = number(line, "\"id\":"), at = number(line, "\"at\":"), hashed = number(line, "\"hashed\":"), length = number(line, "\"length\":"), idle = number(line, "\"idle\":");
  char name[128];
  struct transfer *t = new_transfer(id < 0 ? 0 : (uint64_t)id, sock);
  t->rx = calloc(1, sizeof *t->rx);
  if (t->rx == NULL || (t->rx->buf = malloc(RECV_BUFFER)) == NULL) exit(1);
  if (id < 0 || at < 0 || length <= 0 || idle <= 0 || name_after(line, "\"recv\":\"", 0, name, sizeof name) < 0) { refuse(t, EINVAL); return; }
  t->file = openat(ingestdir, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (t->file < 0) { refuse(t, errno); return; }
  struct stat st;
  if (fstat(t->file, &st) < 0) { refuse(t, errno); return; }
  if (!S_ISREG(st.st_mode) || st.st_size != at) { refuse(t, EINVAL); return; }
  if (hashed < 0 || hashed > at) { refuse(t, EINVAL); return; }
  if (strstr(line, "\"state\":\"") != NULL) {
    if (state_from(line, &t->rx->sha, (uint64_t)hashed) < 0) { refuse(t, EINVAL); return; }
  } else {
    if (hashed != 0) { refuse(t, EINVAL); return; }
    SHA256_Init(&t->rx->sha);
  }
  int err = hash_file(t, (uint64_t)hashed, (uint64_t)at);
  if (err != 0) { refuse(t, err); return; }
  if (strstr(line, "\"chunked\":1") != NULL) {
    int64_t phase = number(line, "\"phase\":"), chunk = number(line, "\"chunk\":");
    t->rx->chunked = 1;
    if (phase == 0) t->rx->phase = SIZE;
    else if (phase == 1 && chunk > 0) { t->rx->phase = DATA; t->rx->chunk = (uint64_t)chunk; }
    else if (phase == 2) t->rx->phase = DATA_CR;
    else if (phase == 3) t->rx->phase = DATA_LF;
    else { refuse(t, EINVAL); return; }
  }
  t->pos = (off_t)at;
  t->rx->flushed = (off_t)at;
  t->left = (uint64_t)length;
  t->rx->idle_ms = idle;
  t->rx->deadline = now_ms() + idle;
  struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = t };
  if (epoll_ctl(ep, EPOLL_CTL_ADD, sock, &ev) < 0) { receive_finish(t, errno); return; }
  set_lowat(t);
  receive_pump(t);
}

/** Writes, then hashes, what was read; 0, or an errno value (the bytes written before it are counted). */
static int append (struct transfer *t, size_t n) {
  struct receive *r = t->rx;
  size_t off = 0;
  while (off < n) {
    ssize_t w = pwrite(t->file, r->buf + off, n - off, t->pos);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : EIO;
    SHA256_Update(&r->sha, r->buf + off, (size_t)w);
    off += (size_t)w;
    t->pos += w;
    t->sent += (uint64_t)w;
    t->left -= (uint64_t)w;
  }
  if (t->pos - r->flushed >= FLUSH_EVERY) {
    sync_file_range(t->file, r->flushed, t->pos - r->flushed, SYNC_FILE_RANGE_WRITE); /* best effort: the commit syncs */
    r->flushed = t->pos;
  }
  return 0;
}

static int hexval (unsigned char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/**
 * Decodes `n` bytes of chunked framing in r->buf, moving the data bytes to the buffer's start (never ahead of where
 * they are read); sets *out to how many. 0, or EPROTO at a framing error (the data before it is still in *out).
 */
static int dechunk (struct receive *r, size_t n, size_t *out) {
  unsigned char *b = r->buf;
  size_t i = 0, o = 0;
  while (i < n && r->phase != DONE) {
    unsigned char c = b[i];
    switch (r->phase) {
      case DATA: {
        size_t k = n - i < r->chunk ? n - i : (size_t)r->chunk;
        memmove(b + o, b + i, k);
        o += k; i += k; r->chunk -= k;
        if (r->chunk == 0) r->phase = DATA_CR;
        continue;
      }
      case SIZE: {
        int d = hexval(c);
        if (d >= 0) {
          if (r->chunk > (UINT64_MAX >> 4)) { *out = o; return EPROTO; }
          r->chunk = r->chunk * 16 + (uint64_t)d; r->digits++;
        } else if (r->digits > 0 && c == ';') { r->phase = EXT; r->skipped = 0; }
        else if (r->digits > 0 && c == '\r') r->phase = SIZE_LF;
        else { *out = o; return EPROTO; }
        break;
      }
      case EXT:
        if (c == '\r') r->phase = SIZE_LF;
        else if (c == '\n' || ++r->skipped > LINE_SKIP_MAX) { *out = o; return EPROTO; }
        break;
      case SIZE_LF:
        if (c != '\n') { *out = o; return EPROTO; }
        r->digits = 0;
        r->phase = r->chunk == 0 ? TRAILER : DATA;
        break;
      case DATA_CR: if (c != '\r') { *out = o; return EPROTO; } r->phase = DATA_LF; break;
      case DATA_LF: if (c != '\n') { *out = o; return EPROTO; } r->phase = SIZE; r->chunk = 0; r->digits = 0; break;
      case TRAILER:
        if (c == '\r') r->phase = END_LF;
        else if (c == '\n') { *out = o; return EPROTO; }
        else { r->phase = TRAILER_LINE; r->skipped = 1; }
        break;
      case TRAILER_LINE:
        if (c == '\r') r->phase = TRAILER_LF;
        else if (c == '\n' || ++r->skipped > LINE_SKIP_MAX) { *out = o; return EPROTO; }
        break;
      case TRAILER_LF: if (c != '\n') { *out = o; return EPROTO; } r->phase = TRAILER; break;
      case END_LF: if (c != '\n') { *out = o; return EPROTO; } r->phase = DONE; break;
      case DONE: break;
    }
    i++;
  }
  *out = o;
  return 0;
}

/** receive_pump for a chunked body. */
static void pump_chunked (struct transfer *t) {
  struct receive *r = t->rx;
  size_t step = 0;
  while (step < RECV_STEP) {
    ssize_t n = read(t->sock, r->buf, RECV_BUFFER);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) { receive_finish(t, n == 0 ? ENODATA : errno); return; }
    r->deadline = now_ms() + r->idle_ms;
    size_t data = 0;
    int bad = dechunk(r, (size_t)n, &data);
    int over = data > t->left;
    int err = append(t, over ? (size_t)t->left : data);
    if (err != 0) { receive_finish(t, err); return; }
    if (over) { receive_finish(t, EFBIG); return; }
    if (bad != 0) { receive_finish(t, bad); return; }
    if (r->phase == DONE) { receive_finish(t, 0); return; }
    step += (size_t)n;
    if ((size_t)n < RECV_BUFFER) break; /* drained */
  }
  set_lowat(t);
}

void receive_pump (struct transfer *t) {
  if (t->rx->chunked) { pump_chunked(t); return; }
  struct receive *r = t->rx;
  size_t step = 0;
  while (t->left > 0 && step < RECV_STEP) {
    size_t want = t->left > RECV_BUFFER ? RECV_BUFFER : (size_t)t->left;
    ssize_t n = read(t->sock, r->buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return; /* level-triggered: EPOLLIN calls again */
    if (n <= 0) { receive_finish(t, n == 0 ? ENODATA : errno); return; } /* 0: the client ended the body early */
    r->deadline = now_ms() + r->idle_ms;
    int err = append(t, (size_t)n);
    if (err != 0) { receive_finish(t, err); return; }
    step += (size_t)n;
    if ((size_t)n < want) break; /* drained: the next wake-up reads again, not an EAGAIN now */
  }
  if (t->left == 0) { receive_finish(t, 0); return; }
  set_lowat(t);
}

static int still_there (const struct transfer *t) {
  for (const struct transfer *x = transfers; x != NULL; x = x->next) if (x == t) return 1;
  return 0;
}

int receive_expire (void) {
  int64_t now = now_ms(), next = -1;
  for (struct transfer *t = transfers, *after; t != NULL; t = after) {
    after = t->next;
    if (t->rx == NULL) continue;
    if (t->rx->deadline <= now) {
      /* bytes below the low-water mark are progress too: a slow client is not an idle one */
      int queued = 0;
      if (ioctl(t->sock, FIONREAD, &queued) == 0 && queued > 0) { receive_pump(t); if (!still_there(t)) continue; }
      else { receive_finish(t, ETIMEDOUT); continue; }
    }
    if (next < 0 || t->rx->deadline - now < next) next = t->rx->deadline - now;
  }
  return next < 0 ? -1 : (int)(next > 60000 ? 60000 : next);
}

#endif
