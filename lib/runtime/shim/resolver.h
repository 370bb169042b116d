/*
 * The container's embedded DNS resolver, kept by its monitor (resolver.c, resolver-nat.c).
 *
 * The monitor opens a UDP and a TCP socket on 127.0.0.11 inside the container's network namespace (setns in,
 * socket, setns back) and makes port 53 of that address reach them (a DNAT rule of its own in the namespace, on
 * ports the kernel picked, so a program of the container can still bind port 53 itself, as with dockerd; without
 * nf_tables the sockets bind 127.0.0.11:53). Nothing outside the namespace can reach them.
 *
 * Queries go to the daemon over attach.sock: a client that sends the message MSG_RESOLVER (type 4, any payload,
 * normally empty) becomes the resolver's peer and from then on speaks these frames, [type u8][length u32 BE]
 * [payload], both ways:
 *
 *   daemon -> monitor
 *     'S' START      payload: the namespace's path. Opens the sockets there unless they are open (--resolver did it
 *                    at start); answered by 'R'.
 *     'U' UPSTREAMS  payload: up to 3 lines "h|c ADDRESS PORT\n"; h: reached from the monitor's own (the host's)
 *                    namespace, c: from the container's. Replaces the list the monitor forwards to.
 *     'A' ANSWER     payload: [token u32 BE][DNS message]: sent to the client as it is (over TCP with its length).
 *     'F' FORWARD    payload: [token u32 BE]: the monitor asks the upstreams in turn (a SERVFAIL, REFUSED, error or
 *                    4 s without a reply moves to the next) and relays the first other reply; none: SERVFAIL.
 *   monitor -> daemon
 *     'Q' QUERY      payload: [token u32 BE][transport u8: 0 UDP, 1 TCP][DNS message as the client sent it]
 *     'R' STARTED    payload: empty on success, else the error's text.
 *
 * A new peer replaces the previous one and is sent every query still waiting for the daemon (a daemon restart
 * loses none); a query waits for the daemon at most 10 s, then the client gets SERVFAIL.
 */
#ifndef BERTH_RESOLVER_H
#define BERTH_RESOLVER_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* attach.sock message type that hands the connection to the resolver. */
#define MSG_RESOLVER 4
/* The most pollfds the resolver adds to the monitor's loop. */
#define RESOLVER_MAX_FDS 64

/* --resolver NETNS: opens the resolver in that namespace now. 0, or -1 with a message in err. */
int resolver_open(const char *netns, char *err, size_t cap);

/* Takes over an attach.sock connection that sent MSG_RESOLVER; `rest` are bytes read after that message. */
void resolver_take_peer(int fd, const uint8_t *rest, size_t n);

/* The monitor's loop: adds the resolver's fds (at most cap) and returns how many. */
int resolver_poll_fill(struct pollfd *pfd, int cap);

/* The monitor's loop: handles the revents of the fds resolver_poll_fill added (same order, n of them). */
void resolver_poll_handle(const struct pollfd *pfd, int n);

/* Milliseconds until the resolver's next deadline, or -1. */
int resolver_timeout_ms(void);

/* Closes everything (the container has exited). */
void resolver_close(void);

/* resolver-nat.c: in the current network namespace, DNAT 127.0.0.11:53 (UDP, TCP) to the ports given. 0 or -1. */
int resolver_nat(uint16_t udp_port, uint16_t tcp_port, char *err, size_t cap);

#endif
