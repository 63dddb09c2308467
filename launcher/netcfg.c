/*
 * netcfg.c: the sandbox network namespace's transparent connections (SPEC "Names and
 * connections inside the sandbox"; design in docs/sandbox.md, "Transparent connections").
 *
 * Called by egress-run's child in the namespace it has just made, with the capabilities
 * of the user namespace that owns it, before it becomes bwrap: nothing inside the sandbox
 * ever holds CAP_NET_ADMIN, so nothing inside can change what is set here.
 *
 *  - `local default dev lo` (table local): every IPv4 address is local, so a connect() to
 *    a synthetic or any other non-loopback address is not ENETUNREACH and reaches the
 *    output hook below. A plain rtnetlink request: one message, one acknowledgement.
 *  - one nftables table (libnftables, the library behind nft(8)): every TCP connection to
 *    an address outside 127.0.0.0/8 is redirected to egress-relay's transparent listener
 *    on 127.0.0.1:PORT (REDIRECT in the output hook rewrites to 127.0.0.1), which reads
 *    the original destination and asks egressd. The rule names no address and no port of
 *    the policy: the sandbox side holds no allowlist, and no port range can be wider than
 *    what it covers. Its counter is the sandbox's own record of redirected attempts.
 *
 * IPv6 gets neither: synthetic addresses are IPv4 (AAAA answers are empty), and a connect
 * to a global IPv6 address fails at once with ENETUNREACH (the namespace has only ::1).
 *
 * Trusts: its caller for the port. Reads nothing from the workload, which does not run yet.
 */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <nftables/libnftables.h>

#include "netcfg.h"

/* RTM_NEWROUTE for `local default dev lo` and its acknowledgement: 0 or -errno. */
static int
netcfg_local_default(void)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		struct rtattr oif_attr;
		unsigned int oif;
	} req;
	struct {
		struct nlmsghdr nh;
		struct nlmsgerr err;
		char rest[256];
	} ack;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	int fd, rc;
	ssize_t n;

	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = sizeof(req);
	req.nh.nlmsg_type = RTM_NEWROUTE;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
	req.nh.nlmsg_seq = 1;
	req.rt.rtm_family = AF_INET;
	req.rt.rtm_dst_len = 0;                 /* default */
	req.rt.rtm_table = RT_TABLE_LOCAL;
	req.rt.rtm_protocol = RTPROT_BOOT;
	req.rt.rtm_scope = RT_SCOPE_HOST;
	req.rt.rtm_type = RTN_LOCAL;
	req.oif_attr.rta_type = RTA_OIF;
	req.oif_attr.rta_len = RTA_LENGTH(sizeof(req.oif));
	if ((req.oif = if_nametoindex("lo")) == 0)
		return -errno;
	if ((fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)) == -1)
		return -errno;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) !=
	    (ssize_t)sizeof(req)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	do
		n = recv(fd, &ack, sizeof(ack), 0);
	while (n == -1 && errno == EINTR);
	rc = n == -1 ? -errno : 0;
	close(fd);
	if (rc != 0)
		return rc;
	if ((size_t)n < sizeof(ack.nh) + sizeof(ack.err) || ack.nh.nlmsg_type != NLMSG_ERROR)
		return -EPROTO;
	return ack.err.error;                   /* 0 on success, else -errno */
}

int
netcfg_transparent(unsigned port, char *err, size_t errlen)
{
	char rules[512];
	struct nft_ctx *nft;
	int rc;

	if (port == 0 || port > 65535) {
		snprintf(err, errlen, "transparent listener port %u out of range", port);
		return -1;
	}
	if ((rc = netcfg_local_default()) != 0) {
		snprintf(err, errlen, "the sandbox's local default route: %s (--no-dns runs "
		    "without transparent connections)", strerror(-rc));
		return -1;
	}
	snprintf(rules, sizeof(rules),
	    "table ip " NETCFG_TABLE " {\n"
	    " chain " NETCFG_CHAIN " {\n"
	    "  type nat hook output priority -100; policy accept;\n"
	    "  ip daddr != 127.0.0.0/8 meta l4proto tcp counter redirect to :%u\n"
	    " }\n"
	    "}\n", port);
	if ((nft = nft_ctx_new(NFT_CTX_DEFAULT)) == NULL) {
		snprintf(err, errlen, "libnftables: cannot make a context");
		return -1;
	}
	nft_ctx_buffer_output(nft);
	nft_ctx_buffer_error(nft);
	if (nft_run_cmd_from_buffer(nft, rules) != 0) {
		const char *msg = nft_ctx_get_error_buffer(nft);
		size_t len = msg ? strcspn(msg, "\n") : 0;

		snprintf(err, errlen, "the sandbox's nftables redirect: %.*s (the kernel needs "
		    "nf_tables with NAT; --no-dns runs without transparent connections)", (int)len,
		    len ? msg : "refused");
		nft_ctx_free(nft);
		return -1;
	}
	nft_ctx_free(nft);
	return 0;
}
