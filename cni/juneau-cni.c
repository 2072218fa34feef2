/* SPDX-License-Identifier: Apache-2.0 */
/* Copyright Juneau authors */

/*
 * juneau-cni: the chained CNI plugin of direct ElasticIPs (CNI-1..CNI-3, EIP-13), spec 1.0.
 *
 * It decides nothing. It forwards the CNI request (the CNI_* environment and the network
 * configuration with its prevResult) to the node's agent over a unix socket, and carries out the
 * answer: a few netlink steps inside CNI_NETNS, then the body printed on stdout, as the agent
 * wrote it (the result with the ElasticIP added, the prevResult unchanged, or a CNI error). The
 * agent never enters a pod's namespace; this program never reads the Kubernetes API.
 *
 * Request (to the agent), text, then the writer's half of the socket shut:
 *   juneau-cni 1\n  CNI_COMMAND=..\n  CNI_CONTAINERID=..\n  CNI_NETNS=..\n  CNI_IFNAME=..\n
 *   CNI_ARGS=..\n  \n  <the configuration from stdin, as received>
 * Answer (from the agent): header lines, an empty line, the body:
 *   status <0|1>                 the exit code; the body is the result, or the CNI error
 *   addr-add <a.b.c.d>/<n> <if>  add (or replace) the address on the interface
 *   addr-del <a.b.c.d>/<n> <if>  remove it (absent already: fine, DEL is idempotent)
 *   addr-check <a.b.c.d>/<n> <if> CHECK: fail unless the address is there
 *   route-default <gw> <src> <if> replace the default route: via gw, source src (CNI-1)
 *
 * Without the agent: ADD and CHECK fail with "try again later" (CNI error 11; the kubelet retries),
 * DEL succeeds (docs/cni.md says why). VERSION is answered here.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* Abstract socket in the node's network namespace (the agent is hostNetwork; see docs/cni.md). */
#define DEFAULT_SOCKET "@juneau-cni"
#define MAX_CONFIG (1 << 20)
#define MAX_ANSWER (1 << 20)
/* The agent answers from its caches; a stuck agent must not hold sandbox setup for long. */
#define ANSWER_TIMEOUT_S 20

/* The version errors are written in: the configuration's (CNI spec: answer in the version asked). */
static char cni_version[16] = "1.0.0";

/* The configuration's "cniVersion" value, without a JSON parser: the agent reads the rest. */
static void take_version(const char *config)
{
	const char *k = strstr(config, "\"cniVersion\"");
	if (!k)
		return;
	const char *q = strchr(k + 12, '"');
	if (!q)
		return;
	size_t n = strcspn(q + 1, "\"");
	if (n > 0 && n < sizeof(cni_version) && strspn(q + 1, "0123456789.") == n) {
		memcpy(cni_version, q + 1, n);
		cni_version[n] = '\0';
	}
}

static void cni_error(int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* JSON-escape the few characters a message can carry. */
	printf("{\"cniVersion\":\"%s\",\"code\":%d,\"msg\":\"", cni_version, code);
	for (const char *c = msg; *c; c++) {
		if (*c == '"' || *c == '\\')
			printf("\\%c", *c);
		else if ((unsigned char)*c < 0x20)
			putchar(' ');
		else
			putchar(*c);
	}
	printf("\"}\n");
}

static char *read_all(int fd, size_t max, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	if (!buf)
		return NULL;
	for (;;) {
		if (n == cap) {
			if (cap >= max) {
				free(buf);
				errno = EFBIG;
				return NULL;
			}
			cap *= 2;
			char *grown = realloc(buf, cap + 1);
			if (!grown) {
				free(buf);
				return NULL;
			}
			buf = grown;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, buf, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

static int connect_agent(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = strlen(path);
	if (len >= sizeof(sa.sun_path))
		return -1;
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct timeval tv = { .tv_sec = ANSWER_TIMEOUT_S };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* Node.js (libuv) binds an abstract name padded with NULs to the whole sun_path: try that
	 * length first, then the exact one (a server that binds the name alone). */
	socklen_t lens[2] = { sizeof(sa), (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len) };
	for (int i = path[0] == '@' ? 0 : 1; i < 2; i++)
		if (connect(fd, (struct sockaddr *)&sa, lens[i]) == 0)
			return fd;
	close(fd);
	return -1;
}

/* ---- netlink, inside the pod's namespace ------------------------------------------------ */

struct nlreq {
	struct nlmsghdr nh;
	union {
		struct ifaddrmsg ifa;
		struct rtmsg rt;
	};
	char attrs[256];
};

static void add_attr(struct nlreq *req, unsigned short type, const void *data, unsigned short len)
{
	struct rtattr *rta = (struct rtattr *)((char *)req + NLMSG_ALIGN(req->nh.nlmsg_len));
	rta->rta_type = type;
	rta->rta_len = RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), data, len);
	req->nh.nlmsg_len = NLMSG_ALIGN(req->nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

/* The request's header: its type, flags and the size of its fixed part (ifaddrmsg or rtmsg). */
static void nl_header(struct nlreq *req, size_t body, unsigned short type, unsigned short flags)
{
	req->nh.nlmsg_len = NLMSG_LENGTH(body);
	req->nh.nlmsg_type = type;
	req->nh.nlmsg_flags = flags;
}

/* Sends one request and returns 0 or the kernel's -errno. */
static int nl_talk(struct nlreq *req)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	req->nh.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	req->nh.nlmsg_seq = 1;
	if (sendto(fd, req, req->nh.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	char buf[4096];
	ssize_t n = recv(fd, buf, sizeof(buf), 0);
	close(fd);
	if (n < 0)
		return -errno;
	struct nlmsghdr *h = (struct nlmsghdr *)buf;
	if (!NLMSG_OK(h, (size_t)n) || h->nlmsg_type != NLMSG_ERROR)
		return -EPROTO;
	return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
}

static int parse_prefix(const char *cidr, struct in_addr *addr, unsigned char *len)
{
	char ip[INET_ADDRSTRLEN];
	const char *slash = strchr(cidr, '/');
	size_t n = slash ? (size_t)(slash - cidr) : strlen(cidr);
	if (n >= sizeof(ip))
		return -1;
	memcpy(ip, cidr, n);
	ip[n] = '\0';
	int bits = slash ? atoi(slash + 1) : 32;
	if (bits < 0 || bits > 32 || inet_pton(AF_INET, ip, addr) != 1)
		return -1;
	*len = (unsigned char)bits;
	return 0;
}

static int addr_op(int add, const char *cidr, const char *ifname, char *why, size_t whylen)
{
	struct in_addr a;
	unsigned char plen;
	unsigned int ifindex = if_nametoindex(ifname);
	if (parse_prefix(cidr, &a, &plen) < 0) {
		snprintf(why, whylen, "bad address %s from the agent", cidr);
		return -1;
	}
	if (!ifindex) {
		snprintf(why, whylen, "no interface %s in the pod's namespace", ifname);
		return -1;
	}
	struct nlreq req = { 0 };
	nl_header(&req, sizeof(struct ifaddrmsg), add ? RTM_NEWADDR : RTM_DELADDR, add ? NLM_F_CREATE | NLM_F_REPLACE : 0);
	req.ifa = (struct ifaddrmsg){ .ifa_family = AF_INET, .ifa_prefixlen = plen, .ifa_scope = RT_SCOPE_UNIVERSE, .ifa_index = ifindex };
	add_attr(&req, IFA_LOCAL, &a, sizeof(a));
	add_attr(&req, IFA_ADDRESS, &a, sizeof(a));
	int err = nl_talk(&req);
	if (!add && err == -EADDRNOTAVAIL)
		err = 0; /* gone already */
	if (err) {
		snprintf(why, whylen, "%s %s on %s: %s", add ? "adding" : "removing", cidr, ifname, strerror(-err));
		return -1;
	}
	return 0;
}

static int route_default(const char *gw, const char *src, const char *ifname, char *why, size_t whylen)
{
	struct in_addr g, s;
	unsigned int ifindex = if_nametoindex(ifname);
	if (inet_pton(AF_INET, gw, &g) != 1 || inet_pton(AF_INET, src, &s) != 1 || !ifindex) {
		snprintf(why, whylen, "bad default route %s src %s dev %s", gw, src, ifname);
		return -1;
	}
	struct nlreq req = { 0 };
	nl_header(&req, sizeof(struct rtmsg), RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE);
	req.rt = (struct rtmsg){ .rtm_family = AF_INET, .rtm_table = RT_TABLE_MAIN, .rtm_protocol = RTPROT_BOOT,
				 .rtm_scope = RT_SCOPE_UNIVERSE, .rtm_type = RTN_UNICAST };
	add_attr(&req, RTA_GATEWAY, &g, sizeof(g));
	add_attr(&req, RTA_PREFSRC, &s, sizeof(s));
	add_attr(&req, RTA_OIF, &ifindex, sizeof(ifindex));
	int err = nl_talk(&req);
	if (err) {
		snprintf(why, whylen, "default route via %s src %s dev %s: %s", gw, src, ifname, strerror(-err));
		return -1;
	}
	return 0;
}

static int addr_check(const char *cidr, const char *ifname, char *why, size_t whylen)
{
	struct in_addr a;
	unsigned char plen;
	struct ifaddrs *list, *i;
	int found = 0;
	if (parse_prefix(cidr, &a, &plen) < 0 || getifaddrs(&list) < 0) {
		snprintf(why, whylen, "cannot check %s on %s", cidr, ifname);
		return -1;
	}
	for (i = list; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && strcmp(i->ifa_name, ifname) == 0 &&
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == a.s_addr)
			found = 1;
	freeifaddrs(list);
	if (!found) {
		snprintf(why, whylen, "the ElasticIP %s is not on %s in the pod", cidr, ifname);
		return -1;
	}
	return 0;
}

static int enter_netns(const char *path, char *why, size_t whylen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) < 0) {
		snprintf(why, whylen, "entering %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* Runs the header's steps in order; the first failure stops them. */
static int run_steps(char *header, const char *netns, char *why, size_t whylen)
{
	int entered = 0;
	char *save = NULL;
	for (char *line = strtok_r(header, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char op[32], a[64], b[64], c[64];
		int n = sscanf(line, "%31s %63s %63s %63s", op, a, b, c);
		if (n < 1 || strcmp(op, "status") == 0)
			continue;
		if (!entered) {
			if (!netns || !*netns) {
				snprintf(why, whylen, "CNI_NETNS is empty");
				return -1;
			}
			if (enter_netns(netns, why, whylen) < 0)
				return -1;
			entered = 1;
		}
		int rc;
		if (strcmp(op, "addr-add") == 0 && n == 3)
			rc = addr_op(1, a, b, why, whylen);
		else if (strcmp(op, "addr-del") == 0 && n == 3)
			rc = addr_op(0, a, b, why, whylen);
		else if (strcmp(op, "addr-check") == 0 && n == 3)
			rc = addr_check(a, b, why, whylen);
		else if (strcmp(op, "route-default") == 0 && n == 4)
			rc = route_default(a, b, c, why, whylen);
		else {
			snprintf(why, whylen, "unknown step from the agent: %.80s", line);
			rc = -1;
		}
		if (rc < 0)
			return -1;
	}
	return 0;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v ? v : "";
}

int main(void)
{
	const char *command = env("CNI_COMMAND");
	if (strcmp(command, "VERSION") == 0) {
		printf("{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\"]}\n");
		return 0;
	}
	size_t config_len = 0;
	char *config = read_all(STDIN_FILENO, MAX_CONFIG, &config_len);
	if (!config) {
		cni_error(4, "juneau-cni: reading the network configuration: %s", strerror(errno));
		return 1;
	}
	take_version(config);
	const char *is_del = strcmp(command, "DEL") == 0 ? "yes" : NULL;
	const char *sock = getenv("JUNEAU_CNI_SOCKET") ? getenv("JUNEAU_CNI_SOCKET") : DEFAULT_SOCKET;
	int fd = connect_agent(sock);
	if (fd < 0) {
		if (is_del)
			return 0;
		cni_error(11, "juneau-cni: the Juneau agent on this node is not reachable at %s (%s); retry once it runs",
			  sock, strerror(errno));
		return 1;
	}
	char head[8192];
	int hl = snprintf(head, sizeof(head),
			  "juneau-cni 1\nCNI_COMMAND=%s\nCNI_CONTAINERID=%s\nCNI_NETNS=%s\nCNI_IFNAME=%s\nCNI_ARGS=%s\n\n",
			  command, env("CNI_CONTAINERID"), env("CNI_NETNS"), env("CNI_IFNAME"), env("CNI_ARGS"));
	size_t answer_len = 0;
	char *answer = NULL;
	if (hl > 0 && (size_t)hl < sizeof(head) && write_all(fd, head, (size_t)hl) == 0 &&
	    write_all(fd, config, config_len) == 0 && shutdown(fd, SHUT_WR) == 0)
		answer = read_all(fd, MAX_ANSWER, &answer_len);
	close(fd);
	free(config);
	if (!answer || strncmp(answer, "status ", 7) != 0) {
		if (is_del)
			return 0;
		cni_error(11, "juneau-cni: no answer from the Juneau agent at %s; retry", sock);
		return 1;
	}
	int status = atoi(answer + 7);
	char *body = strstr(answer, "\n\n");
	if (body) {
		*body = '\0';
		body += 2;
	} else {
		body = answer + answer_len;
	}
	char why[512] = "";
	if (status == 0 && run_steps(answer, getenv("CNI_NETNS"), why, sizeof(why)) < 0) {
		cni_error(is_del ? 999 : 11, "juneau-cni: %s", why);
		return 1;
	}
	fputs(body, stdout);
	return status;
}
