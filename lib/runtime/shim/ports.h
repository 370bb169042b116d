/*
 * ports.h — the container's published ports, held and served by its monitor (ports.c).
 *
 * Command line (container mode, repeatable):
 *   --publish PROTO,HOST_IP,HOST_PORT,TARGET_IP,TARGET_PORT
 *     PROTO tcp or udp; addresses IPv4 or IPv6 in text form. The monitor binds HOST_IP:HOST_PORT (SO_REUSEADDR for
 *     TCP, as dockerd's proxy) before it runs the runtime: a port that cannot be bound fails the start with
 *     "bind PROTO HOST_IP:HOST_PORT: <reason>" on the sync line. It then forks one relay for all the container's
 *     ports, which runs as uid/gid 65534 with no capabilities and no_new_privs, keeps no other monitor file open, and
 *     relays TCP connections (splice through two pipes per connection: at most 64 KiB in flight each way) and UDP
 *     datagrams (one connected socket per client address, idle after 90 s) to TARGET_IP:TARGET_PORT. Bounds: 1024 TCP
 *     connections (further ones wait in the listen backlog) and 1024 UDP flows (the least recently used goes) per
 *     container. The relay dies with the monitor (PR_SET_PDEATHSIG); the monitor stops it, and closes its own copies
 *     of the ports, as soon as the container's process has exited: the ports are free before exit.json is written.
 */
#ifndef BERTH_SHIM_PORTS_H
#define BERTH_SHIM_PORTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The monitor's command line, which the relay (a fork) overwrites with its own name: `berth-ports` in ps and pgrep. */
void ports_cmdline(int argc, char **argv);

/* One --publish value; -1 when it is malformed or there are too many. */
int ports_parse(const char *spec);

/* Binds every published port. -1 with a message in err when one cannot be bound (none is held then). */
int ports_bind(char *err, size_t cap);

/* Forks the relay serving the bound ports (nothing to do without ports). -1 with a message in err. */
int ports_serve(char *err, size_t cap);

/* The monitor reaped pid: true when it was the relay (started again, a few times, if it died on its own). */
bool ports_reaped(pid_t pid, int status);

/* The container's process exited: the relay is killed and reaped, the monitor's copies closed; the ports are free. */
void ports_stop(void);

#endif
