/*
 * What blob-sender.c (the helper's channel, its loop and blob sends) and blob-receiver.c (upload bodies received
 * into the ingest area) share: the transfers in flight, one per handed-over connection, and the channel to Node.
 */
#ifndef BERTH_BLOB_HELPER_H
#define BERTH_BLOB_HELPER_H
#include <stdint.h>
#include <sys/types.h>

struct receive; /* blob-receiver.c's part of a transfer that receives */

struct transfer {
  uint64_t id;
  int sock;
  int file;
  off_t pos;      /* the file's offset of the next byte sent or written */
  uint64_t left;  /* bytes still to send or to receive */
  uint64_t sent;  /* bytes sent (a send) or received, written and hashed (a receive) */
  struct receive *rx; /* NULL for a send */
  struct transfer *next;
};

extern int ep;
extern struct transfer *transfers;

/** Writes a whole line to Node. */
void say (const char *line);
/** A new transfer on `sock`, first in the list. */
struct transfer *new_transfer (uint64_t id, int sock);
/** Takes a transfer out of the loop and the list, closes its descriptors and frees it. */
void drop_transfer (struct transfer *t);
/** The unsigned number after `key` in line, or -1. */
int64_t number (const char *line, const char *key);
/** The string after `key` (e.g. "\"file\":\""): [a-z0-9/] only, with `slashes` allowed or not; no empty or dot
 * segment; 0, or -1 when absent or not such a name. */
int name_after (const char *line, const char *key, int slashes, char *out, size_t room);
/** A name for an errno value, as Node's messages spell them. */
const char *errno_name (int err);

/* blob-receiver.c */
/** Whether this build receives (it has a sha256); `ingest` is the directory upload files are in. */
int receiver_init (const char *ingest);
/** A "recv" request with the connection's descriptor. */
void receive_start (const char *line, int sock);
/** The connection is readable (or closed). */
void receive_pump (struct transfer *t);
/** Ends a receive with err (0: done), reporting what was received. */
void receive_finish (struct transfer *t, int err);
/** Milliseconds until the first receive's idle deadline (-1: none); ends the receives whose deadline passed. */
int receive_expire (void);

#endif
