/*
 * Long because it is one job whole: the namespace's options, its making (made
 * ahead, or now), its links, addresses and routes, and its removal.
 *
 * The container's network namespace, made by the monitor (see shim.h):
 * unshare(2) and a bind mount(2) for the namespace, routing netlink for the
 * links, addresses and routes. No process is spawned for any of it.
 */
#define _GNU_SOURCE
#include "shim.h"
#include "netlink.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/veth.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_VETHS 16
#define MAX_ADDRS 8
#define MAX_GWS 2
#define LOOPBACK_IFINDEX 1

struct ip_addr {
	int family; /* AF_INET or AF_INET6 */
	unsigned char bytes[16];
	int prefix; /* -1 for a gateway */
};

struct veth {
	char host[IFNAMSIZ], peer[IFNAMSIZ], bridge[IFNAMSIZ];
	unsigned char mac[6];
	bool has_mac;
	unsigned mtu;
	struct ip_addr addrs[MAX_ADDRS];
	int naddrs;
	struct ip_addr gws[MAX_GWS];
	int ngws;
	bool created;
};

static const char *ns_path;
static struct veth veths[MAX_VETHS];
static int nveths;
static int ns_fd = -1, host_ns_fd = -1;
static bool ns_file_made, ns_mounted, in_container_ns;
/* netns_prepare() made the namespace (ns_fd, loopback up) and a netlink socket in it, before the command line came */
static bool ns_prepared;
static int nl_prepared = -1;

/* ------------------------------------------------------------ options */

static bool copy_name(char *dst, const char *src, size_t len)
{
	if (len == 0 || len >= IFNAMSIZ)
		return false;
	memcpy(dst, src, len);
	dst[len] = '\0';
	return true;
}

static bool parse_ip(const char *s, size_t len, struct ip_addr *out, bool with_prefix)
{
	char buf[INET6_ADDRSTRLEN + 8];
	if (len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	char *slash = strchr(buf, '/');
	out->prefix = -1;
	if (with_prefix) {
		if (!slash)
			return false;
		*slash = '\0';
		char *end;
		long p = strtol(slash + 1, &end, 10);
		if (*end != '\0' || end == slash + 1 || p < 0)
			return false;
		out->prefix = (int)p;
	} else if (slash) {
		return false;
	}
	out->family = strchr(buf, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(out->family, buf, out->bytes) != 1)
		return false;
	return out->prefix <= (out->family == AF_INET ? 32 : 128);
}

static bool parse_mac(const char *s, size_t len, unsigned char mac[6])
{
	char buf[18];
	if (len != 17)
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	unsigned v[6];
	if (sscanf(buf, "%2x:%2x:%2x:%2x:%2x:%2x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
		return false;
	for (int i = 0; i < 6; i++)
		mac[i] = (unsigned char)v[i];
	return true;
}

static bool parse_veth(const char *spec, struct veth *v)
{
	memset(v, 0, sizeof(*v));
	for (const char *p = spec; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		if (!eq)
			return false;
		size_t klen = (size_t)(eq - p), vlen = len - klen - 1;
		const char *val = eq + 1;
#define KEY(k) (klen == sizeof(k) - 1 && memcmp(p, k, klen) == 0)
		bool ok;
		if (KEY("host"))
			ok = copy_name(v->host, val, vlen);
		else if (KEY("peer"))
			ok = copy_name(v->peer, val, vlen);
		else if (KEY("bridge"))
			ok = copy_name(v->bridge, val, vlen);
		else if (KEY("mac"))
			ok = v->has_mac = parse_mac(val, vlen, v->mac);
		else if (KEY("mtu")) {
			char *e;
			unsigned long m = strtoul(val, &e, 10);
			ok = e == val + vlen && vlen > 0 && m <= 65535;
			v->mtu = (unsigned)m;
		} else if (KEY("addr"))
			ok = v->naddrs < MAX_ADDRS && parse_ip(val, vlen, &v->addrs[v->naddrs++], true);
		else if (KEY("gw"))
			ok = v->ngws < MAX_GWS && parse_ip(val, vlen, &v->gws[v->ngws++], false);
		else
			ok = false;
#undef KEY
		if (!ok)
			return false;
		p = end ? end + 1 : p + len;
	}
	return v->host[0] && v->peer[0] && v->bridge[0];
}

bool netns_option(const char *name, const char *value)
{
	if (strcmp(name, "--netns") == 0) {
		ns_path = value;
		return true;
	}
	if (strcmp(name, "--veth") != 0)
		return false;
	if (nveths >= MAX_VETHS)
		fail("too many --veth options (at most %d)", MAX_VETHS);
	if (!parse_veth(value, &veths[nveths]))
		fail("invalid --veth %s", value);
	nveths++;
	return true;
}

/* -------------------------------------------------------------- links */

static const char *nl_error(int err)
{
	return strerror(-err);
}

static int set_link_up(int nl, int index)
{
	struct nl_req r;
	struct ifinfomsg *ifi = nl_begin(&r, RTM_NEWLINK, 0, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = index;
	ifi->ifi_flags = IFF_UP;
	ifi->ifi_change = IFF_UP;
	return nl_talk(nl, &r);
}

/* The pair: the host end up on its bridge, the peer in the container's namespace with its MAC. */
static int create_veth(int nl, const struct veth *v, int bridge_index)
{
	struct nl_req r;
	struct ifinfomsg *ifi = nl_begin(&r, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_flags = IFF_UP;
	ifi->ifi_change = IFF_UP;
	nl_put_str(&r, IFLA_IFNAME, v->host);
	if (v->mtu > 0)
		nl_put_u32(&r, IFLA_MTU, v->mtu);
	nl_put_u32(&r, IFLA_MASTER, (uint32_t)bridge_index);
	struct rtattr *info = nl_nest(&r, IFLA_LINKINFO);
	nl_put_str(&r, IFLA_INFO_KIND, "veth");
	struct rtattr *data = nl_nest(&r, IFLA_INFO_DATA);
	struct rtattr *peer = nl_nest(&r, VETH_INFO_PEER);
	/* (the peer is brought up once the pair exists: opening one end before the other is linked fails) */
	struct ifinfomsg *pifi = nl_put_raw(&r, sizeof(*pifi));
	if (pifi)
		pifi->ifi_family = AF_UNSPEC;
	nl_put_str(&r, IFLA_IFNAME, v->peer);
	nl_put_u32(&r, IFLA_NET_NS_FD, (uint32_t)ns_fd);
	if (v->mtu > 0)
		nl_put_u32(&r, IFLA_MTU, v->mtu);
	if (v->has_mac)
		nl_put(&r, IFLA_ADDRESS, v->mac, sizeof(v->mac));
	nl_nest_end(&r, peer);
	nl_nest_end(&r, data);
	nl_nest_end(&r, info);
	return nl_talk(nl, &r);
}

static int delete_link(int nl, const char *name)
{
	struct nl_req r;
	struct ifinfomsg *ifi = nl_begin(&r, RTM_DELLINK, 0, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	nl_put_str(&r, IFLA_IFNAME, name);
	return nl_talk(nl, &r);
}

static int add_address(int nl, int index, const struct ip_addr *a)
{
	size_t len = a->family == AF_INET ? 4 : 16;
	struct nl_req r;
	struct ifaddrmsg *ifa = nl_begin(&r, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE, sizeof(*ifa));
	ifa->ifa_family = (unsigned char)a->family;
	ifa->ifa_prefixlen = (unsigned char)a->prefix;
	ifa->ifa_index = (unsigned)index;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	/* an address of ours is unique on its network: no duplicate address detection delays it (as dockerd does) */
	if (a->family == AF_INET6)
		ifa->ifa_flags = IFA_F_NODAD;
	nl_put(&r, IFA_LOCAL, a->bytes, len);
	nl_put(&r, IFA_ADDRESS, a->bytes, len);
	if (a->family == AF_INET && a->prefix < 31) {
		uint32_t ip, mask = a->prefix == 0 ? 0 : htonl(~0u << (32 - a->prefix));
		memcpy(&ip, a->bytes, 4);
		uint32_t brd = ip | ~mask;
		nl_put(&r, IFA_BROADCAST, &brd, 4);
	}
	return nl_talk(nl, &r);
}

static int add_default_route(int nl, int index, const struct ip_addr *gw)
{
	struct nl_req r;
	struct rtmsg *rt = nl_begin(&r, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, sizeof(*rt));
	rt->rtm_family = (unsigned char)gw->family;
	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_BOOT;
	rt->rtm_scope = RT_SCOPE_UNIVERSE;
	rt->rtm_type = RTN_UNICAST;
	nl_put(&r, RTA_GATEWAY, gw->bytes, gw->family == AF_INET ? 4 : 16);
	nl_put_u32(&r, RTA_OIF, (uint32_t)index);
	return nl_talk(nl, &r);
}

/* ---------------------------------------------------------- namespace */

static void enter_host_ns(void)
{
	if (in_container_ns && setns(host_ns_fd, CLONE_NEWNET) == 0)
		in_container_ns = false;
}

static void wire(int nl_host, int nl_ct, struct veth *v)
{
	char ip[INET6_ADDRSTRLEN];
	int bridge = nl_link_index(nl_host, v->bridge);
	if (bridge < 0)
		fail("bridge %s: %s", v->bridge, nl_error(bridge));
	int err = create_veth(nl_host, v, bridge);
	if (err < 0)
		fail("create veth %s (peer %s) on %s: %s", v->host, v->peer, v->bridge, nl_error(err));
	v->created = true;
	int index = nl_link_index(nl_ct, v->peer);
	if (index < 0)
		fail("link %s in the container: %s", v->peer, nl_error(index));
	if ((err = set_link_up(nl_ct, index)) < 0)
		fail("link %s up: %s", v->peer, nl_error(err));
	for (int i = 0; i < v->naddrs; i++) {
		const struct ip_addr *a = &v->addrs[i];
		if ((err = add_address(nl_ct, index, a)) < 0)
			fail("address %s/%d on %s: %s", inet_ntop(a->family, a->bytes, ip, sizeof(ip)), a->prefix, v->peer, nl_error(err));
	}
	for (int i = 0; i < v->ngws; i++) {
		const struct ip_addr *g = &v->gws[i];
		if ((err = add_default_route(nl_ct, index, g)) < 0)
			fail("default route via %s on %s: %s", inet_ntop(g->family, g->bytes, ip, sizeof(ip)), v->peer, nl_error(err));
	}
}

void netns_prepare(void)
{
	host_ns_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (host_ns_fd < 0 || unshare(CLONE_NEWNET) < 0) {
		diag("prepare a network namespace: %s", strerror(errno));
		return; /* netns_setup() makes one when it is needed */
	}
	in_container_ns = true;
	ns_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	nl_prepared = nl_open();
	if (setns(host_ns_fd, CLONE_NEWNET) < 0)
		fail("setns (back to the host's network namespace): %s", strerror(errno));
	in_container_ns = false;
	int err = nl_prepared < 0 ? -errno : set_link_up(nl_prepared, LOOPBACK_IFINDEX);
	if (ns_fd < 0 || err < 0) {
		diag("prepare a network namespace: %s", strerror(ns_fd < 0 ? errno : -err));
		if (ns_fd >= 0)
			close(ns_fd);
		if (nl_prepared >= 0)
			close(nl_prepared);
		ns_fd = nl_prepared = -1;
		return;
	}
	ns_prepared = true;
}

/* The namespace bind-mounted on ns_path: the prepared one, or one made now (loopback up); returns a netlink socket in it. */
static int namespace_on_path(void)
{
	int fd = open(ns_path, O_RDONLY | O_CREAT | O_CLOEXEC, 0444);
	if (fd < 0)
		fail("create %s: %s", ns_path, strerror(errno));
	close(fd);
	ns_file_made = true;
	if (ns_prepared) {
		if (setns(ns_fd, CLONE_NEWNET) < 0)
			fail("setns (the prepared network namespace): %s", strerror(errno));
	} else if (unshare(CLONE_NEWNET) < 0) {
		fail("unshare(CLONE_NEWNET): %s", strerror(errno));
	}
	in_container_ns = true;
	if (mount("/proc/self/ns/net", ns_path, NULL, MS_BIND, NULL) < 0)
		fail("bind-mount the network namespace on %s: %s", ns_path, strerror(errno));
	ns_mounted = true;
	int nl_ct = nl_prepared;
	if (!ns_prepared) {
		ns_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		nl_ct = nl_open();
		if (ns_fd < 0 || nl_ct < 0)
			fail("network namespace: %s", strerror(errno));
	}
	if (setns(host_ns_fd, CLONE_NEWNET) < 0)
		fail("setns (back to the host's network namespace): %s", strerror(errno));
	in_container_ns = false;
	if (!ns_prepared) {
		int err = set_link_up(nl_ct, LOOPBACK_IFINDEX);
		if (err < 0)
			fail("loopback up: %s", nl_error(err));
	}
	ns_prepared = false;
	nl_prepared = -1;
	return nl_ct;
}

void netns_setup(void)
{
	if (!ns_path) {
		if (nveths > 0)
			fail("--veth needs --netns");
		if (ns_prepared) { /* not wanted (the host's network, another container's, an exec) */
			close(ns_fd);
			close(nl_prepared);
			ns_fd = nl_prepared = -1;
			ns_prepared = false;
		}
		return;
	}
	if (host_ns_fd < 0)
		host_ns_fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (host_ns_fd < 0)
		fail("open /proc/self/ns/net: %s", strerror(errno));
	int nl_ct = namespace_on_path();
	if (nveths > 0) {
		int nl_host = nl_open();
		if (nl_host < 0)
			fail("netlink: %s", strerror(errno));
		for (int i = 0; i < nveths; i++)
			wire(nl_host, nl_ct, &veths[i]);
		close(nl_host);
	}
	close(nl_ct);
}

/* The namespace's mount and file; the monitor's own reference to it goes too. */
static void release_namespace(void)
{
	enter_host_ns();
	if (ns_fd >= 0) {
		close(ns_fd);
		ns_fd = -1;
	}
	if (ns_mounted && umount2(ns_path, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
		diag("umount %s: %s", ns_path, strerror(errno));
	ns_mounted = false;
	if (ns_file_made && unlink(ns_path) < 0 && errno != ENOENT)
		diag("unlink %s: %s", ns_path, strerror(errno));
	ns_file_made = false;
}

void netns_remove_links(void)
{
	bool any = false;
	for (int i = 0; i < nveths; i++)
		any = any || veths[i].created;
	if (!any)
		return;
	int nl = nl_open();
	if (nl < 0) {
		diag("netlink: %s", strerror(errno));
		return;
	}
	for (int i = 0; i < nveths; i++) {
		if (!veths[i].created)
			continue;
		/* ENODEV: the namespace died with its last process and took the pair with it */
		int err = delete_link(nl, veths[i].host);
		if (err < 0 && err != -ENODEV)
			diag("delete %s: %s", veths[i].host, nl_error(err));
		veths[i].created = false;
	}
	close(nl);
}

void netns_abort(void)
{
	release_namespace();
	netns_remove_links();
}

void netns_detach(void)
{
	release_namespace();
}

int shim_netns_fd(void)
{
	return ns_fd;
}

int shim_netns_socket(int domain, int type, int protocol)
{
	if (ns_fd < 0 || host_ns_fd < 0) {
		errno = EBADF;
		return -1;
	}
	if (setns(ns_fd, CLONE_NEWNET) < 0)
		return -1;
	in_container_ns = true;
	int fd = socket(domain, type, protocol);
	int e = errno;
	if (setns(host_ns_fd, CLONE_NEWNET) < 0)
		fail("setns (back to the host's network namespace): %s", strerror(errno));
	in_container_ns = false;
	errno = e;
	return fd;
}
