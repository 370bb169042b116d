/*
 * berth-blob-sender: serves registry blob bodies with sendfile(2), which Node has no way to call for a socket, and
 * receives large upload bodies straight from their connection (blob-receiver.c).
 *
 * `berth registry` starts one of these (lib/registry/storage/blob-sender.ts) the first time it serves a large blob
 * or receives a large upload body, as a Node child process with an IPC channel (the fd in NODE_CHANNEL_FD, JSON
 * lines, one per message), and keeps it until it closes. Its first line says what it can do:
 * {"hello":1,"receive":1} (0 when built without a sha256). For a send, Node writes the reply's headers itself,
 * then hands over the connection's descriptor with `child.send(msg, socket._handle)`: the line
 *
 *     {"cmd":"NODE_HANDLE","type":"net.Native","msg":{"id":N,"file":"sha256/<hex>","start":S,"length":L}}
 *
 * arrives with the descriptor attached (SCM_RIGHTS). As Node's protocol asks, every NODE_HANDLE is acknowledged
 * with {"cmd":"NODE_HANDLE_ACK"} (Node sends no further descriptor until then). The helper sends L bytes of the
 * file (relative to the blob directory given as its first argument; never a path with a dot segment) from S to the
 * socket, then answers {"id":N,"sent":X} or {"id":N,"sent":X,"error":"<errno name>"} and closes its copy of the
 * descriptor. Node's side keeps its own copy and writes nothing to the socket meanwhile. A message with "recv"
 * instead of "file" is an upload body to receive (blob-receiver.c says how).
 *
 * {"abort":N} from Node drops transfer N (the reply was closed: client gone, registry closing); it is answered
 * like a failure. Many transfers run at once, each on its own descriptor, driven by one epoll loop; a socket that
 * is full waits for EPOLLOUT (the client's pace is the transfer's pace, as when Node writes). End of the channel
 * (the registry exited or closed it) ends the helper. The sockets are non-blocking (the file description is
 * Node's): their flags are never changed here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>
#include "blob-helper.h"

#define LINE_MAX_BYTES 4096
#define PENDING_FDS 8
/** sendfile is called for at most this much at a time, so one transfer never starves the others. */
#define SEND_STEP (4 * 1024 * 1024)

static int ipc = -1;
int ep = -1;
static int blobdir = -1;
struct transfer *transfers = NULL;
static int pending[PENDING_FDS];
static int npending = 0;

/** Writes a whole line to the channel (blocking briefly if it is full: lines are tiny, Node reads them at once). */
void say (const char *line) {
  size_t len = strlen(line), off = 0;
  while (off < len) {
    ssize_t n = send(ipc, line + off, len - off, MSG_NOSIGNAL);
    if (n > 0) { off += (size_t)n; continue; }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      struct epoll_event ev;
      int w = epoll_create1(EPOLL_CLOEXEC);
      if (w < 0) exit(1);
      ev.events = EPOLLOUT; ev.data.ptr = NULL;
      epoll_ctl(w, EPOLL_CTL_ADD, ipc, &ev);
      epoll_wait(w, &ev, 1, 1000);
      close(w);
      continue;
    }
    exit(0); /* the registry is gone */
  }
}

const char *errno_name (int err) {
  const char *n = strerrorname_np(err);
  return n != NULL ? n : "EIO";
}

struct transfer *new_transfer (uint64_t id, int sock) {
  struct transfer *t = calloc(1, sizeof *t);
  if (t == NULL) exit(1);
  t->id = id;
  t->sock = sock;
  t->file = -1;
  t->next = transfers;
  transfers = t;
  return t;
}

void drop_transfer (struct transfer *t) {
  epoll_ctl(ep, EPOLL_CTL_DEL, t->sock, NULL);
  close(t->sock);
  if (t->file >= 0) close(t->file);
  struct transfer **p = &transfers;
  while (*p != t) p = &(*p)->next;
  *p = t->next;
  free(t);
}

static void finish (struct transfer *t, int err) {
  char line[160];
  if (err == 0) snprintf(line, sizeof line, "{\"id\":%" PRIu64 ",\"sent\":%" PRIu64 "}\n", t->id, t->sent);
  else snprintf(line, sizeof line, "{\"id\":%" PRIu64 ",\"sent\":%" PRIu64 ",\"error\":\"%s\"}\n", t->id, t->sent, errno_name(err));
  drop_transfer(t);
  say(line);
}

/** Sends until the socket is full, the range is done or something fails. */
static void pump (struct transfer *t) {
  while (t->left > 0) {
    size_t step = t->left > SEND_STEP ? SEND_STEP : (size_t)t->left;
    ssize_t n = sendfile(t->sock, t->file, &t->pos, step);
    if (n > 0) { t->left -= (uint64_t)n; t->sent += (uint64_t)n; continue; }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return; /* EPOLLOUT (edge-triggered) calls again */
    finish(t, n == 0 ? ENODATA : errno); /* 0: the file is shorter than the range */
    return;
  }
  finish(t, 0);
}

int64_t number (const char *line, const char *key) {
  const char *p = strstr(line, key);
  if (p == NULL) return -1;
  p += strlen(key);
  if (*p < '0' || *p > '9') return -1;
  int64_t v = 0;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (v > (INT64_MAX - 9) / 10) return -1;
    v = v * 10 + (*p - '0');
  }
  return v;
}

int name_after (const char *line, const char *key, int slashes, char *out, size_t room) {
  const char *p = strstr(line, key);
  if (p == NULL) return -1;
  p += strlen(key);
  size_t n = 0;
  for (; *p != '"'; p++) {
    char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '/' && slashes))) return -1;
    if (n + 1 >= room) return -1;
    out[n++] = c;
  }
  out[n] = 0;
  if (n == 0 || out[0] == '/' || out[n - 1] == '/' || strstr(out, "//") != NULL) return -1;
  return 0;
}

static void start (const char *line, int sock) {
  int64_t id = number(line, "\"id\":"), startpos = number(line, "\"start\":"), length = number(line, "\"length\":");
  char name[256];
  struct transfer *t = new_transfer(id < 0 ? 0 : (uint64_t)id, sock);
  if (id < 0 || startpos < 0 || length < 0 || name_after(line, "\"file\":\"", 1, name, sizeof name) < 0) { finish(t, EINVAL); return; }
  t->file = openat(blobdir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (t->file < 0) { finish(t, errno); return; }
  t->pos = (off_t)startpos;
  t->left = (uint64_t)length;
  struct epoll_event ev = { .events = EPOLLOUT | EPOLLET, .data.ptr = t };
  if (epoll_ctl(ep, EPOLL_CTL_ADD, sock, &ev) < 0) { finish(t, errno); return; }
  pump(t);
}

static void handle_line (const char *line) {
  if (strstr(line, "\"cmd\":\"NODE_HANDLE\"") != NULL) {
    say("{\"cmd\":\"NODE_HANDLE_ACK\"}\n");
    if (npending == 0) return; /* no descriptor came with it: nothing to send to */
    int sock = pending[0];
    memmove(pending, pending + 1, sizeof pending[0] * (size_t)--npending);
    if (strstr(line, "\"recv\":\"") != NULL) receive_start(line, sock);
    else start(line, sock);
    return;
  }
  int64_t id = number(line, "\"abort\":");
  if (id < 0) return; /* anything else Node may say */
  for (struct transfer *t = transfers; t != NULL; t = t->next) {
    if (t->id != (uint64_t)id) continue;
    if (t->rx != NULL) receive_finish(t, ECANCELED); else finish(t, ECANCELED);
    return;
  }
}

static char buf[LINE_MAX_BYTES * 2];
static size_t used = 0;

/** Reads what the channel has (lines and descriptors); false at its end. */
static int read_channel (void) {
  for (;;) {
    char cbuf[CMSG_SPACE(sizeof(int) * PENDING_FDS)];
    struct iovec iov = { .iov_base = buf + used, .iov_len = sizeof buf - used };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
    ssize_t n = recvmsg(ipc, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return 1;
    if (n <= 0) return 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      int *fds = (int *)CMSG_DATA(c);
      for (size_t i = 0; i < count; i++) {
        if (npending < PENDING_FDS) pending[npending++] = fds[i];
        else close(fds[i]);
      }
    }
    used += (size_t)n;
    char *p = buf, *nl;
    while ((nl = memchr(p, '\n', used - (size_t)(p - buf))) != NULL) {
      *nl = 0;
      handle_line(p);
      p = nl + 1;
    }
    used -= (size_t)(p - buf);
    memmove(buf, p, used);
    if (used >= LINE_MAX_BYTES) return 0; /* not Node speaking */
  }
}

int main (int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--version") == 0) { printf("berth-blob-sender %s\n", BERTH_VERSION); return 0; }
  const char *fd = getenv("NODE_CHANNEL_FD");
  if ((argc != 2 && argc != 3) || fd == NULL) {
    fprintf(stderr, "usage: berth-blob-sender BLOB-DIR [INGEST-DIR] (started by berth registry, with a Node IPC channel)\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  ipc = atoi(fd);
  blobdir = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ep = epoll_create1(EPOLL_CLOEXEC);
  if (blobdir < 0 || ep < 0) { perror("berth-blob-sender"); return 1; }
  fcntl(ipc, F_SETFD, FD_CLOEXEC);
  struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
  if (epoll_ctl(ep, EPOLL_CTL_ADD, ipc, &ev) < 0) { perror("berth-blob-sender"); return 1; }
  say(argc == 3 && receiver_init(argv[2]) ? "{\"hello\":1,\"receive\":1}\n" : "{\"hello\":1,\"receive\":0}\n");
  struct epoll_event evs[32];
  for (;;) {
    int n = epoll_wait(ep, evs, 32, receive_expire());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return 1;
    for (int i = 0; i < n; i++) {
      struct transfer *t = evs[i].data.ptr;
      if (t == NULL) {
        if (!read_channel()) return 0;
        continue;
      }
      /* a transfer finished earlier in this batch (an abort) is no longer in the list */
      struct transfer *x = transfers;
      while (x != NULL && x != t) x = x->next;
      if (x == NULL) continue;
      if (t->rx != NULL) receive_pump(t); else pump(t);
    }
  }
}
