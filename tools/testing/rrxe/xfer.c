// SPDX-License-Identifier: GPL-2.0
/*
 * xfer: byte-exact data check of RDMA traffic between two hosts (or guests).
 *
 * Lockstep ping-pong of -n messages of -s bytes over RC, UC or UD (-t): in iteration i the
 * client transfers its message i to the server, which checks it, then the server transfers
 * its own message i back and the client checks it. Byte j of message i of side S (0 client,
 * 1 server) is a hash of (S, i, j): a lost, misplaced, duplicated, stale or shifted byte
 * shows. -o send: SEND into a posted receive (UD: after 40 bytes of GRH room); -o write_imm:
 * RDMA WRITE with immediate htonl(i) into the peer's buffer, a 0-SGE receive takes the
 * immediate; -o read (RC): the server fills its buffer and writes "r <i>" on the TCP socket,
 * the client RDMA READs it, checks it and answers "k <i>".
 * Receive buffers are filled with the complement of the expected data before the receive
 * is posted. -S NSGE cuts each local buffer into NSGE pieces of uneven, odd lengths at odd
 * addresses, cut differently on the sending and the receiving side, with guard bytes (0xA5)
 * around them that are checked after every receive (a remote range is one piece). Every
 * completion is checked (status, opcode, wr_id, qp_num, byte_len, imm, src_qp, GRH flag);
 * every send is signaled and waited for. A receive is always posted before the peer may
 * send into it (the first one before the QP details go out): UC and UD are deterministic.
 * -x ITER: the sender(s) of iteration ITER flip a byte after filling it (must then fail).
 * -L ITER:CMD (send and write_imm): the acknowledgements of the server's messages ITER and
 * later are lost. In each such iteration the client runs `CMD on` once its own message was
 * acknowledged and `CMD off` once the server's message has arrived, and the server waits 1 s
 * before it sends that message, so CMD (e.g. a netem qdisc dropping the client's egress) is
 * in force while the message arrives: all of it reaches the client, none of its ACKs the
 * server, whose retransmit timer then resends what already arrived (duplicates, answered by
 * ACKs again once CMD is off).
 *
 * QP details go over TCP as for ibv_rc_pingpong ("LID:QPN:PSN:GID", plus buffer address,
 * rkey, and transport, operation, size and count, which must agree). The connection stays
 * open: at the end or on a failure each side writes "done <0|1> <iterations completed>"
 * (its own checks) and reads the peer's before it destroys anything, so its QP answers while
 * the peer still waits for completions; a peer that completed all iterations has started
 * everything we wait for, so its "done" only ends our wait if it stopped early.
 * -O: the memory is registered for on-demand paging (IBV_ACCESS_ON_DEMAND) and mapped fresh
 * (mmap): nothing of it is present for the device until it faults it in. -R (with -O): a
 * racer thread invalidates the region all along (fork(), which write-protects every
 * private page and so invalidates the device's mapping without changing the data, and
 * MADV_DONTNEED of spare pages at the end of the same region), while the traffic's data is
 * checked as always; the number of invalidation rounds is printed.
 * Completions are waited for at most -T s, polling or (-e) through a completion channel,
 * the socket watched meanwhile. Exit status 0 only if all checks of this side passed and
 * the peer reported "done 0".
 *
 * Usage: xfer server|client -d DEV -g GIDIDX [-p PORT] [-t rc|uc|ud] [-o send|write_imm|read]
 *             [-s SIZE] [-n ITERS] [-m MTU] [-S NSGE] [-e] [-x ITER] [-L ITER:CMD]
 *             [-T SECS] [-O [-R]] [-q] [SERVER_ADDRESS (client)]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "rrxe_test.h"

#define GRH_LEN		40
#define GUARD		0xA5
#define GRH_POISON	0x5A
#define UD_QKEY		0x11111111
#define MAX_SGE		4
#define MAX_SIZE	(1u << 30)	/* 1 GiB: make bench-read-large */
#define SPARE		(16 * 4096)	/* -O: pages at the end of the region the racer drops */
#define WRID(i, k)	(((uint64_t)(i) << 8) | (k))	/* k: 1 send queue, 2 receive queue */

enum { TP_RC, TP_UC, TP_UD };
enum { OP_SEND, OP_WRITE_IMM, OP_READ };
static const char *const tp_name[] = { "rc", "uc", "ud" };
static const char *const op_name[] = { "send", "write_imm", "read" };
static const enum ibv_qp_type qp_type[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };

struct dest {
	unsigned int lid, qpn, psn, rkey, tp, op, size, iters;
	uint64_t addr;
	union ibv_gid gid;
};

/*
 * A local buffer: a stream of len bytes (pre bytes of GRH room, then the message) cut
 * into nsge pieces; piece m holds stream bytes cut[m] .. cut[m + 1] - 1 at base + off[m].
 * All other bytes of the area's total are guard bytes.
 */
struct area {
	uint8_t *base;
	size_t total, len, pre;
	int nsge;
	size_t cut[MAX_SGE + 1], off[MAX_SGE];
};

static struct {
	const char *who;
	int is_server, tp, op, events, quiet, xset, sock, talking, peer_done, told, odp, race;
	size_t map_len;
	pthread_t racer;
	volatile int stop_racer;
	unsigned long rounds;
	unsigned int size, iters, xiter, tmo, done_iters, peer_iters, liter;
	const char *lcmd;
	struct ibv_context *dev;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	uint8_t *buf, *ref;
	struct area tx, rx;
	struct dest me, peer;
	unsigned long long verified, errors;
} g = { .sock = -1, .peer_done = -1 };

/* Reports a failed check of this side: counts it, returns -1. */
__attribute__((format(printf, 1, 2)))
static int fail(const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", g.who);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	g.errors++;
	return -1;
}

/* --- data pattern and buffer layout ------------------------------------------------- */

static uint32_t mix32(uint32_t x)	/* murmur3's finalizer: a bijection */
{
	x ^= x >> 16;
	x *= 0x85ebca6b;
	x ^= x >> 13;
	x *= 0xc2b2ae35;
	x ^= x >> 16;
	return x;
}

/* Message @iter of @side: byte j is byte j & 3 of mix32(seed(side, iter) + j / 4). */
static void gen(uint8_t *ref, size_t len, int side, unsigned int iter)
{
	uint32_t seed = mix32(((uint32_t)side << 31) ^ (iter * 0x9E3779B1u) ^ 0x6a09e667u);

	for (size_t j = 0; j < len; j += 4) {
		uint32_t v = mix32(seed + (uint32_t)(j >> 2));

		for (size_t b = 0; b < 4 && j + b < len; b++)
			ref[j + b] = v >> (8 * b);
	}
}

/* Lays out @nsge pieces for @pre + @msg bytes; @role 0 (gather) and 1 (scatter) differ. */
static size_t area_layout(struct area *a, size_t pre, size_t msg, int nsge, int role)
{
	static const unsigned int w[2][MAX_SGE] = { { 3, 1, 4, 2 }, { 2, 5, 1, 3 } };
	unsigned int sum = 0, cum = 0;
	size_t pos = 0;
	int m;

	a->pre = pre;
	a->len = pre + msg;
	a->nsge = nsge;
	for (m = 0; m < nsge; m++)
		sum += w[role][m];
	a->cut[0] = 0;
	a->cut[nsge] = a->len;
	for (m = 1; m < nsge; m++) {
		size_t c;

		cum += w[role][m - 1];
		c = (size_t)((uint64_t)a->len * cum / sum) | 1;	/* odd: unaligned */
		if (c < a->cut[m - 1] + 1)
			c = a->cut[m - 1] + 1;
		if (c > a->len - (nsge - m))			/* >= 1 byte a piece */
			c = a->len - (nsge - m);
		a->cut[m] = c;
	}
	for (m = 0; m < nsge; m++) {
		pos = (pos + 6 + 6 * m + 2 * role) | 1;	/* >= 6 guard bytes, odd address */
		a->off[m] = pos;
		pos += a->cut[m + 1] - a->cut[m];
	}
	a->total = pos + 9;
	return a->total;
}

static void area_sges(const struct area *a, struct ibv_sge *sg)
{
	for (int m = 0; m < a->nsge; m++) {
		sg[m].addr = (uintptr_t)(a->base + a->off[m]);
		sg[m].length = a->cut[m + 1] - a->cut[m];
		sg[m].lkey = g.mr->lkey;
	}
}

/* Message byte j := ref[j] ^ inv (GRH room: GRH_POISON); guard bytes are not touched. */
static void area_fill(const struct area *a, const uint8_t *ref, uint8_t inv)
{
	for (int m = 0; m < a->nsge; m++) {
		uint8_t *p = a->base + a->off[m];

		for (size_t j = a->cut[m]; j < a->cut[m + 1]; j++)
			*p++ = j < a->pre ? GRH_POISON : ref[j - a->pre] ^ inv;
	}
}

static uint8_t *area_byte(const struct area *a, size_t j)
{
	int m = 0;

	j += a->pre;
	while (j >= a->cut[m + 1])
		m++;
	return a->base + a->off[m] + (j - a->cut[m]);
}

/* Checks the message against @ref and all guard bytes; counts the bad bytes as errors. */
static void area_check(const struct area *a, const uint8_t *ref, unsigned int iter)
{
	size_t bad = 0, gbad = 0, first = 0, gfirst = 0, pos = 0;

	for (int m = 0; m <= a->nsge; m++) {
		size_t end = m < a->nsge ? a->off[m] : a->total;

		for (; pos < end; pos++)
			if (a->base[pos] != GUARD && !gbad++)
				gfirst = pos;
		if (m == a->nsge)
			break;
		for (size_t j = a->cut[m]; j < a->cut[m + 1]; j++, pos++)
			if (j >= a->pre && a->base[pos] != ref[j - a->pre] && !bad++)
				first = j - a->pre;
	}
	if (bad) {
		fail("iteration %u: data mismatch: %zu bad bytes, first at offset %zu: expected 0x%02x, got 0x%02x",
		     iter, bad, first, ref[first], *area_byte(a, first));
		g.errors += bad - 1;
	}
	if (gbad) {
		fail("iteration %u: %zu guard bytes changed, first at buffer offset %zu: 0x%02x",
		     iter, gbad, gfirst, a->base[gfirst]);
		g.errors += gbad - 1;
	}
	g.verified += a->len - a->pre;
}

/* -x: flips one byte of the message just filled in @a. */
static void corrupt(const struct area *a, unsigned int iter)
{
	if (!g.xset || iter != g.xiter)
		return;
	*area_byte(a, g.size / 2) ^= 0x5A;
	if (!g.quiet)
		printf("%s: iteration %u: byte %u of the message corrupted\n", g.who, iter,
		       g.size / 2);
}

/* --- TCP socket ------------------------------------------------------------------------ */

static int sock_line(char *line, size_t len)
{
	size_t n = 0;
	char ch;

	for (;;) {
		if (read_full(g.sock, &ch, 1))
			return -1;
		if (ch == '\n')
			break;
		if (n + 1 >= len)
			return -1;
		line[n++] = ch;
	}
	line[n] = 0;
	return 0;
}

static int sock_printf(const char *fmt, unsigned int v, unsigned int w)
{
	char line[48];

	snprintf(line, sizeof(line), fmt, v, w);
	return write_full(g.sock, line, strlen(line));
}

/* A "done <status> <iterations>" line: records it, returns 1. */
static int take_done(const char *line)
{
	unsigned int n = 0;
	int v;

	if (sscanf(line, "done %d %u", &v, &n) < 1)
		return 0;
	g.peer_done = v != 0;
	g.peer_iters = n;
	return 1;
}

/* The peer wrote "done" before we expected it: not a failed check of ours. */
static int peer_stopped(unsigned int iter)
{
	printf("%s: iteration %u: the peer stopped after %u iterations (done %d), giving up\n",
	       g.who, iter, g.peer_iters, g.peer_done);
	g.told = 1;
	return -1;
}

/* The socket is readable while we wait: only the peer's "done" may come. */
static int peer_event(unsigned int iter)
{
	char line[64];

	if (sock_line(line, sizeof(line)))
		return fail("iteration %u: connection to the peer lost", iter);
	if (!take_done(line))
		return fail("iteration %u: unexpected line from the peer: %s", iter, line);
	/* All done there (maybe with errors): our last completion is on its way. */
	return g.peer_iters < g.iters ? peer_stopped(iter) : 0;
}

/* "LID:QPN:PSN:GID:ADDR:RKEY:TPOP:SIZE:ITERS", fixed width. */
#define MSG_SIZE (sizeof("0000:000000:000000:00000000000000000000000000000000:" \
			 "0000000000000000:00000000:00:00000000:00000000"))

static void dest_to_msg(const struct dest *d, char *msg)
{
	char gid[33];

	gid_to_hex(&d->gid, gid);
	snprintf(msg, MSG_SIZE, "%04x:%06x:%06x:%s:%016" PRIx64 ":%08x:%x%x:%08x:%08x",
		 d->lid & 0xffff, d->qpn, d->psn, gid, d->addr, d->rkey, d->tp, d->op, d->size,
		 d->iters);
}

static int msg_to_dest(char *msg, struct dest *d)
{
	char gid[33];

	msg[MSG_SIZE - 1] = 0;
	if (sscanf(msg, "%x:%x:%x:%32[0-9a-fA-F]:%" SCNx64 ":%x:%1x%1x:%x:%x", &d->lid, &d->qpn,
		   &d->psn, gid, &d->addr, &d->rkey, &d->tp, &d->op, &d->size, &d->iters) != 10)
		return -1;
	return gid_from_hex(gid, &d->gid);
}

static void print_dest(const char *what, const struct dest *d)
{
	char gidstr[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, &d->gid, gidstr, sizeof(gidstr));
	printf("  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s, addr 0x%" PRIx64 ", rkey 0x%08x\n",
	       what, d->lid, d->qpn, d->psn, gidstr, d->addr, d->rkey);
}

/* Server: listen and accept; client: connect. Returns the socket or -1. */
static int tcp_connect(const char *server, const char *port)
{
	/* The peer may wait up to -T s for a completion before it answers. */
	struct timeval tv = { .tv_sec = 2 * g.tmo + 10 };
	int one = 1, sock = tcp_rendezvous(g.is_server, server, port);

	if (sock < 0)
		return -1;
	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return sock;
}

/* --- completions ------------------------------------------------------------------------ */

/* Waits at most -T s for one completion on @cq, watching the socket meanwhile. */
static int wait_cq(struct ibv_cq *cq, struct ibv_wc *wc, const char *what, unsigned int iter)
{
	double end = now_s() + g.tmo;

	for (;;) {
		/* poll() ignores negative fds: the socket once the peer is done, no channel. */
		struct pollfd p[2] = { { .fd = g.peer_done < 0 ? g.sock : -1, .events = POLLIN },
				       { .fd = g.ch ? g.ch->fd : -1, .events = POLLIN } };
		int n = g.ch ? ibv_poll_cq(cq, 1, wc) : poll_one(cq, wc, 0.05);
		struct ibv_cq *ev_cq;
		void *ev_ctx;

		if (!n && g.ch) {
			if (ibv_req_notify_cq(cq, 0))
				return fail("iteration %u: ibv_req_notify_cq failed", iter);
			n = ibv_poll_cq(cq, 1, wc);	/* one may have come before arming */
		}
		if (n)
			return n < 0 ? fail("iteration %u: ibv_poll_cq failed", iter) : 0;
		if (now_s() > end)
			return fail("iteration %u: no %s completion within %u s", iter, what, g.tmo);
		if (poll(p, 2, g.ch ? (int)((end - now_s()) * 1000) + 1 : 0) < 0 && errno != EINTR)
			return fail("iteration %u: poll: %s", iter, strerror(errno));
		if (p[1].revents & POLLIN) {
			if (ibv_get_cq_event(g.ch, &ev_cq, &ev_ctx))
				return fail("iteration %u: ibv_get_cq_event failed", iter);
			/* Maybe the other CQ's: that one is armed again before it is waited on. */
			ibv_ack_cq_events(ev_cq, 1);
		}
		if (p[0].revents && peer_event(iter))
			return -1;
	}
}

static int check_wc(const struct ibv_wc *wc, uint64_t wr_id, enum ibv_wc_opcode opcode,
		    unsigned int len, unsigned int iter)
{
	if (wc->status == IBV_WC_SUCCESS && wc->wr_id == wr_id && wc->opcode == opcode &&
	    (!len || wc->byte_len == len) && wc->qp_num == g.qp->qp_num)
		return 0;
	return fail("iteration %u: bad completion: status %s (%d), vendor_err 0x%x, wr_id 0x%" PRIx64
		    " (want 0x%" PRIx64 "), opcode %d (want %d), byte_len %u (want %u), qp_num 0x%06x",
		    iter, ibv_wc_status_str(wc->status), wc->status, wc->vendor_err, wc->wr_id,
		    wr_id, wc->opcode, opcode, wc->byte_len, len, wc->qp_num);
}

/* --- one step of an iteration ----------------------------------------------------------- */

/* Posts the receive for the peer's message @iter, its buffer poisoned first. */
static int post_recv(unsigned int iter)
{
	struct ibv_sge sg[MAX_SGE];
	struct ibv_recv_wr wr = { .wr_id = WRID(iter, 2) }, *bad;
	int ret;

	gen(g.ref, g.size, !g.is_server, iter);
	area_fill(&g.rx, g.ref, 0xff);
	if (g.op == OP_SEND) {
		area_sges(&g.rx, sg);
		wr.sg_list = sg;
		wr.num_sge = g.rx.nsge;
	}
	ret = ibv_post_recv(g.qp, &wr, &bad);
	return ret ? fail("iteration %u: ibv_post_recv: %s", iter, strerror(ret)) : 0;
}

/* Posts @wr (signaled, wr_id WRID(iter, 1)) and checks its completion. */
static int post_wait(struct ibv_send_wr *wr, enum ibv_wc_opcode opcode, unsigned int len,
		     unsigned int iter)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int ret;

	wr->wr_id = WRID(iter, 1);
	wr->send_flags = IBV_SEND_SIGNALED;
	ret = ibv_post_send(g.qp, wr, &bad);
	if (ret)
		return fail("iteration %u: ibv_post_send: %s", iter, strerror(ret));
	if (wait_cq(g.scq, &wc, opcode == IBV_WC_RDMA_READ ? "read" : "send", iter))
		return -1;
	return check_wc(&wc, WRID(iter, 1), opcode, len, iter);
}

/* SEND or WRITE WITH IMMEDIATE of our message @iter; waits for its completion. */
static int xmit(unsigned int iter)
{
	struct ibv_sge sg[MAX_SGE];
	struct ibv_send_wr wr = { .sg_list = sg, .num_sge = g.tx.nsge };

	gen(g.ref, g.size, g.is_server, iter);
	area_fill(&g.tx, g.ref, 0);
	corrupt(&g.tx, iter);
	area_sges(&g.tx, sg);
	if (g.op == OP_SEND) {
		wr.opcode = IBV_WR_SEND;
		if (g.tp == TP_UD) {
			wr.wr.ud.ah = g.ah;
			wr.wr.ud.remote_qpn = g.peer.qpn;
			wr.wr.ud.remote_qkey = UD_QKEY;
		}
	} else {
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl(iter);
		wr.wr.rdma.remote_addr = g.peer.addr;
		wr.wr.rdma.rkey = g.peer.rkey;
	}
	/* byte_len of a send completion is undefined: not checked. */
	return post_wait(&wr, g.op == OP_SEND ? IBV_WC_SEND : IBV_WC_RDMA_WRITE, 0, iter);
}

/* The peer's message @iter: its completion, its data; then the next receive. */
static int recv_check(unsigned int iter)
{
	unsigned int len = g.size + (g.tp == TP_UD ? GRH_LEN : 0);
	int imm = g.op == OP_WRITE_IMM;
	struct ibv_wc wc;

	if (wait_cq(g.rcq, &wc, "receive", iter) ||
	    check_wc(&wc, WRID(iter, 2), imm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV, len, iter))
		return -1;
	if (!!(wc.wc_flags & IBV_WC_WITH_IMM) != imm || (imm && ntohl(wc.imm_data) != iter))
		return fail("iteration %u: wc_flags 0x%x, imm_data 0x%08x", iter, wc.wc_flags,
			    ntohl(wc.imm_data));
	if (g.tp == TP_UD && (wc.src_qp != g.peer.qpn || !(wc.wc_flags & IBV_WC_GRH)))
		return fail("iteration %u: src_qp 0x%06x (want 0x%06x), wc_flags 0x%x", iter,
			    wc.src_qp, g.peer.qpn, wc.wc_flags);
	gen(g.ref, g.size, !g.is_server, iter);
	area_check(&g.rx, g.ref, iter);
	return iter + 1 < g.iters ? post_recv(iter + 1) : 0;
}

/* -o read: the peer's next line must be "<tag> <iter>". */
static int expect(char tag, unsigned int iter)
{
	char line[64], t;
	unsigned int k;

	if (sock_line(line, sizeof(line)))
		return fail("iteration %u: connection to the peer lost", iter);
	if (take_done(line))
		return peer_stopped(iter);
	if (sscanf(line, "%c %u", &t, &k) != 2 || t != tag || k != iter)
		return fail("iteration %u: unexpected line from the peer: %s", iter, line);
	return 0;
}

/* -o read, server: offer message @iter, wait until the client has read it. */
static int serve_read(unsigned int iter)
{
	gen(g.ref, g.size, 1, iter);
	area_fill(&g.tx, g.ref, 0);
	corrupt(&g.tx, iter);
	if (sock_printf("r %u\n", iter, 0))
		return fail("iteration %u: connection to the peer lost", iter);
	return expect('k', iter);
}

/* -o read, client: RDMA READ of the server's message @iter once it is offered. */
static int do_read(unsigned int iter)
{
	struct ibv_sge sg[MAX_SGE];
	struct ibv_send_wr wr = { .sg_list = sg, .num_sge = g.rx.nsge, .opcode = IBV_WR_RDMA_READ };

	gen(g.ref, g.size, 1, iter);
	area_fill(&g.rx, g.ref, 0xff);
	if (expect('r', iter))
		return -1;
	area_sges(&g.rx, sg);
	wr.wr.rdma.remote_addr = g.peer.addr;
	wr.wr.rdma.rkey = g.peer.rkey;
	if (post_wait(&wr, IBV_WC_RDMA_READ, g.size, iter))
		return -1;
	area_check(&g.rx, g.ref, iter);
	if (sock_printf("k %u\n", iter, 0))
		return fail("iteration %u: connection to the peer lost", iter);
	return 0;
}

/* -L: runs `<CMD> <arg>` for iteration @iter; 0 if it exited 0. */
static int lose_hook(unsigned int iter, const char *arg)
{
	char cmd[512];
	int ret;

	snprintf(cmd, sizeof(cmd), "%s %s", g.lcmd, arg);
	printf("%s: iteration %u: %s\n", g.who, iter, cmd);
	fflush(stdout);
	ret = system(cmd);
	return ret ? fail("iteration %u: '%s' exited with status %d", iter, cmd, ret) : 0;
}

/* One iteration of send or write_imm, with -L's hook and pause from iteration ITER on. */
static int exchange(unsigned int i)
{
	int lose = g.lcmd && i >= g.liter;

	if (g.is_server) {
		if (recv_check(i))
			return -1;
		if (lose)
			usleep(1000000);
		return xmit(i);
	}
	if (xmit(i) || (lose && lose_hook(i, "on")))
		return -1;
	if (recv_check(i)) {
		if (lose)
			lose_hook(i, "off");
		return -1;
	}
	return lose ? lose_hook(i, "off") : 0;
}

/* --- setup and teardown ---------------------------------------------------------------- */

static int setup_verbs(const char *devname, int gid_index)
{
	/*
	 * One send at a time (each is waited for), in a send queue of one WQE as
	 * ibv_rc_pingpong's: rdma_rxe's ring of two slots is where its early completion of a
	 * WQE it still resends left its requester with nothing to send (issue 37).
	 */
	struct ibv_qp_init_attr ia = { .qp_type = qp_type[g.tp],
		.cap = { .max_send_wr = 1, .max_recv_wr = 2 } };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = UD_QKEY,
		.qp_access_flags = g.op == OP_READ ? IBV_ACCESS_REMOTE_READ :
				   g.op == OP_WRITE_IMM ? IBV_ACCESS_REMOTE_WRITE : 0 };
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr pa;
	size_t total;
	void *mem;
	int ret;

	/* READ scatters into rx on the send queue: both queues take the larger count. */
	ia.cap.max_send_sge = ia.cap.max_recv_sge = g.tx.nsge > g.rx.nsge ? g.tx.nsge : g.rx.nsge;
	/* open_dev() would hand a NULL list (no RDMA at all) to ibv_free_device_list(). */
	if (!list)
		return fail("no RDMA devices: %s", strerror(errno));
	ibv_free_device_list(list);
	g.dev = open_dev(devname);
	if (!g.dev)
		return fail("cannot open %s", devname);
	ret = ibv_query_port(g.dev, 1, &pa);
	if (ret || ibv_query_gid(g.dev, 1, gid_index, &g.me.gid))
		return fail("query port / gid %d: %s", gid_index, strerror(ret ? ret : errno));
	if (g.tp == TP_UD && g.size > (128u << pa.active_mtu))
		return fail("UD message of %u bytes > active MTU %u", g.size, 128u << pa.active_mtu);
	total = g.tx.total + g.rx.total;
	g.ref = malloc(g.size);
	if (!g.ref)
		return fail("out of memory");
	if (g.odp) {
		/* Fresh pages, registered before they are touched. */
		g.map_len = (total + 4095) / 4096 * 4096 + SPARE;
		mem = mmap(NULL, g.map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
		if (mem == MAP_FAILED)
			return fail("mmap: %s", strerror(errno));
	} else if (posix_memalign(&mem, 4096, total)) {
		return fail("out of memory");
	}
	g.buf = mem;
	memset(g.buf, GUARD, total);
	g.tx.base = g.buf;
	g.rx.base = g.buf + g.tx.total;
	if (g.events) {
		g.ch = ibv_create_comp_channel(g.dev);
		if (!g.ch)
			return fail("ibv_create_comp_channel: %s", strerror(errno));
	}
	g.pd = ibv_alloc_pd(g.dev);
	if (!g.pd)
		return fail("ibv_alloc_pd: %s", strerror(errno));
	g.scq = ibv_create_cq(g.dev, 4, NULL, g.ch, 0);
	g.rcq = g.scq ? ibv_create_cq(g.dev, 4, NULL, g.ch, 0) : NULL;
	if (!g.rcq)
		return fail("ibv_create_cq: %s", strerror(errno));
	if (g.odp) {
		/* Registered before anything is written to it: nothing is present yet. */
		munmap(g.buf, g.map_len);
		mem = mmap(g.buf, g.map_len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (mem == MAP_FAILED)
			return fail("mmap: %s", strerror(errno));
		g.mr = ibv_reg_mr(g.pd, g.buf, g.map_len, IBV_ACCESS_LOCAL_WRITE |
				  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_ON_DEMAND);
		if (g.mr)
			memset(g.buf, GUARD, total);
	} else {
		g.mr = ibv_reg_mr(g.pd, g.buf, total, IBV_ACCESS_LOCAL_WRITE |
				  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	}
	if (!g.mr)
		return fail("ibv_reg_mr: %s", strerror(errno));
	ia.send_cq = g.scq;
	ia.recv_cq = g.rcq;
	g.qp = ibv_create_qp(g.pd, &ia);
	if (!g.qp)
		return fail("ibv_create_qp: %s", strerror(errno));
	ret = ibv_modify_qp(g.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    (g.tp == TP_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS));
	if (ret)
		return fail("modify QP to INIT: %s", strerror(ret));
	g.me.lid = pa.lid;
	g.me.qpn = g.qp->qp_num;
	g.me.psn = lrand48() & 0xffffff;
	g.me.addr = (uintptr_t)(g.op == OP_READ ? g.tx.base + g.tx.off[0] : g.rx.base + g.rx.off[0]);
	g.me.rkey = g.mr->rkey;
	g.me.tp = g.tp;
	g.me.op = g.op;
	g.me.size = g.size;
	g.me.iters = g.iters;
	return 0;
}

static int connect_qp(int gid_index, enum ibv_mtu mtu)
{
	struct ibv_ah_attr ah = { .is_global = 1, .port_num = 1, .dlid = g.peer.lid,
		.grh = { .dgid = g.peer.gid, .sgid_index = gid_index, .hop_limit = 64 } };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR, .path_mtu = mtu,
		.dest_qp_num = g.peer.qpn, .rq_psn = g.peer.psn, .max_dest_rd_atomic = 1,
		.min_rnr_timer = 12, .ah_attr = ah };
	int rtr = IBV_QP_STATE, rts = IBV_QP_STATE | IBV_QP_SQ_PSN, ret;

	if (g.tp == TP_UD) {
		g.ah = ibv_create_ah(g.pd, &ah);
		if (!g.ah)
			return fail("ibv_create_ah: %s", strerror(errno));
	} else {
		rtr |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	}
	if (g.tp == TP_RC) {
		rtr |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		rts |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	ret = ibv_modify_qp(g.qp, &a, rtr);
	if (ret)
		return fail("modify QP to RTR: %s", strerror(ret));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = g.me.psn;
	a.max_rd_atomic = 1;
	ret = ibv_modify_qp(g.qp, &a, rts);
	return ret ? fail("modify QP to RTS: %s", strerror(ret)) : 0;
}

/* Destroys what exists; 0 or -1. */
static int teardown(void)
{
	int ret = 0, r;

#define DESTROY(obj, call) \
	do { \
		r = (obj) ? call(obj) : 0; \
		if (r) \
			ret = fail(#call ": %s", strerror(r > 0 ? r : errno)); \
	} while (0)
	DESTROY(g.qp, ibv_destroy_qp);
	DESTROY(g.ah, ibv_destroy_ah);
	DESTROY(g.scq, ibv_destroy_cq);
	DESTROY(g.rcq, ibv_destroy_cq);
	DESTROY(g.ch, ibv_destroy_comp_channel);
	DESTROY(g.mr, ibv_dereg_mr);
	DESTROY(g.pd, ibv_dealloc_pd);
	DESTROY(g.dev, ibv_close_device);
#undef DESTROY
	if (g.odp)
		munmap(g.buf, g.map_len);
	else
		free(g.buf);
	free(g.ref);
	return ret;
}

/* "done <failed> <n>" to the peer, then the peer's (unless it came): 0 if it says 0. */
static int finish(int failed)
{
	char line[64];

	if (sock_printf("done %u %u\n", !!failed, g.done_iters)) {
		fail("cannot send done to the peer");
		return -1;
	}
	while (g.peer_done < 0) {
		if (sock_line(line, sizeof(line))) {
			fail("no done from the peer (connection lost)");
			return -1;
		}
		take_done(line);	/* -o read: an "r"/"k" line may come before it */
	}
	if (g.peer_done && !g.told)
		printf("%s: the peer reported failure\n", g.who);
	return g.peer_done ? -1 : 0;
}

/* --- main ------------------------------------------------------------------------------- */

__attribute__((noreturn))
static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s server|client -d DEV -g GIDIDX [-p PORT] [-t rc|uc|ud]\n"
		"          [-o send|write_imm|read] [-s SIZE] [-n ITERS] [-m MTU] [-S NSGE] [-e]\n"
		"          [-x ITER] [-L ITER:CMD] [-T SECS] [-q] [SERVER_ADDRESS (client)]\n", argv0);
	exit(2);
}

static unsigned int num(const char *s, unsigned long lo, unsigned long hi, const char *argv0)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi) {
		fprintf(stderr, "bad number: %s (%lu..%lu)\n", s, lo, hi);
		usage(argv0);
	}
	return v;
}

static int pick(const char *s, const char *const *names, int n, const char *argv0)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	fprintf(stderr, "unknown value: %s\n", s);
	usage(argv0);
	return -1;
}

/* -R: invalidates the ODP region until told to stop (see the top comment). */
static void *racer(void *arg)
{
	uint8_t *spare = arg;

	while (!g.stop_racer) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		if (pid > 0)
			waitpid(pid, NULL, 0);
		spare[g.rounds % SPARE] = 1;
		madvise(spare, SPARE, MADV_DONTNEED);
		g.rounds++;
		usleep(20000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *devname = NULL, *server = NULL, *port = "18800";
	unsigned int gid_index = 256, mtu_bytes = 1024, nsge = 1;
	int opt, failed = 0, ok = 0;
	enum ibv_mtu mtu;
	char msg[MSG_SIZE];

	g.size = 4096;
	g.iters = 10;
	g.tmo = 60;
	if (argc < 2)
		usage(argv[0]);
	if (!strcmp(argv[1], "server"))
		g.is_server = 1;
	else if (strcmp(argv[1], "client"))
		usage(argv[0]);
	g.who = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "d:g:p:t:o:s:n:m:S:ex:L:T:ORq")) != -1) {
		switch (opt) {
		case 'd': devname = optarg; break;
		case 'g': gid_index = num(optarg, 0, 255, argv[0]); break;
		case 'p': port = optarg; break;
		case 't': g.tp = pick(optarg, tp_name, 3, argv[0]); break;
		case 'o': g.op = pick(optarg, op_name, 3, argv[0]); break;
		case 's': g.size = num(optarg, 1, MAX_SIZE, argv[0]); break;
		case 'n': g.iters = num(optarg, 1, 100000000, argv[0]); break;
		case 'm': mtu_bytes = num(optarg, 256, 4096, argv[0]); break;
		case 'S': nsge = num(optarg, 1, MAX_SGE, argv[0]); break;
		case 'e': g.events = 1; break;
		case 'x': g.xiter = num(optarg, 0, 100000000, argv[0]); g.xset = 1; break;
		case 'L': {
			char *colon = strchr(optarg, ':');

			if (!colon || !colon[1])
				usage(argv[0]);
			*colon = 0;
			g.liter = num(optarg, 0, 100000000, argv[0]);
			g.lcmd = colon + 1;
			break;
		}
		case 'T': g.tmo = num(optarg, 1, 3600, argv[0]); break;
		case 'O': g.odp = 1; break;
		case 'R': g.race = 1; break;
		case 'q': g.quiet = 1; break;
		default: usage(argv[0]);
		}
	}
	if (!g.is_server) {
		if (optind != argc - 1)
			usage(argv[0]);
		server = argv[optind];
	} else if (optind != argc) {
		usage(argv[0]);
	}
	for (mtu = IBV_MTU_256; mtu < IBV_MTU_4096 && (128u << mtu) != mtu_bytes; mtu++)
		;
	if (!devname || gid_index > 255 || (128u << mtu) != mtu_bytes ||
	    (g.op == OP_WRITE_IMM && g.tp == TP_UD) || (g.op == OP_READ && g.tp != TP_RC) ||
	    (g.tp == TP_UD && g.size > mtu_bytes) || nsge > g.size || (g.xset && g.xiter >= g.iters) ||
	    (g.lcmd && (g.liter >= g.iters || g.op == OP_READ)) || (g.race && !g.odp)) {
		fprintf(stderr, "need -d and -g; MTU a power of 2; write_imm: rc or uc; read: rc;\n"
			"ud: SIZE <= MTU; NSGE <= SIZE; -x ITER < ITERS; -L ITER < ITERS, not read;\n"
			"-R needs -O\n");
		usage(argv[0]);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	srand48(getpid() ^ time(NULL));
	/* -o read: the served buffer (tx) is one piece, the client reads into pieces. */
	area_layout(&g.tx, 0, g.size, g.op == OP_READ ? 1 : nsge, 0);
	area_layout(&g.rx, g.tp == TP_UD ? GRH_LEN : 0, g.size, g.op == OP_WRITE_IMM ? 1 : nsge, 1);

	/* The first receive goes before our QP details, so the peer can never outrun it. */
	if (setup_verbs(devname, gid_index) || (g.op != OP_READ && post_recv(0)))
		goto out;
	if (!g.quiet) {
		printf("%s: %s %s, %u B x %u, MTU %u, %u SGEs, %s\n", g.who, tp_name[g.tp],
		       op_name[g.op], g.size, g.iters, mtu_bytes, nsge,
		       g.events ? "completion channel" : "polling");
		print_dest("local address: ", &g.me);
	}
	g.sock = tcp_connect(server, port);
	if (g.sock < 0) {
		teardown();
		return 1;
	}
	dest_to_msg(&g.me, msg);
	if (g.is_server) {
		/* Our QP goes to RTS before the client hears of it. */
		if (read_full(g.sock, msg, sizeof(msg)) || msg_to_dest(msg, &g.peer)) {
			fail("Couldn't read remote address");
			goto out;
		}
		if (connect_qp(gid_index, mtu))
			goto out;
		dest_to_msg(&g.me, msg);
		if (write_full(g.sock, msg, sizeof(msg))) {
			fail("Couldn't send local address");
			goto out;
		}
	} else if (write_full(g.sock, msg, sizeof(msg)) || read_full(g.sock, msg, sizeof(msg)) ||
		   msg_to_dest(msg, &g.peer)) {
		fail("Couldn't exchange addresses");
		goto out;
	}
	g.talking = 1;
	if (!g.quiet)
		print_dest("remote address:", &g.peer);
	if (g.peer.tp != g.me.tp || g.peer.op != g.me.op || g.peer.size != g.size ||
	    g.peer.iters != g.iters) {
		fail("the peer runs %s %s %u B x %u", g.peer.tp < 3 ? tp_name[g.peer.tp] : "?",
		     g.peer.op < 3 ? op_name[g.peer.op] : "?", g.peer.size, g.peer.iters);
		goto out;
	}
	if (!g.is_server && connect_qp(gid_index, mtu))
		goto out;
	if (g.race && pthread_create(&g.racer, NULL, racer, g.buf + g.map_len - SPARE)) {
		fail("pthread_create");
		goto out;
	}

	for (unsigned int i = 0; i < g.iters; i++) {
		int ret;

		if (g.op == OP_READ)
			ret = g.is_server ? serve_read(i) : do_read(i);
		else
			ret = exchange(i);
		if (ret)
			goto out;
		g.done_iters = i + 1;
	}
	ok = 1;
out:
	if (g.race && g.racer) {
		g.stop_racer = 1;
		pthread_join(g.racer, NULL);
		printf("%s: %lu invalidation rounds\n", g.who, g.rounds);
	}
	failed = !ok || g.errors;
	/* Nothing is destroyed before the peer has said it is done with our QP. */
	if (g.talking && finish(failed))
		failed = 1;
	if (teardown())
		failed = 1;
	if (g.sock >= 0)
		close(g.sock);
	printf("xfer: %s %s %u B x %u: %llu bytes verified, %llu errors\n", tp_name[g.tp],
	       op_name[g.op], g.size, g.iters, g.verified, g.errors);
	printf("%s: %s\n", g.who, failed ? "FAIL" : "PASS");
	return failed;
}
