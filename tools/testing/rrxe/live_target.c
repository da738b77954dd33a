// SPDX-License-Identifier: GPL-2.0
/*
 * live_target: the victim side of the live-QP wire test (guest a, rrxe). It registers a
 * 64 KiB region (remote read, write and atomic) filled with a known pattern and creates one
 * RC QP per phase of live_peer (live_test.h), tells the peer over TCP the QP numbers, the
 * PSN each QP expects first, the rkey and the address, and connects every QP to the peer's
 * IPv4-mapped GID (path MTU 1024, max_dest_rd_atomic 16). The peer has no RDMA stack: it
 * sends hand-made packets. When the peer says DONE, this side checks:
 *   - every QP is in the state the IBA says: RTS where only valid, duplicate or
 *     out-of-sequence packets arrived (class B errors), ERR after a NAK remote access error
 *     or invalid request (class C), with its receive WQEs flushed (IBV_WC_WR_FLUSH_ERR);
 *   - the legitimate WRITEs and the FETCH_ADD landed, the duplicate WRITE was not executed
 *     again, and no other byte of the region changed (wrong rkey, past the end, to a QP in
 *     ERR, out of sequence, misaligned atomic);
 *   - the port counters agree with the peer: every packet it sent arrived with a valid
 *     ICRC, the two it sent to a QP that may not take them were dropped, and every reply
 *     sent reached it;
 *   - the device still works: a fresh pair of QPs on it does a loopback SEND;
 *   - everything is destroyed without error.
 *
 * Usage: live_target DEVICE GID_INDEX TCP_PORT
 * Exit status 0 only if every check passed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "rrxe_test.h"
#include "live_test.h"

#define DONE_WAIT_S	200	/* the peer's phases take about a minute on slow guests */
#define RBUF_SLOT	256	/* each receive WQE of the phase QPs: slots 0 .. LIVE_NQP * LIVE_NRECV - 1 */
#define RBUF_LEN	8192	/* the loopback check uses the second half */
/* rrxe has 39 port counters; a cap below that loses some, by sysfs's name-hash order. */
#define MAX_COUNTERS	128

static struct {
	const char *dev;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr, *rmr;
	uint8_t *buf, *rbuf;
	struct ibv_qp *qp[LIVE_NQP];
	int gid_index;
	union ibv_gid gid;
	int sock;
	uint32_t peer_qpn[LIVE_NQP], peer_psn[LIVE_NQP];
	union ibv_gid peer_gid;
	char peer_ip[INET_ADDRSTRLEN];
} G = { .sock = -1 };

static const char *state_name(int s)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return s >= 0 && s < 7 ? n[s] : "?";
}

/* ---- port counters ------------------------------------------------------------------ */

struct counters {
	int n;
	char name[MAX_COUNTERS][48];
	long long val[MAX_COUNTERS];
};

static void counters_read(struct counters *c)
{
	char dir[256], path[512];
	struct dirent *d;
	DIR *dp;

	c->n = 0;
	snprintf(dir, sizeof(dir), "/sys/class/infiniband/%s/ports/1/hw_counters", G.dev);
	dp = opendir(dir);
	if (!dp)
		return;
	while ((d = readdir(dp)) && c->n < MAX_COUNTERS) {
		FILE *f;

		if (d->d_name[0] == '.' || !strcmp(d->d_name, "lifespan") ||
		    strlen(d->d_name) >= sizeof(c->name[0]))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%lld", &c->val[c->n]) == 1) {
			memcpy(c->name[c->n], d->d_name, strlen(d->d_name) + 1);
			c->n++;
		}
		fclose(f);
	}
	closedir(dp);
}

/* The change of counter @name from @a to @b, or -1000000 if it is missing. */
static long long counter_delta(const struct counters *a, const struct counters *b,
			       const char *name)
{
	for (int i = 0; i < b->n; i++)
		if (!strcmp(b->name[i], name))
			for (int j = 0; j < a->n; j++)
				if (!strcmp(a->name[j], name))
					return b->val[i] - a->val[j];
	return -1000000;
}

static void counters_print(const struct counters *a, const struct counters *b)
{
	printf("port counters of %s during the peer's phases:\n", G.dev);
	for (int i = 0; i < b->n; i++)
		printf("   %-18s %8lld (%+lld)\n", b->name[i], b->val[i],
		       counter_delta(a, b, b->name[i]));
}

/* ---- setup -------------------------------------------------------------------------- */

static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

static struct ibv_qp *create_qp(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0,
		.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE |
				   LIVE_ACCESS_FLUSH_GLOBAL,
	};
	struct ibv_qp *qp = ibv_create_qp(G.pd, &ia);

	if (!qp) {
		perror("ibv_create_qp");
		return NULL;
	}
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS)) {
		perror("modify QP to INIT");
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

/* INIT -> RTR -> RTS towards @dgid / @dqpn: the peer expects @sq_psn first from us, we
 * expect @rq_psn first from it. */
static int connect_qp(struct ibv_qp *qp, const union ibv_gid *dgid, uint32_t dqpn,
		      uint32_t rq_psn, uint32_t sq_psn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = dqpn,
		.rq_psn = rq_psn, .max_dest_rd_atomic = 16, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *dgid, .sgid_index = G.gid_index, .hop_limit = 64 } },
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER)) {
		perror("modify QP to RTR");
		return -1;
	}
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
		perror("modify QP to RTS");
		return -1;
	}
	return 0;
}

static int post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len,
		     struct ibv_mr *mr)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	errno = ibv_post_recv(qp, &wr, &bad);
	return errno ? -1 : 0;
}

/* Everything before the peer connects: device, region, QPs in INIT. */
static int setup_local(void)
{
	struct ibv_port_attr pa;
	char gs[INET6_ADDRSTRLEN];

	G.ctx = open_dev(G.dev);
	if (!G.ctx) {
		fprintf(stderr, "cannot open %s\n", G.dev);
		return -1;
	}
	G.pd = ibv_alloc_pd(G.ctx);
	if (!G.pd || ibv_query_port(G.ctx, 1, &pa) ||
	    ibv_query_gid(G.ctx, 1, G.gid_index, &G.gid)) {
		perror("alloc pd / query port / query gid");
		return -1;
	}
	inet_ntop(AF_INET6, G.gid.raw, gs, sizeof(gs));
	printf("%s port 1: state %d active_mtu %d; GID %d = %s\n", G.dev, pa.state,
	       pa.active_mtu, G.gid_index, gs);
	G.cq = ibv_create_cq(G.ctx, 64, NULL, NULL, 0);
	G.buf = aligned_alloc(4096, LIVE_MR_LEN);
	G.rbuf = aligned_alloc(4096, RBUF_LEN);
	if (!G.cq || !G.buf || !G.rbuf) {
		perror("create cq / alloc");
		return -1;
	}
	for (size_t i = 0; i < LIVE_MR_LEN; i++)
		G.buf[i] = live_pattern(i);
	memset(G.rbuf, 0, RBUF_LEN);
	G.mr = ibv_reg_mr(G.pd, G.buf, LIVE_MR_LEN,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
			  LIVE_ACCESS_FLUSH_GLOBAL);
	G.rmr = ibv_reg_mr(G.pd, G.rbuf, RBUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!G.mr || !G.rmr) {
		perror("ibv_reg_mr");
		return -1;
	}
	for (int i = 0; i < LIVE_NQP; i++) {
		G.qp[i] = create_qp(G.cq);
		if (!G.qp[i])
			return -1;
	}
	return 0;
}

/* The TCP exchange and connecting the QPs; prints check target_setup. */
static int setup_peer(const char *port)
{
	char line[256];
	struct timeval tv = { .tv_sec = 60 };
	struct in_addr ip;

	G.sock = tcp_rendezvous(1, NULL, port);
	if (G.sock < 0) {
		check("target_setup", 0, "no connection from live_peer");
		return -1;
	}
	setsockopt(G.sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (tcp_say(G.sock, "TARGET nqp=%d rkey=0x%x va=0x%" PRIx64 " len=%u mtu=%u", LIVE_NQP,
		    G.mr->rkey, (uint64_t)(uintptr_t)G.buf, LIVE_MR_LEN, LIVE_MTU))
		goto lost;
	for (int i = 0; i < LIVE_NQP; i++)
		if (tcp_say(G.sock, "QP %d qpn=0x%x psn=0x%x", i, G.qp[i]->qp_num, live_rq_psn[i]))
			goto lost;
	if (tcp_line(G.sock, line, sizeof(line)))
		goto lost;
	if (sscanf(line, "PEER ip=%15s", G.peer_ip) != 1 || inet_pton(AF_INET, G.peer_ip, &ip) != 1) {
		checkf("target_setup", 0, "bad PEER line '%s'", line);
		return -1;
	}
	/* The peer's IPv4-mapped RoCE v2 GID, ::ffff:a.b.c.d. */
	memset(&G.peer_gid, 0, sizeof(G.peer_gid));
	G.peer_gid.raw[10] = G.peer_gid.raw[11] = 0xff;
	memcpy(G.peer_gid.raw + 12, &ip, 4);
	for (int i = 0; i < LIVE_NQP; i++) {
		unsigned int idx, qpn, psn;

		if (tcp_line(G.sock, line, sizeof(line)))
			goto lost;
		if (sscanf(line, "QP %u qpn=0x%x psn=0x%x", &idx, &qpn, &psn) != 3 ||
		    idx != (unsigned int)i) {
			checkf("target_setup", 0, "bad QP line '%s'", line);
			return -1;
		}
		G.peer_qpn[i] = qpn & 0xffffff;
		G.peer_psn[i] = psn & 0xffffff;
	}
	for (int i = 0; i < LIVE_NQP; i++) {
		int s;

		if (connect_qp(G.qp[i], &G.peer_gid, G.peer_qpn[i], live_rq_psn[i],
			       G.peer_psn[i])) {
			checkf("target_setup", 0, "QP %s: modify to RTR/RTS failed", live_qp_name[i]);
			tcp_say(G.sock, "FAIL modify QP");
			return -1;
		}
		for (int k = 0; k < LIVE_NRECV; k++) {
			int slot = i * LIVE_NRECV + k;

			if (post_recv(G.qp[i], (uint64_t)i << 8 | k, G.rbuf + slot * RBUF_SLOT,
				      RBUF_SLOT, G.rmr)) {
				checkf("target_setup", 0, "QP %s: ibv_post_recv: %s",
				       live_qp_name[i], strerror(errno));
				tcp_say(G.sock, "FAIL post recv");
				return -1;
			}
		}
		s = qp_state(G.qp[i]);
		printf("QP %-15s qpn 0x%06x rq_psn 0x%06x -> peer qpn 0x%06x (%s) sq_psn 0x%06x: %s\n",
		       live_qp_name[i], G.qp[i]->qp_num, live_rq_psn[i], G.peer_qpn[i], G.peer_ip,
		       G.peer_psn[i], state_name(s));
		if (s != IBV_QPS_RTS) {
			checkf("target_setup", 0, "QP %s is %s after modify to RTS", live_qp_name[i],
			       state_name(s));
			tcp_say(G.sock, "FAIL QP not in RTS");
			return -1;
		}
	}
	printf("region va 0x%" PRIx64 " len %u rkey 0x%x lkey 0x%x\n",
	       (uint64_t)(uintptr_t)G.buf, LIVE_MR_LEN, G.mr->rkey, G.mr->lkey);
	if (tcp_say(G.sock, "READY"))
		goto lost;
	check("target_setup", 1, "");
	return 0;
lost:
	check("target_setup", 0, "connection to live_peer lost");
	return -1;
}

/* ---- the checks after DONE ---------------------------------------------------------- */

/* The state each QP must be in; j's depends on what it did with the UD opcode. */
static int want_state(int i, int j_nak)
{
	switch (i) {
	case QP_SEQ:
	case QP_READ_64K:
		return IBV_QPS_RTS;
	case QP_WRONG_TRANSPORT:
		return j_nak ? IBV_QPS_ERR : IBV_QPS_RTS;
	default:
		return IBV_QPS_ERR;
	}
}

static void check_states(int j_nak)
{
	static const char *const why[LIVE_NQP] = {
		"only valid, duplicate and out-of-sequence packets (class B) arrived",
		"NAK remote access error (class C) ends the QP",
		"NAK remote access error (class C) ends the QP",
		"NAK remote access error (class C) ends the QP",
		"a valid READ only",
		"NAK invalid request (class C) ends the QP",
		"the UD opcode was dropped; a valid WRITE followed",
		"NAK invalid request (class C) ends the QP",
	};

	for (int i = 0; i < LIVE_NQP; i++) {
		char name[64];
		int s = qp_state(G.qp[i]), w = want_state(i, j_nak);

		snprintf(name, sizeof(name), "qp_state_%s", live_qp_name[i]);
		printf("QP %-15s is %s, expected %s (%s)\n", live_qp_name[i], state_name(s),
		       state_name(w), i == QP_WRONG_TRANSPORT && j_nak ?
		       "the UD opcode was NAKed: class C" : why[i]);
		checkf(name, s == w, "ibv_query_qp: %s, expected %s", state_name(s), state_name(w));
	}
}

/* QPs in ERR complete their LIVE_NRECV receive WQEs with IBV_WC_WR_FLUSH_ERR; the others
 * complete nothing (no SEND reached them). */
static void check_flushes(int j_nak)
{
	int want_total = 0, total = 0, n[LIVE_NQP] = { 0 }, bad = 0;
	double end;
	char why[256] = "";

	for (int i = 0; i < LIVE_NQP; i++)
		if (want_state(i, j_nak) == IBV_QPS_ERR)
			want_total += LIVE_NRECV;
	end = now_s() + 5;
	for (;;) {
		struct ibv_wc wc;
		int r = poll_one(G.cq, &wc, total >= want_total ? 0.5 : end - now_s());
		int i = -1;

		if (r <= 0)
			break;
		for (int k = 0; k < LIVE_NQP; k++)
			if (G.qp[k]->qp_num == wc.qp_num)
				i = k;
		printf("completion: QP %s wr_id 0x%" PRIx64 " status %s opcode %d byte_len %u\n",
		       i >= 0 ? live_qp_name[i] : "?", wc.wr_id, ibv_wc_status_str(wc.status),
		       wc.opcode, wc.byte_len);
		total++;
		if (i < 0 || wc.status != IBV_WC_WR_FLUSH_ERR || (wc.wr_id >> 8) != (uint64_t)i) {
			bad++;
			continue;
		}
		n[i]++;
	}
	for (int i = 0; i < LIVE_NQP && !*why; i++) {
		int w = want_state(i, j_nak) == IBV_QPS_ERR ? LIVE_NRECV : 0;

		if (n[i] != w)
			snprintf(why, sizeof(why), "QP %s: %d receive WQEs flushed, expected %d",
				 live_qp_name[i], n[i], w);
	}
	if (!*why && bad)
		snprintf(why, sizeof(why), "%d completions that are no flush of a posted receive", bad);
	checkf("recv_wqes_flushed", !*why, "%s (%d completions in all, %d expected)", why, total,
	       want_total);
}

/* Where a difference at @off lies. */
static const char *region_part(uint32_t off)
{
	if (off >= OFF_WRITE_A && off < OFF_WRITE_A + LEN_WRITE_A)
		return "a's WRITE";
	if (off >= OFF_READ_B && off < OFF_READ_B + LEN_READ_B)
		return "b's READ range";
	if (off >= OFF_WRITE_D && off < OFF_WRITE_D + LEN_WRITE_D)
		return "d's recovery WRITE";
	if (off >= OFF_AHEAD_D && off < OFF_AHEAD_D + 32)
		return "d's out-of-sequence WRITEs";
	if (off >= OFF_BAD_RKEY && off < OFF_BAD_RKEY + 64)
		return "e's wrong-rkey WRITE";
	if (off >= OFF_ERR_QP && off < OFF_ERR_QP + 64)
		return "e's WRITE to the QP in ERR";
	if (off >= OFF_ATOMIC && off < OFF_ATOMIC + 8)
		return "i's FETCH_ADD qword";
	if (off >= OFF_MISALIGNED && off < OFF_MISALIGNED + 8)
		return "i's misaligned FETCH_ADD";
	if (off >= OFF_WRITE_J && off < OFF_WRITE_J + LEN_WRITE_J)
		return "j's WRITE";
	if (off >= LIVE_MR_LEN - 32)
		return "f's WRITE past the end";
	return "nothing was sent there";
}

static int legit(uint32_t off, int j_landed)
{
	return (off >= OFF_WRITE_A && off < OFF_WRITE_A + LEN_WRITE_A) ||
	       (off >= OFF_WRITE_D && off < OFF_WRITE_D + LEN_WRITE_D) ||
	       (off >= OFF_ATOMIC && off < OFF_ATOMIC + 8) ||
	       (j_landed && off >= OFF_WRITE_J && off < OFF_WRITE_J + LEN_WRITE_J);
}

static void dump(const char *what, const uint8_t *p, uint32_t off, uint32_t len)
{
	printf("   %s at +0x%x:", what, off);
	for (uint32_t i = 0; i < len; i++)
		printf(" %02x", p[off + i]);
	printf("\n");
}

static void check_region(int j_landed)
{
	static uint8_t want[LIVE_MR_LEN];
	uint32_t bad_legit = 0, bad_rest = 0, first_legit = 0, first_rest = 0, i;
	uint8_t dup[LEN_WRITE_A];

	live_expected(want, j_landed);
	for (i = 0; i < LIVE_MR_LEN; i++) {
		if (G.buf[i] == want[i])
			continue;
		if (legit(i, j_landed)) {
			if (!bad_legit++)
				first_legit = i;
		} else if (!bad_rest++) {
			first_rest = i;
		}
	}
	if (bad_legit || bad_rest) {
		dump("found   ", G.buf, OFF_WRITE_A, 16);
		dump("expected", want, OFF_WRITE_A, 16);
		dump("found   ", G.buf, OFF_ATOMIC, 16);
		dump("expected", want, OFF_ATOMIC, 16);
	}
	checkf("mr_legit_writes_landed", !bad_legit,
	       "%u bytes of the legitimate WRITEs/FETCH_ADD differ, the first at +0x%x (%s): 0x%02x, expected 0x%02x",
	       bad_legit, first_legit, region_part(first_legit), G.buf[first_legit],
	       want[first_legit]);
	live_fill(dup, TAG_C, LEN_WRITE_A);
	checkf("dup_write_not_reexecuted", memcmp(G.buf + OFF_WRITE_A, dup, LEN_WRITE_A) != 0,
	       "a's range holds the bytes of c's duplicate WRITE");
	checkf("mr_rest_unchanged", !bad_rest,
	       "%u bytes outside the legitimate ranges changed, the first at +0x%x (%s): 0x%02x, expected 0x%02x",
	       bad_rest, first_rest, region_part(first_rest), G.buf[first_rest], want[first_rest]);
}

/*
 * The peer's packets against the counters: each one sent arrived (rcvd_pkts), none with a
 * bad ICRC, malformed or for an unknown QP; exactly 2 dropped by their QP (e's WRITE to the
 * QP in ERR, and j's UD opcode or, if that was NAKed, j's WRITE to the QP it ended); every
 * reply sent (sent_pkts) reached the peer, none lost (send_err).
 */
static void check_counters(const struct counters *a, const struct counters *b, int sent,
			   int replies)
{
	long long rcvd = counter_delta(a, b, "rcvd_pkts");
	long long icrc = counter_delta(a, b, "rcvd_icrc_err");
	long long malformed = counter_delta(a, b, "rcvd_malformed");
	long long unknown = counter_delta(a, b, "rcvd_unknown_qp");
	long long dropped = counter_delta(a, b, "rcvd_dropped");
	long long txd = counter_delta(a, b, "sent_pkts");
	long long txerr = counter_delta(a, b, "send_err");

	checkf("counters_rx_clean", !icrc && !malformed && !unknown,
	       "rcvd_icrc_err %+lld rcvd_malformed %+lld rcvd_unknown_qp %+lld: the peer's packets are not all valid RoCE for live QPs",
	       icrc, malformed, unknown);
	checkf("counters_match_peer", rcvd == sent && dropped == 2 && txd == replies && !txerr,
	       "rcvd_pkts %+lld (peer sent %d), rcvd_dropped %+lld (expected +2), sent_pkts %+lld (peer received %d), send_err %+lld",
	       rcvd, sent, dropped, txd, replies, txerr);
}

/* A fresh pair of QPs on the device: one loopback SEND of 64 bytes, checked. */
static void check_loopback(void)
{
	struct ibv_cq *cq = ibv_create_cq(G.ctx, 8, NULL, NULL, 0);
	struct ibv_qp *qa = cq ? create_qp(cq) : NULL, *qb = cq ? create_qp(cq) : NULL;
	uint8_t *src = G.rbuf + RBUF_LEN / 2, *dst = G.rbuf + RBUF_LEN / 2 + 512;
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = 64, .lkey = G.rmr->lkey };
	struct ibv_send_wr wr = { .wr_id = 0x5e, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	int got_send = 0, got_recv = 0, err = 0;
	char why[200] = "";
	double end;

	for (int i = 0; i < 64; i++) {
		src[i] = (uint8_t)(0x30 + i);
		dst[i] = 0;
	}
	if (!qa || !qb) {
		snprintf(why, sizeof(why), "cannot create the QPs or CQ");
		goto out;
	}
	if (connect_qp(qa, &G.gid, qb->qp_num, 0x777, 0x333) ||
	    connect_qp(qb, &G.gid, qa->qp_num, 0x333, 0x777)) {
		snprintf(why, sizeof(why), "modify to RTR/RTS towards its own GID failed");
		goto out;
	}
	if (post_recv(qb, 0x5f, dst, 64, G.rmr)) {
		snprintf(why, sizeof(why), "ibv_post_recv: %s", strerror(errno));
		goto out;
	}
	errno = ibv_post_send(qa, &wr, &bad);
	if (errno) {
		snprintf(why, sizeof(why), "ibv_post_send: %s", strerror(errno));
		goto out;
	}
	end = now_s() + 5;
	while ((!got_send || !got_recv) && now_s() < end) {
		struct ibv_wc wc;

		if (poll_one(cq, &wc, end - now_s()) <= 0)
			break;
		printf("loopback completion: wr_id 0x%" PRIx64 " status %s opcode %d byte_len %u\n",
		       wc.wr_id, ibv_wc_status_str(wc.status), wc.opcode, wc.byte_len);
		if (wc.status != IBV_WC_SUCCESS)
			err++;
		else if (wc.wr_id == 0x5e)
			got_send = 1;
		else if (wc.wr_id == 0x5f && wc.byte_len == 64)
			got_recv = 1;
	}
	if (err || !got_send || !got_recv)
		snprintf(why, sizeof(why), "send completed %d, receive completed %d, %d errors in 5 s",
			 got_send, got_recv, err);
	else if (memcmp(src, dst, 64))
		snprintf(why, sizeof(why), "the 64 bytes received differ from those sent");
out:
	checkf("device_still_works", !*why, "loopback SEND on fresh QPs: %s", why);
	if ((qa && ibv_destroy_qp(qa)) || (qb && ibv_destroy_qp(qb)) || (cq && ibv_destroy_cq(cq)))
		printf("destroying the loopback QPs/CQ failed\n");
}

static void teardown(void)
{
	int err = 0;

	for (int i = 0; i < LIVE_NQP; i++)
		if (G.qp[i] && ibv_destroy_qp(G.qp[i])) {
			printf("ibv_destroy_qp(%s) failed\n", live_qp_name[i]);
			err = 1;
		}
	if ((G.mr && ibv_dereg_mr(G.mr)) || (G.rmr && ibv_dereg_mr(G.rmr)) ||
	    (G.cq && ibv_destroy_cq(G.cq)) || (G.pd && ibv_dealloc_pd(G.pd)) ||
	    (G.ctx && ibv_close_device(G.ctx)))
		err = 1;
	checkf("teardown_clean", !err, "destroying the QPs, regions, CQ, PD or context failed");
}

int main(int argc, char **argv)
{
	struct counters before, after;
	struct timeval tv = { .tv_sec = DONE_WAIT_S };
	char line[256], wt[16] = "";
	int sent = -1, replies = -1, j_nak;

	if (argc != 4) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX TCP_PORT\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	G.dev = argv[1];
	G.gid_index = atoi(argv[2]);
	if (setup_local()) {
		check("target_setup", 0, "local setup failed");
		return 1;
	}
	counters_read(&before);
	if (setup_peer(argv[3]))
		return 1;
	setsockopt(G.sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (tcp_line(G.sock, line, sizeof(line)) ||
	    sscanf(line, "DONE sent=%d replies=%d wrong_transport=%15s", &sent, &replies, wt) != 3) {
		checkf("peer_done", 0, "no DONE from live_peer in %d s ('%s')", DONE_WAIT_S, line);
		sent = replies = -1;
	} else {
		check("peer_done", 1, "");
	}
	counters_read(&after);
	counters_print(&before, &after);
	j_nak = !strcmp(wt, "nak");
	check_states(j_nak);
	check_flushes(j_nak);
	check_region(!j_nak);
	check_counters(&before, &after, sent, replies);
	check_loopback();
	close(G.sock);
	teardown();
	return failed ? 1 : 0;
}
