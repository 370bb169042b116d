/*
 * What the parts of berth-shim share (one program built from every .c file in
 * this folder; berth-shim.c has main() and calls the other parts at fixed
 * points, its hooks).
 */
#ifndef BERTH_SHIM_H
#define BERTH_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- berth-shim.c */

/* A diagnostic line on stderr (/dev/null under the daemon). */
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Reports the failure on the sync fd while it is open, undoes the start's setup, exits with status 1. */
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ---- netns.c: the container's network namespace
 *
 * --netns FILE   the monitor makes a new network namespace with loopback up
 *                and bind-mounts it on FILE (created 0444 if missing)
 *                before the runtime runs; the runtime's spec joins FILE.
 * --veth SPEC    (repeatable, needs --netns) a veth pair wired before the
 *                runtime runs: SPEC is comma-separated key=value pairs:
 *                host=NAME (host end), peer=NAME (container end),
 *                bridge=NAME (the host end's master), mac=XX:XX:XX:XX:XX:XX,
 *                mtu=N (0 or absent: the kernel's), addr=CIDR (repeatable:
 *                IPv4 or IPv6), gw=IP (repeatable: a default route via IP,
 *                IPv4 or IPv6). Both ends are up; the host end is on its bridge.
 * When the process has exited, the namespace's mount and FILE go before
 * exit.json is written; the host ends of the veths are deleted once the exit
 * is reported (the runtime's record deleted first). A failed start undoes
 * all of it before the failure is reported.
 */

/* --prepared (prepared.c): makes a namespace ahead of the command line; netns_setup() uses it, or lets it go. */
void netns_prepare(void);
/* Takes --netns and --veth (value in `value`); false for any other option. */
bool netns_option(const char *name, const char *value);
/* Before the runtime runs: the namespace, its mount, loopback and the veths. Fails the start on error. */
void netns_setup(void);
/* A failed start (from fail()): what netns_setup made is removed. */
void netns_abort(void);
/* The process has exited: the namespace's mount and file go (before exit.json). */
void netns_detach(void);
/* After the exit is reported: the host ends of the veths are deleted (their peers go with them). */
void netns_remove_links(void);
/* The container's network namespace (an O_CLOEXEC fd) between netns_setup() and netns_detach(); -1 without --netns. */
int shim_netns_fd(void);
/* A socket made inside the container's network namespace (for a service the monitor runs there); -1 (errno set) on failure or without --netns. */
int shim_netns_socket(int domain, int type, int protocol);

/* ---- prepared.c
 *
 * `berth-shim --prepared SOCKET` (nothing else): a monitor started ahead of
 * need. It makes a network namespace (netns_prepare), connects to the daemon's
 * SOCKET, writes `R <pid>\n`, and reads its command line (u32 BE length, then
 * the arguments each ended by NUL); then it runs as if started with that
 * command line, the connection as its sync fd, and forks the next prepared
 * monitor once it has sent its sync line (prepared_next).
 * EOF before a command line: it exits.
 */
void prepared_wait(int *argc, char ***argv);
/* After the sync line (a monitor that came prepared): forks the next prepared monitor. */
void prepared_next(void);

/* ---- remove-tree.c: --remove-tree DIR (repeatable, at most 4; container mode)
 *
 * An auto-removed container's trees (its writable layer, the overlay's work and
 * mount directories), deleted after the exit once the root filesystem is
 * unmounted: no link followed, no mount crossed; what cannot be removed is left
 * for the daemon.
 */
/* Takes a --remove-tree value; false when it is not an absolute path or there are too many. */
bool remove_tree_option(const char *value);
bool remove_tree_keep_option(const char *value);
bool remove_tree_wanted(void);
void remove_trees(void);

/* ---- start-files.c: --files N (a prepared monitor's command line only)
 *
 * The start's bundle files follow the command line on the daemon's connection
 * (N bytes of [u32 BE mode][u32 BE path length][path][u32 BE data length][data]
 * records); the monitor writes them (O_NOFOLLOW, directly in --bundle) before
 * the runtime runs.
 */
/* N from a --files value; 0 when it is not a length the monitor takes. */
size_t start_files_length(const char *value);
/* prepared.c: the records read off the connection (malloc'd; taken over). */
void start_files_take(uint8_t *data, size_t len);
/* Writes them (nothing without --files); fails the start on error. */
void start_files_write(const char *bundle);

/* ---- exec-wait.c */

/* Waits (at most 1 s) until `pid`, the runtime's init, executes the command (or ends): a start is reported then. */
void wait_process_exec(pid_t pid);

#endif
