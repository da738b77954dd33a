// SPDX-License-Identifier: GPL-2.0
/*
 * pma_query: asks a peer's Performance Management agent over the wire, as a performance
 * manager does: Performance Management MADs sent from this device's GSI QP (QP1), through
 * the kernel's user MAD interface (/dev/infiniband/umadN, no libibumad), to QP1 of the
 * peer's RoCE address; the peer's MAD layer hands them to its driver's process_mad, and
 * its reply has to come back as a GetResp that the MAD layer matches to the request (the
 * transaction ID) for read() to return it.
 *
 * The peer is named by an IPv6 GID: ib_core's MAD layer matches a response to its request
 * by comparing the request's source GID with the raw GRH in front of the received response
 * (mad.c rcv_has_same_gid), which for RoCE v2 over IPv4 holds an IPv4 header, not GIDs,
 * so over IPv4 no GetResp is ever matched (whatever the drivers).
 *
 * usage: pma_query DEVICE GID_INDEX PEER_GID
 * Checks (one RRXE-TEST line each):
 *   pma_wire_class_port_info  Get(ClassPortInfo): GetResp, status 0, the extended counters
 *   pma_wire_counters         Get(PortCountersExtended) of port 1: status 0, packets both
 *                             ways (at least the MADs of this run), PortSelect echoed
 *   pma_wire_counters_grow    a second Get reports more packets received than the first
 *   pma_wire_bad_port         Get(PortCounters) of port 2: status 0x001c, no data
 *   pma_wire_set_refused      Set(PortCounters): status 0x000c
 */
#include "rrxe_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <rdma/ib_user_mad.h>
#include <rdma/rdma_user_ioctl.h>

#define MAD_SIZE 256
#define ATTR (24 + 40)
#define QP1_QKEY 0x80010000u

struct umad_msg {
	struct ib_user_mad_hdr hdr;
	uint8_t mad[MAD_SIZE];
};

static int fd = -1;
static uint32_t agent_id;
static uint8_t peer_gid[16];
static int gid_index;
static uint32_t next_tid = 0x5a00;

/* Opens the umad device of @dev's port 1. */
static int open_umad(const char *dev)
{
	DIR *d = opendir("/sys/class/infiniband_mad");
	struct dirent *e;
	char path[512], buf[64];
	int found = -1;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		FILE *f;

		if (strncmp(e->d_name, "umad", 4))
			continue;
		snprintf(path, sizeof(path), "/sys/class/infiniband_mad/%s/ibdev", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && !strncmp(buf, dev, strlen(dev)) &&
		    buf[strlen(dev)] == '\n') {
			snprintf(path, sizeof(path), "/dev/infiniband/%s", e->d_name);
			found = open(path, O_RDWR);
		}
		fclose(f);
		if (found >= 0)
			break;
	}
	closedir(d);
	return found;
}

/*
 * Sends one PerfMgmt MAD (@method, @attr, PortSelect @port) to the peer's QP1 and waits for
 * the reply (the MAD layer retries twice after 1 s each). Returns 0 with the reply in @out,
 * or -1 (timed out, or a send error) with errno set.
 */
static int query(uint8_t method, uint16_t attr, uint8_t port, uint8_t *out)
{
	struct umad_msg m = {}, r;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint32_t tid = next_tid++;
	ssize_t n;

	m.hdr.id = agent_id;
	m.hdr.timeout_ms = 1000;
	m.hdr.retries = 2;
	m.hdr.qpn = htonl(1);
	m.hdr.qkey = htonl(QP1_QKEY);
	m.hdr.grh_present = 1;
	m.hdr.gid_index = gid_index;
	m.hdr.hop_limit = 64;
	memcpy(m.hdr.gid, peer_gid, 16);
	m.mad[0] = 1;		/* base version */
	m.mad[1] = 0x04;	/* Performance Management */
	m.mad[2] = 1;		/* class version */
	m.mad[3] = method;
	m.mad[12] = tid >> 24;	/* the low half of the TID is ours */
	m.mad[13] = tid >> 16;
	m.mad[14] = tid >> 8;
	m.mad[15] = tid;
	m.mad[16] = attr >> 8;
	m.mad[17] = attr;
	if (attr != 0x0001)
		m.mad[ATTR + 1] = port;
	if (write(fd, &m, sizeof(m)) != sizeof(m))
		return -1;
	for (;;) {
		if (poll(&p, 1, 10000) != 1) {
			errno = ETIMEDOUT;
			return -1;
		}
		n = read(fd, &r, sizeof(r));
		if (n < (ssize_t)sizeof(r.hdr))
			return -1;
		if (r.hdr.status) {	/* the send's outcome: ETIMEDOUT when no reply came */
			errno = r.hdr.status;
			return -1;
		}
		if (n == sizeof(r) && r.mad[12] == (uint8_t)(tid >> 24) &&
		    r.mad[13] == (uint8_t)(tid >> 16) && r.mad[14] == (uint8_t)(tid >> 8) &&
		    r.mad[15] == (uint8_t)tid)
			break;
	}
	memcpy(out, r.mad, MAD_SIZE);
	return 0;
}

static uint16_t be16_at(const uint8_t *b, int at)
{
	return b[at] << 8 | b[at + 1];
}

static uint64_t be64_at(const uint8_t *b, int at)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | b[at + i];
	return v;
}

/* The reply's header: GetResp of the PerfMgmt attribute @attr; returns its status. */
static int reply_status(const uint8_t *out, uint16_t attr, int *hdr_ok)
{
	*hdr_ok = out[0] == 1 && out[1] == 0x04 && out[2] == 1 && out[3] == 0x81 &&
		  be16_at(out, 16) == attr;
	return be16_at(out, 4);
}

int main(int argc, char **argv)
{
	struct ib_user_mad_reg_req2 reg = { .qpn = 1 };
	uint8_t out[MAD_SIZE];
	uint64_t rcv1 = 0, xmit1 = 0;
	int hdr_ok, st, i, rc;

	if (argc != 4) {
		fprintf(stderr, "usage: pma_query DEVICE GID_INDEX PEER_GID\n");
		return 2;
	}
	gid_index = atoi(argv[2]);
	if (inet_pton(AF_INET6, argv[3], peer_gid) != 1) {
		fprintf(stderr, "pma_query: bad address %s\n", argv[3]);
		return 2;
	}
	fd = open_umad(argv[1]);
	if (fd < 0) {
		perror("pma_query: no umad device");
		return 2;
	}
	/* An agent of no class: it only sends requests and gets their responses. */
	if (ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &reg)) {
		perror("pma_query: IB_USER_MAD_REGISTER_AGENT2");
		return 2;
	}
	agent_id = reg.id;

	rc = query(0x01, 0x0001, 0, out);
	st = rc ? -1 : reply_status(out, 0x0001, &hdr_ok);
	checkf("pma_wire_class_port_info",
	       !rc && hdr_ok && st == 0 && (be16_at(out, ATTR + 2) & (1 << 9)),
	       "rc %d errno %d, header %s, status 0x%x, capability mask 0x%x", rc, errno,
	       rc ? "-" : hdr_ok ? "ok" : "wrong", st, rc ? 0 : be16_at(out, ATTR + 2));

	rc = query(0x01, 0x001d, 1, out);
	st = rc ? -1 : reply_status(out, 0x001d, &hdr_ok);
	if (!rc) {
		xmit1 = be64_at(out, ATTR + 24);
		rcv1 = be64_at(out, ATTR + 32);
		printf("peer port 1: xmit_data %llu rcv_data %llu xmit_packets %llu "
		       "rcv_packets %llu unicast %llu/%llu multicast %llu/%llu\n",
		       (unsigned long long)be64_at(out, ATTR + 8),
		       (unsigned long long)be64_at(out, ATTR + 16), (unsigned long long)xmit1,
		       (unsigned long long)rcv1, (unsigned long long)be64_at(out, ATTR + 40),
		       (unsigned long long)be64_at(out, ATTR + 48),
		       (unsigned long long)be64_at(out, ATTR + 56),
		       (unsigned long long)be64_at(out, ATTR + 64));
	}
	checkf("pma_wire_counters",
	       !rc && hdr_ok && st == 0 && out[ATTR + 1] == 1 && xmit1 >= 1 && rcv1 >= 2,
	       "rc %d errno %d, status 0x%x, port %d, xmit_packets %llu, rcv_packets %llu", rc,
	       errno, st, rc ? -1 : out[ATTR + 1], (unsigned long long)xmit1,
	       (unsigned long long)rcv1);

	/* Each request is a packet the peer receives. */
	for (i = 0; i < 3; i++)
		rc = query(0x01, 0x001d, 1, out);
	checkf("pma_wire_counters_grow", !rc && be64_at(out, ATTR + 32) >= rcv1 + 3,
	       "rc %d, rcv_packets %llu then %llu", rc, (unsigned long long)rcv1,
	       (unsigned long long)(rc ? 0 : be64_at(out, ATTR + 32)));

	rc = query(0x01, 0x0012, 2, out);
	st = rc ? -1 : reply_status(out, 0x0012, &hdr_ok);
	for (i = 24; !rc && i < MAD_SIZE && !out[i]; i++)
		;
	checkf("pma_wire_bad_port", !rc && hdr_ok && st == 0x001c && i == MAD_SIZE,
	       "rc %d errno %d, status 0x%x, data %s", rc, errno, st,
	       i == MAD_SIZE ? "none" : "present");

	rc = query(0x02, 0x0012, 1, out);
	st = rc ? -1 : reply_status(out, 0x0012, &hdr_ok);
	checkf("pma_wire_set_refused", !rc && hdr_ok && st == 0x000c,
	       "rc %d errno %d, status 0x%x", rc, errno, st);

	ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &agent_id);
	close(fd);
	return failed;
}
