// SPDX-License-Identifier: GPL-2.0
/*
 * rc_access: memory protection and memory layout of RC operations, between two hosts.
 *
 * The server registers memory regions with chosen access flags in the middle of a larger
 * buffer filled with a known pattern; the client issues operations against them. Each
 * case runs on a fresh RC QP pair (an error moves a QP to the error state):
 *
 *   1   write_inside             RDMA WRITE inside a REMOTE_WRITE region: success, in place
 *   2   write_past_end           a WRITE running 1 byte past the region's end: remote access
 *                                error, nothing written; the next WQE is flushed
 *   3a  write_rkey_flipped       WRITE with rkey ^ 0x100: remote access error
 *   3b  write_rkey_random        WRITE with a random rkey: remote access error
 *   4   write_read_only_region   WRITE to a REMOTE_READ-only region: remote access error
 *   5a  read_no_remote_read      READ from a region without REMOTE_READ: remote access
 *                                error, the local buffer untouched
 *   5b  read_past_end            READ running 1 byte past the end: remote access error
 *   6   read_scatter             READ of 71003 bytes at an unaligned offset of a
 *                                multi-page region into 3 unaligned SGEs
 *   7   write_gather             WRITE of 67433 bytes from 4 unaligned SGEs across pages
 *                                into a multi-page region at an unaligned offset
 *   8a  atomics                  FETCH_ADD and CMP_SWAP (matching and not): originals
 *                                returned, the word updated (or not)
 *   8b  atomic_no_remote_atomic  FETCH_ADD on a region without REMOTE_ATOMIC: remote
 *                                access error
 *   8c  atomic_write             ATOMIC WRITE (ibv_wr_atomic_write) of 8 bytes into a
 *                                REMOTE_WRITE region: the word replaced, nothing else
 *   8d  atomic_write_no_remote_write
 *                                ATOMIC WRITE into a region without REMOTE_WRITE (but with
 *                                REMOTE_ATOMIC): remote access error
 *   9a  zero_length              zero-length WRITE and zero-length SEND: success, the
 *                                receive completes with byte_len 0
 *   9b  zero_length_no_rkey      zero-length WRITE and READ with rkey 0 and address 0:
 *                                success (IBA C9-88: the R_Key of a zero-length RDMA
 *                                request is not validated)
 *   10a send_bad_lkey            SEND from an SGE with an invalid lkey: local protection
 *                                error, nothing received
 *   10b send_too_long            SEND of 200 bytes into a 64-byte receive: the client gets
 *                                a remote invalid request error, the receive a local
 *                                length error
 *   11  write_with_imm           RDMA WRITE WITH IMMEDIATE: the receive completes as
 *                                RECV_RDMA_WITH_IMM with the immediate, the data in place
 *
 * The client checks its completions (status, wr_id, and on success the opcode) and that
 * its own buffer holds exactly what it must (source buffers untouched, READ and atomic
 * results in place, nothing else changed); after the client reports on the TCP socket,
 * the server checks its receive completions and that its whole buffer (regions and the
 * guard bytes around them) is byte-for-byte unchanged or changed exactly as intended.
 * The server sends the combined verdict back; both print one line per case:
 *   CASE <id> <name> ok|FAIL: <client: ...; server: ...>
 * and, where -k rxe accepted a known deviation of the C rdma_rxe from the IBA, a line
 *   NOTE <id> <name>: ...
 * Exit status 0 only if every case passed.
 *
 * QPNs, PSNs, GIDs and the regions (address, rkey, length) are exchanged over TCP per
 * case; the client connects to the server's port -p (default 18800) and prints
 * "Couldn't connect to ..." if it cannot (scripts retry on it). Every completion is
 * polled for at most 20 s.
 *
 * Usage: rc_access server|client -d DEV -g GIDIDX [-p PORT] [-k rrxe|rxe] [-c ID,...]
 *                  [SERVER_ADDRESS (client)]
 *        rc_access list
 *   -k  the kernel driver of the local device: rrxe (default) or rxe (the C rdma_rxe).
 *       Each side tells the other its driver; where a status is decided by a side that
 *       runs rdma_rxe, that driver's known deviations from the IBA are accepted too and
 *       named in NOTE lines (10a: WR_FLUSH_ERR or LOC_QP_OP_ERR for the bad lkey; 10b:
 *       REM_OP_ERR at the requester, LOC_QP_OP_ERR for the receive). An rrxe side only
 *       ever gets the IBA's answer accepted.
 *   -c  run only these cases (both sides must be given the same list).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "rrxe_test.h"

#define PAGE 4096
#define BUF_LEN (256 * 1024)
#define POLL_S 20.0
#define SOCK_TIMEOUT_S 150
#define MAX_REG 2
#define MAGIC 0x72616363u

/* The server's receive buffer, when a case posts one: inside its buffer, away from the
 * regions, so that the bytes around it are checked too. */
#define RECV_OFF (200 * 1024 + 13)
#define RECV_LEN 64

#define SRV_SEED 0x5e
#define CLI_SEED 0xc1

#define LW IBV_ACCESS_LOCAL_WRITE
#define RW IBV_ACCESS_REMOTE_WRITE
#define RR IBV_ACCESS_REMOTE_READ
#define RA IBV_ACCESS_REMOTE_ATOMIC

/* The byte at offset @i of a side's buffer before the case (seed: the side). */
static uint8_t pat(unsigned int seed, size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u + seed * 0x9e3779b9u;

	x ^= x >> 15;
	x *= 0x85ebca6bu;
	x ^= x >> 13;
	return (uint8_t)x;
}

struct reg_desc {
	uint64_t addr;
	uint32_t rkey, len, off, access;
};

/* Sent by each side per case once its QP is set up (the server's: once it is at RTS). */
struct hello {
	uint32_t magic, case_idx, setup_ok, lid, qpn, psn, nreg, aux, rxe;
	uint8_t gid[16];
	struct reg_desc reg[MAX_REG];
};

/* The client's result, then the server's combined one. */
struct verdict {
	uint32_t magic, case_idx;
	int32_t ok;
	char text[1300];	/* room for "client: <msg>; server: <msg>" */
	char note[700];
};

struct tc;
struct case_def {
	const char *id, *name;
	void (*srv_setup)(struct tc *t);	/* server: regions, values, receives */
	void (*cli_run)(struct tc *t);		/* client: the operations and their checks */
	void (*srv_check)(struct tc *t);	/* server: receives; what its memory must hold */
};

struct tc {
	const struct case_def *def;
	int idx;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	uint8_t *buf, *exp;		/* this side's buffer and what it must hold */
	struct ibv_mr *mr[MAX_REG + 1];	/* server: regions and the receive MR */
	int nmr;
	struct ibv_mr *lmr;		/* client: local MR over the whole buffer */
	struct hello me, peer;
	uint64_t wr_seq;
	int ok;
	char msg[600], note[300];
};

static struct {
	int server, rxe, sock, gid_index;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	union ibv_gid gid;
	uint16_t lid;
	const char *who;
} G;

static void vappend(char *s, size_t size, const char *fmt, va_list ap)
{
	size_t n = strlen(s);

	if (n && n + 2 < size) {
		strcpy(s + n, "; ");
		n += 2;
	}
	if (n < size)
		vsnprintf(s + n, size - n, fmt, ap);
}

static void __attribute__((format(printf, 2, 3))) fail(struct tc *t, const char *fmt, ...)
{
	char line[600] = "";
	va_list ap;

	va_start(ap, fmt);
	vappend(t->msg, sizeof(t->msg), fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	printf("  %s: check failed: %s\n", G.who, line);
	t->ok = 0;
}

static void __attribute__((format(printf, 2, 3))) note(struct tc *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vappend(t->note, sizeof(t->note), fmt, ap);
	va_end(ap);
}

/* --- memory ------------------------------------------------------------------------ */

/* What @t's side must hold after the case: @n bytes at @off of its buffer become the
 * pattern @seed from @src. */
static void place(struct tc *t, size_t off, unsigned int seed, size_t src, size_t n)
{
	for (size_t k = 0; k < n; k++)
		t->exp[off + k] = pat(seed, src + k);
}

static void cmp_mem(struct tc *t)
{
	size_t first = BUF_LEN, last = 0, count = 0;

	for (size_t i = 0; i < BUF_LEN; i++) {
		if (t->buf[i] == t->exp[i])
			continue;
		if (first == BUF_LEN)
			first = i;
		last = i;
		count++;
	}
	if (count)
		fail(t, "%s memory: %zu bytes differ in [%zu, %zu] (first: 0x%02x, expected 0x%02x)",
		     G.server ? "server" : "client", count, first, last, t->buf[first],
		     t->exp[first]);
}

/* --- completions ---------------------------------------------------------------------- */

static const char *opcode_str(int op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_ATOMIC_WRITE: return "ATOMIC_WRITE";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "?";
	}
}

static int wc_opcode_of(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
	case IBV_WR_SEND: return IBV_WC_SEND;
	case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP: return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return IBV_WC_FETCH_ADD;
	case IBV_WR_ATOMIC_WRITE: return IBV_WC_ATOMIC_WRITE;
	default: return -1;
	}
}

/* A set of completion statuses. */
#define ST(s) (1u << (s))

/*
 * The next completion on @cq must be @wr_id with status @want, or one in @alt: the known
 * deviations of the C rdma_rxe (@why), passed by the callers only when the side whose
 * behaviour decides the status runs rdma_rxe (-k rxe, or the peer's); on success its
 * opcode must be @op (-1: not checked). Returns 0 if so; @out (optional) receives it.
 */
static int expect_wc(struct tc *t, struct ibv_cq *cq, const char *what, uint64_t wr_id,
		     enum ibv_wc_status want, unsigned int alt, const char *why, int op,
		     struct ibv_wc *out)
{
	struct ibv_wc wc;
	int n = poll_one(cq, &wc, POLL_S);

	if (n < 0) {
		fail(t, "%s: ibv_poll_cq failed", what);
		return -1;
	}
	if (n == 0) {
		fail(t, "%s: no completion in %.0f s (expected %s)", what, POLL_S,
		     ibv_wc_status_str(want));
		return -1;
	}
	printf("  %s: %s: completion wr_id %" PRIu64 ": %s (%d), opcode %s (%d), byte_len %u, vendor_err 0x%x\n",
	       G.who, what, wc.wr_id, ibv_wc_status_str(wc.status), wc.status,
	       opcode_str(wc.opcode), wc.opcode, wc.byte_len, wc.vendor_err);
	if (out)
		*out = wc;
	if (wc.wr_id != wr_id) {
		fail(t, "%s: completion for wr_id %" PRIu64 ", expected %" PRIu64, what, wc.wr_id,
		     wr_id);
		return -1;
	}
	if (wc.status != want) {
		if (wc.status < 32 && (alt & ST(wc.status))) {
			note(t, "%s: %s (%d) accepted from rdma_rxe, the IBA says %s (%d): %s",
			     what, ibv_wc_status_str(wc.status), wc.status,
			     ibv_wc_status_str(want), want, why);
			return 0;
		}
		fail(t, "%s: %s (%d), expected %s (%d)", what, ibv_wc_status_str(wc.status),
		     wc.status, ibv_wc_status_str(want), want);
		return -1;
	}
	if (want == IBV_WC_SUCCESS && op >= 0 && (int)wc.opcode != op) {
		fail(t, "%s: opcode %s (%d), expected %s (%d)", what, opcode_str(wc.opcode),
		     wc.opcode, opcode_str(op), op);
		return -1;
	}
	return 0;
}

/* Client: posts @wr (signaled) and expects its completion (see expect_wc). */
static int run_wr(struct tc *t, const char *what, struct ibv_send_wr *wr,
		  enum ibv_wc_status want, unsigned int alt, const char *why)
{
	struct ibv_send_wr *bad;
	int err;

	wr->wr_id = ++t->wr_seq;
	wr->send_flags |= IBV_SEND_SIGNALED;
	wr->next = NULL;
	err = ibv_post_send(t->qp, wr, &bad);
	if (err) {
		fail(t, "%s: ibv_post_send: %s", what, strerror(err));
		return -1;
	}
	return expect_wc(t, t->scq, what, wr->wr_id, want, alt, why, wc_opcode_of(wr->opcode),
			 NULL);
}

static void sge_at(struct tc *t, struct ibv_sge *s, size_t off, uint32_t len)
{
	s->addr = (uintptr_t)(t->buf + off);
	s->length = len;
	s->lkey = t->lmr->lkey;
}

/* Client: a one-SGE RDMA WRITE or READ of @len bytes at @off of its buffer. */
static int rdma_op(struct tc *t, const char *what, enum ibv_wr_opcode opcode, size_t off,
		   uint32_t len, uint64_t raddr, uint32_t rkey, enum ibv_wc_status want)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .opcode = opcode, .sg_list = &sge, .num_sge = 1 };

	sge_at(t, &sge, off, len);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return run_wr(t, what, &wr, want, 0, NULL);
}

/* Client: the server's region @i. */
static struct reg_desc *peer_reg(struct tc *t, unsigned int i)
{
	if (i >= t->peer.nreg) {
		fail(t, "the server sent %u regions, need %u", t->peer.nreg, i + 1);
		return NULL;
	}
	return &t->peer.reg[i];
}

/* --- server helpers ------------------------------------------------------------------- */

static struct reg_desc *srv_region(struct tc *t, size_t off, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(G.pd, t->buf + off, len, access);
	struct reg_desc *d;

	if (!mr) {
		fail(t, "ibv_reg_mr(%zu bytes at +%zu, access 0x%x): %s", len, off, access,
		     strerror(errno));
		return NULL;
	}
	t->mr[t->nmr++] = mr;
	d = &t->me.reg[t->me.nreg++];
	d->addr = (uintptr_t)(t->buf + off);
	d->rkey = mr->rkey;
	d->len = len;
	d->off = off;
	d->access = access;
	printf("  server: region %u: %zu bytes at buffer+%zu (%p), access 0x%x, rkey 0x%08x\n",
	       t->me.nreg - 1, len, off, (void *)(t->buf + off), access, mr->rkey);
	return d;
}

/* A receive of RECV_LEN bytes at RECV_OFF of the server's buffer, wr_id 100. */
static void srv_post_recv(struct tc *t)
{
	struct ibv_mr *mr = ibv_reg_mr(G.pd, t->buf + RECV_OFF, RECV_LEN, LW);
	struct ibv_sge sge;
	struct ibv_recv_wr wr = { .wr_id = 100, .sg_list = &sge, .num_sge = 1 }, *bad;
	int err;

	if (!mr) {
		fail(t, "ibv_reg_mr(receive buffer): %s", strerror(errno));
		return;
	}
	t->mr[t->nmr++] = mr;
	sge.addr = (uintptr_t)(t->buf + RECV_OFF);
	sge.length = RECV_LEN;
	sge.lkey = mr->lkey;
	err = ibv_post_recv(t->qp, &wr, &bad);
	if (err)
		fail(t, "ibv_post_recv: %s", strerror(err));
	else
		printf("  server: receive of %d bytes posted at buffer+%d\n", RECV_LEN, RECV_OFF);
}

/* --- the cases ------------------------------------------------------------------------ */

/* 1: RDMA WRITE inside a REMOTE_WRITE region. */
#define C1_OFF (PAGE + 100)
#define C1_LEN 8192
#define C1_AT 777
#define C1_SRC 333
#define C1_N 1000
static void s1(struct tc *t) { srv_region(t, C1_OFF, C1_LEN, LW | RW); }
static void c1(struct tc *t)
{
	struct reg_desc *r = peer_reg(t, 0);

	if (!r)
		return;

	rdma_op(t, "write", IBV_WR_RDMA_WRITE, C1_SRC, C1_N, r->addr + C1_AT, r->rkey,
		IBV_WC_SUCCESS);
}
static void k1(struct tc *t) { place(t, C1_OFF + C1_AT, CLI_SEED, C1_SRC, C1_N); }

/* 2: a 3-packet WRITE whose last byte is 1 past the region's end, then a valid one. */
#define C2_OFF (2 * PAGE + 17)
#define C2_LEN 4000
#define C2_N 3000
static void s2(struct tc *t) { srv_region(t, C2_OFF, C2_LEN, LW | RW); }
static void c2(struct tc *t)
{
	struct reg_desc *r = peer_reg(t, 0);

	if (!r)
		return;

	if (rdma_op(t, "write past the end", IBV_WR_RDMA_WRITE, 0, C2_N,
		    r->addr + C2_LEN - (C2_N - 1), r->rkey, IBV_WC_REM_ACCESS_ERR))
		return;
	rdma_op(t, "next write", IBV_WR_RDMA_WRITE, 0, 16, r->addr, r->rkey, IBV_WC_WR_FLUSH_ERR);
}

/* 3: WRITE with a wrong rkey: rkey ^ 0x100, and a random one chosen by the server. */
#define C3_OFF (PAGE + 5)
static void s3(struct tc *t)
{
	struct reg_desc *r = srv_region(t, C3_OFF, PAGE, LW | RW);

	if (r) {
		do
			t->me.aux = (uint32_t)mrand48();
		while (t->me.aux == r->rkey || t->me.aux == (r->rkey ^ 0x100) || !t->me.aux);
		printf("  server: random rkey 0x%08x\n", t->me.aux);
	}
}
static void c3a(struct tc *t)
{
	struct reg_desc *r = peer_reg(t, 0);

	if (!r)
		return;

	rdma_op(t, "write with rkey ^ 0x100", IBV_WR_RDMA_WRITE, 0, 100, r->addr + 10,
		r->rkey ^ 0x100, IBV_WC_REM_ACCESS_ERR);
}
static void c3b(struct tc *t)
{
	struct reg_desc *r = peer_reg(t, 0);
	char what[64];

	if (!r)
		return;

	snprintf(what, sizeof(what), "write with rkey 0x%08x", t->peer.aux);
	rdma_op(t, what, IBV_WR_RDMA_WRITE, 0, 100, r->addr + 10, t->peer.aux,
		IBV_WC_REM_ACCESS_ERR);
}

/* 4: WRITE to a REMOTE_READ-only region. */
static void s4(struct tc *t) { srv_region(t, PAGE + 5, PAGE, RR); }
static void c4(struct tc *t)
{
	struct reg_desc *r = peer_reg(t, 0);

	if (!r)
		return;

	rdma_op(t, "write", IBV_WR_RDMA_WRITE, 0, 100, r->addr + 10, r->rkey,
		IBV_WC_REM_ACCESS_ERR);
}

/* 5: READ from a region without REMOTE_READ; a 3-packet READ 1 byte past the end. */
#define C5_OFF (PAGE + 9)
static void s5a(struct tc *t) { srv_region(t, C5_OFF, PAGE, LW | RW); }
static void c5a(struct tc *t)
{
	struct reg_desc *r = peer_reg(t, 0);

	if (!r)
		return;

	rdma_op(t, "read", IBV_WR_RDMA_READ, 1000, 100, r->addr + 10, r->rkey,
		IBV_WC_REM_ACCESS_ERR);
}
static void s5b(struct tc *t) { srv_region(t, C5_OFF, PAGE, RR); }
static void c5b(struct tc *t)
{
	struct reg_desc *r = peer_reg(t, 0);

	if (!r)
		return;

	rdma_op(t, "read past the end", IBV_WR_RDMA_READ, 1000, 3000,
		r->addr + PAGE - 2999, r->rkey, IBV_WC_REM_ACCESS_ERR);
}

/* 6: READ at an unaligned offset of a 21-page region into 3 unaligned SGEs. */
#define C6_OFF (PAGE + 0x35)
#define C6_LEN (20 * PAGE + 333)
#define C6_AT 0x7f3
static const struct { uint32_t off, len; } c6_sges[] = {
	{ 5, 1000 }, { 4093, 3 }, { 4 * PAGE + 0x123, 70000 },
};
static void s6(struct tc *t) { srv_region(t, C6_OFF, C6_LEN, RR); }
static void c6(struct tc *t)
{
	struct reg_desc *r = peer_reg(t, 0);
	struct ibv_sge sge[3];
	struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_READ, .sg_list = sge, .num_sge = 3 };
	size_t at;

	if (!r)
		return;
	at = r->off + C6_AT;
	for (int i = 0; i < 3; i++)
		sge_at(t, &sge[i], c6_sges[i].off, c6_sges[i].len);
	wr.wr.rdma.remote_addr = r->addr + C6_AT;
	wr.wr.rdma.rkey = r->rkey;
	if (run_wr(t, "read into 3 SGEs", &wr, IBV_WC_SUCCESS, 0, NULL))
		return;
	for (int i = 0; i < 3; i++) {
		place(t, c6_sges[i].off, SRV_SEED, at, c6_sges[i].len);
		at += c6_sges[i].len;
	}
}

/* 7: WRITE from 4 unaligned SGEs across page boundaries (67433 bytes, 66 packets). */
#define C7_OFF (2 * PAGE + 0x11)
#define C7_LEN (24 * PAGE + 7)
#define C7_AT 511
static const struct { uint32_t off, len; } c7_sges[] = {
	{ 4001, 4097 }, { 3 * PAGE - 5, 33333 }, { 13 * PAGE - 1, 2 }, { 15 * PAGE - 1, 30001 },
};
static void s7(struct tc *t) { srv_region(t, C7_OFF, C7_LEN, LW | RW); }
static void c7(struct tc *t)
{
	struct reg_desc *r = peer_reg(t, 0);
	struct ibv_sge sge[4];
	struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_WRITE, .sg_list = sge, .num_sge = 4 };

	if (!r)
		return;

	for (int i = 0; i < 4; i++)
		sge_at(t, &sge[i], c7_sges[i].off, c7_sges[i].len);
	wr.wr.rdma.remote_addr = r->addr + C7_AT;
	wr.wr.rdma.rkey = r->rkey;
	run_wr(t, "write from 4 SGEs", &wr, IBV_WC_SUCCESS, 0, NULL);
}
static void k7(struct tc *t)
{
	size_t at = C7_OFF + C7_AT;

	for (int i = 0; i < 4; i++) {
		place(t, at, CLI_SEED, c7_sges[i].off, c7_sges[i].len);
		at += c7_sges[i].len;
	}
}

/* 8: atomics on the 8-byte-aligned word at C8_WORD of the server's buffer. */
#define C8_OFF (PAGE + 24)
#define C8_LEN 256
#define C8_WORD (C8_OFF + 64)
#define C8_V0 0x0123456789abcdefULL
#define C8_ADD 0x0000000180000001ULL
#define C8_SWAP 0xfedcba9876543210ULL
static void set_word(struct tc *t, uint64_t v)
{
	memcpy(t->buf + C8_WORD, &v, 8);
	memcpy(t->exp + C8_WORD, &v, 8);
}
static void s8a(struct tc *t)
{
	srv_region(t, C8_OFF, C8_LEN, LW | RA);
	set_word(t, C8_V0);
}
/* Client: an atomic on the word, the original value to @slot of its buffer. */
static int atomic_op(struct tc *t, const char *what, enum ibv_wr_opcode opcode, size_t slot,
		     uint64_t compare_add, uint64_t swap, enum ibv_wc_status want,
		     uint64_t want_orig)
{
	struct reg_desc *r = peer_reg(t, 0);
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .opcode = opcode, .sg_list = &sge, .num_sge = 1 };
	uint64_t got;

	if (!r)
		return -1;
	sge_at(t, &sge, slot, 8);
	wr.wr.atomic.remote_addr = r->addr + (C8_WORD - r->off);
	wr.wr.atomic.rkey = r->rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	if (run_wr(t, what, &wr, want, 0, NULL) || want != IBV_WC_SUCCESS)
		return -1;
	memcpy(&got, t->buf + slot, 8);
	printf("  client: %s: original value 0x%016" PRIx64 "\n", what, got);
	if (got != want_orig)
		fail(t, "%s: original value 0x%016" PRIx64 ", expected 0x%016" PRIx64, what, got,
		     want_orig);
	memcpy(t->exp + slot, &want_orig, 8);
	return 0;
}
static void c8a(struct tc *t)
{
	if (atomic_op(t, "fetch_add", IBV_WR_ATOMIC_FETCH_AND_ADD, 64, C8_ADD, 0,
		      IBV_WC_SUCCESS, C8_V0) ||
	    atomic_op(t, "cmp_swap (matching)", IBV_WR_ATOMIC_CMP_AND_SWP, 128, C8_V0 + C8_ADD,
		      C8_SWAP, IBV_WC_SUCCESS, C8_V0 + C8_ADD))
		return;
	atomic_op(t, "cmp_swap (not matching)", IBV_WR_ATOMIC_CMP_AND_SWP, 192, C8_V0 + C8_ADD,
		  0x1111111111111111ULL, IBV_WC_SUCCESS, C8_SWAP);
}
static void k8a(struct tc *t)
{
	uint64_t v = C8_SWAP;

	memcpy(t->exp + C8_WORD, &v, 8);
}
static void s8b(struct tc *t)
{
	srv_region(t, C8_OFF, C8_LEN, LW | RW | RR);
	set_word(t, C8_V0);
}
static void c8b(struct tc *t)
{
	atomic_op(t, "fetch_add", IBV_WR_ATOMIC_FETCH_AND_ADD, 64, C8_ADD, 0,
		  IBV_WC_REM_ACCESS_ERR, 0);
}

/* 8c, 8d: ATOMIC WRITE of C8_SWAP on the word (the extended verbs: ibv_post_send has no
 * field for its operand). */
static void s8c(struct tc *t)
{
	srv_region(t, C8_OFF, C8_LEN, LW | RW);
	set_word(t, C8_V0);
}
static void atomic_write(struct tc *t, enum ibv_wc_status want)
{
	struct reg_desc *r = peer_reg(t, 0);
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(t->qp);
	uint64_t v = C8_SWAP;
	int err;

	if (!r)
		return;
	if (!qpx) {
		fail(t, "ibv_qp_to_qp_ex: no extended QP");
		return;
	}
	ibv_wr_start(qpx);
	qpx->wr_id = ++t->wr_seq;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qpx, r->rkey, r->addr + (C8_WORD - r->off), &v);
	err = ibv_wr_complete(qpx);
	if (err) {
		fail(t, "atomic_write: ibv_wr_complete: %s", strerror(err));
		return;
	}
	expect_wc(t, t->scq, "atomic_write", t->wr_seq, want, 0, NULL, IBV_WC_ATOMIC_WRITE, NULL);
}
static void c8c(struct tc *t)
{
	atomic_write(t, IBV_WC_SUCCESS);
}
static void k8c(struct tc *t)
{
	uint64_t v = C8_SWAP;

	memcpy(t->exp + C8_WORD, &v, 8);
}
static void s8d(struct tc *t)
{
	srv_region(t, C8_OFF, C8_LEN, LW | RR | RA);
	set_word(t, C8_V0);
}
static void c8d(struct tc *t)
{
	atomic_write(t, IBV_WC_REM_ACCESS_ERR);
}

/* Server: the receive posted by srv_post_recv must complete with @want (or one in @alt,
 * see expect_wc), on success as @op with @len bytes (-1: not checked). */
static int srv_expect_recv(struct tc *t, enum ibv_wc_status want, unsigned int alt,
			   const char *why,
			   int op, int len, struct ibv_wc *wc)
{
	if (expect_wc(t, t->rcq, "receive", 100, want, alt, why, op, wc))
		return -1;
	if (want == IBV_WC_SUCCESS && len >= 0 && wc->byte_len != (uint32_t)len) {
		fail(t, "receive: byte_len %u, expected %d", wc->byte_len, len);
		return -1;
	}
	return 0;
}

/* 9a: zero-length WRITE (valid rkey) and SEND. */
static void s9a(struct tc *t)
{
	srv_region(t, PAGE + 3, PAGE, LW | RW);
	srv_post_recv(t);
}
static void c9a(struct tc *t)
{
	struct reg_desc *r = peer_reg(t, 0);
	struct ibv_send_wr w = { .opcode = IBV_WR_RDMA_WRITE, .num_sge = 0 };
	struct ibv_send_wr s = { .opcode = IBV_WR_SEND, .num_sge = 0 };

	if (!r)
		return;

	w.wr.rdma.remote_addr = r->addr + 100;
	w.wr.rdma.rkey = r->rkey;
	if (run_wr(t, "zero-length write", &w, IBV_WC_SUCCESS, 0, NULL))
		return;
	run_wr(t, "zero-length send", &s, IBV_WC_SUCCESS, 0, NULL);
}
static void k9a(struct tc *t)
{
	struct ibv_wc wc;

	srv_expect_recv(t, IBV_WC_SUCCESS, 0, NULL, IBV_WC_RECV, 0, &wc);
}

/* 9b: zero-length WRITE and READ with address 0 and rkey 0 (IBA C9-88). */
static void c9b(struct tc *t)
{
	struct ibv_send_wr w = { .opcode = IBV_WR_RDMA_WRITE, .num_sge = 0 };
	struct ibv_send_wr r = { .opcode = IBV_WR_RDMA_READ, .num_sge = 0 };

	if (run_wr(t, "zero-length write, rkey 0", &w, IBV_WC_SUCCESS, 0, NULL))
		return;
	run_wr(t, "zero-length read, rkey 0", &r, IBV_WC_SUCCESS, 0, NULL);
}

/* 10a: SEND from an SGE with an invalid lkey. */
static void s10(struct tc *t) { srv_post_recv(t); }
static void c10a(struct tc *t)
{
	struct ibv_sge sge;
	struct ibv_send_wr s = { .opcode = IBV_WR_SEND, .sg_list = &sge, .num_sge = 1 };

	sge_at(t, &sge, 100, 32);
	sge.lkey ^= 0x5a5a00;
	run_wr(t, "send with a bad lkey", &s, IBV_WC_LOC_PROT_ERR,
	       G.rxe ? ST(IBV_WC_LOC_QP_OP_ERR) | ST(IBV_WC_WR_FLUSH_ERR) : 0,
	       "its requester takes copy_data()'s -EINVAL for an unknown lkey as LOC_QP_OP_ERR, "
	       "and its completer may flush that WQE once the QP is in the error state");
}
static void k10a(struct tc *t)
{
	struct ibv_wc wc;
	int n;

	/* Nothing may arrive: the client got its completion already, allow 1 s more. */
	n = poll_one(t->rcq, &wc, 1.0);
	if (n)
		fail(t, "receive: unexpected completion: %s (%d), opcode %s, byte_len %u",
		     n > 0 ? ibv_wc_status_str(wc.status) : "poll error", n > 0 ? (int)wc.status : n,
		     n > 0 ? opcode_str(wc.opcode) : "-", n > 0 ? wc.byte_len : 0);
}

/* 10b: SEND of 200 bytes into a 64-byte receive. */
static void c10b(struct tc *t)
{
	struct ibv_sge sge;
	struct ibv_send_wr s = { .opcode = IBV_WR_SEND, .sg_list = &sge, .num_sge = 1 };

	sge_at(t, &sge, 100, 200);
	run_wr(t, "send of 200 bytes", &s, IBV_WC_REM_INV_REQ_ERR,
	       t->peer.rxe ? ST(IBV_WC_REM_OP_ERR) : 0,
	       "the rdma_rxe responder NAKs a too long SEND as a remote operational error");
}
static void k10b(struct tc *t)
{
	struct ibv_wc wc;

	srv_expect_recv(t, IBV_WC_LOC_LEN_ERR, G.rxe ? ST(IBV_WC_LOC_QP_OP_ERR) : 0,
			"its responder takes copy_data()'s -EINVAL for a too long SEND as a "
			"malformed WQE (class A)", -1, -1, &wc);
	/* The receive buffer's contents are undefined; the bytes around it are not. */
	memcpy(t->exp + RECV_OFF, t->buf + RECV_OFF, RECV_LEN);
}

/* 11: RDMA WRITE WITH IMMEDIATE. */
#define C11_OFF (PAGE + 77)
#define C11_AT 123
#define C11_SRC 555
#define C11_N 3000
#define C11_IMM 0x1234abcdu
static void s11(struct tc *t)
{
	srv_region(t, C11_OFF, 2 * PAGE, LW | RW);
	srv_post_recv(t);
}
static void c11(struct tc *t)
{
	struct reg_desc *r = peer_reg(t, 0);
	struct ibv_sge sge;
	struct ibv_send_wr w = { .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .sg_list = &sge,
				 .num_sge = 1, .imm_data = htonl(C11_IMM) };

	if (!r)
		return;

	sge_at(t, &sge, C11_SRC, C11_N);
	w.wr.rdma.remote_addr = r->addr + C11_AT;
	w.wr.rdma.rkey = r->rkey;
	run_wr(t, "write with immediate", &w, IBV_WC_SUCCESS, 0, NULL);
}
static void k11(struct tc *t)
{
	struct ibv_wc wc;

	place(t, C11_OFF + C11_AT, CLI_SEED, C11_SRC, C11_N);
	if (srv_expect_recv(t, IBV_WC_SUCCESS, 0, NULL, IBV_WC_RECV_RDMA_WITH_IMM, -1, &wc))
		return;
	if (!(wc.wc_flags & IBV_WC_WITH_IMM))
		fail(t, "receive: no IBV_WC_WITH_IMM flag (wc_flags 0x%x)", wc.wc_flags);
	else if (ntohl(wc.imm_data) != C11_IMM)
		fail(t, "receive: immediate 0x%08x, expected 0x%08x", ntohl(wc.imm_data), C11_IMM);
}

static const struct case_def cases[] = {
	{ "1", "write_inside", s1, c1, k1 },
	{ "2", "write_past_end", s2, c2, NULL },
	{ "3a", "write_rkey_flipped", s3, c3a, NULL },
	{ "3b", "write_rkey_random", s3, c3b, NULL },
	{ "4", "write_read_only_region", s4, c4, NULL },
	{ "5a", "read_no_remote_read", s5a, c5a, NULL },
	{ "5b", "read_past_end", s5b, c5b, NULL },
	{ "6", "read_scatter", s6, c6, NULL },
	{ "7", "write_gather", s7, c7, k7 },
	{ "8a", "atomics", s8a, c8a, k8a },
	{ "8b", "atomic_no_remote_atomic", s8b, c8b, NULL },
	{ "8c", "atomic_write", s8c, c8c, k8c },
	{ "8d", "atomic_write_no_remote_write", s8d, c8d, NULL },
	{ "9a", "zero_length", s9a, c9a, k9a },
	{ "9b", "zero_length_no_rkey", NULL, c9b, NULL },
	{ "10a", "send_bad_lkey", s10, c10a, k10a },
	{ "10b", "send_too_long", s10, c10b, k10b },
	{ "11", "write_with_imm", s11, c11, k11 },
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* --- one case ------------------------------------------------------------------------- */

static void tc_setup(struct tc *t)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 4, .max_send_sge = 4, .max_recv_sge = 1 },
	};
	struct ibv_qp_init_attr_ex iax = {};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0,
		.qp_access_flags = RW | RR | RA,
	};
	unsigned int seed = G.server ? SRV_SEED : CLI_SEED;

	t->buf = aligned_alloc(PAGE, BUF_LEN);
	t->exp = malloc(BUF_LEN);
	if (!t->buf || !t->exp) {
		fail(t, "out of memory");
		return;
	}
	for (size_t i = 0; i < BUF_LEN; i++)
		t->buf[i] = pat(seed, i);
	memcpy(t->exp, t->buf, BUF_LEN);
	t->scq = ibv_create_cq(G.ctx, 16, NULL, NULL, 0);
	t->rcq = ibv_create_cq(G.ctx, 16, NULL, NULL, 0);
	if (!t->scq || !t->rcq) {
		fail(t, "ibv_create_cq: %s", strerror(errno));
		return;
	}
	/* An extended QP: case 8c posts ATOMIC WRITE through ibv_wr_atomic_write(); the other
	 * cases use ibv_post_send(), which works on it as on any QP. */
	iax.qp_type = ia.qp_type;
	iax.cap = ia.cap;
	iax.send_cq = t->scq;
	iax.recv_cq = t->rcq;
	iax.pd = G.pd;
	iax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	iax.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
			     IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
			     IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_ATOMIC_WRITE;
	t->qp = ibv_create_qp_ex(G.ctx, &iax);
	if (!t->qp) {
		fail(t, "ibv_create_qp_ex: %s", strerror(errno));
		return;
	}
	errno = ibv_modify_qp(t->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS);
	if (errno) {
		fail(t, "modify QP to INIT: %s", strerror(errno));
		return;
	}
	if (!G.server) {
		t->lmr = ibv_reg_mr(G.pd, t->buf, BUF_LEN, LW);
		if (!t->lmr) {
			fail(t, "ibv_reg_mr(local buffer): %s", strerror(errno));
			return;
		}
	}
	t->me.lid = G.lid;
	t->me.qpn = t->qp->qp_num;
	t->me.psn = lrand48() & 0xffffff;
	memcpy(t->me.gid, G.gid.raw, 16);
}

static void qp_connect(struct tc *t)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = t->peer.qpn,
		.rq_psn = t->peer.psn, .max_dest_rd_atomic = 4, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1, .dlid = t->peer.lid,
			     .grh = { .sgid_index = G.gid_index, .hop_limit = 64 } },
	};

	memcpy(a.ah_attr.grh.dgid.raw, t->peer.gid, 16);
	errno = ibv_modify_qp(t->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (errno) {
		fail(t, "modify QP to RTR: %s", strerror(errno));
		return;
	}
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = t->me.psn;
	a.max_rd_atomic = 4;
	errno = ibv_modify_qp(t->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (errno)
		fail(t, "modify QP to RTS: %s", strerror(errno));
}

/* Exchanges the hellos and connects: 0 if both sides are ready, -1 if one is not, -2 if
 * the connection to the peer is lost. */
static int tc_exchange(struct tc *t)
{
	t->me.magic = MAGIC;
	t->me.case_idx = t->idx;
	t->me.rxe = G.rxe;
	if (!G.server) {
		t->me.setup_ok = t->ok;
		if (write_full(G.sock, &t->me, sizeof(t->me)) ||
		    read_full(G.sock, &t->peer, sizeof(t->peer)))
			return -2;
	} else {
		if (read_full(G.sock, &t->peer, sizeof(t->peer)))
			return -2;
	}
	if (t->peer.magic != MAGIC || t->peer.case_idx != (uint32_t)t->idx) {
		fprintf(stderr, "protocol error: peer is at case %u\n", t->peer.case_idx);
		return -2;
	}
	if (t->peer.nreg > MAX_REG)
		t->peer.nreg = MAX_REG;
	if (t->ok && t->peer.setup_ok)
		qp_connect(t);
	if (G.server) {
		t->me.setup_ok = t->ok;
		if (write_full(G.sock, &t->me, sizeof(t->me)))
			return -2;
	}
	if (!t->peer.setup_ok) {
		fail(t, "the peer's setup failed");
		return -1;
	}
	return t->ok ? 0 : -1;
}

static void tc_teardown(struct tc *t)
{
	int err = 0;

	if (t->qp)
		err |= ibv_destroy_qp(t->qp);
	if (t->scq)
		err |= ibv_destroy_cq(t->scq);
	if (t->rcq)
		err |= ibv_destroy_cq(t->rcq);
	if (t->lmr)
		err |= ibv_dereg_mr(t->lmr);
	for (int i = 0; i < t->nmr; i++)
		err |= ibv_dereg_mr(t->mr[i]);
	if (err)
		fail(t, "destroying the QP, CQs or MRs failed");
	free(t->buf);
	free(t->exp);
}

/* Any further completion is one too many. */
static void no_more(struct tc *t, struct ibv_cq *cq, const char *which)
{
	struct ibv_wc wc;
	int n = ibv_poll_cq(cq, 1, &wc);

	if (n)
		fail(t, "unexpected %s completion: %s (%d), wr_id %" PRIu64 ", opcode %s",
		     which, n > 0 ? ibv_wc_status_str(wc.status) : "poll error",
		     n > 0 ? (int)wc.status : n, n > 0 ? wc.wr_id : 0,
		     n > 0 ? opcode_str(wc.opcode) : "-");
}

static void print_result(const struct case_def *d, const struct verdict *v)
{
	if (v->note[0])
		printf("NOTE %s %s: %s\n", d->id, d->name, v->note);
	if (v->ok)
		printf("CASE %s %s ok\n", d->id, d->name);
	else
		printf("CASE %s %s FAIL: %s\n", d->id, d->name, v->text);
}

/* 1 passed, 0 failed, -1 connection lost. */
static int run_case(int idx)
{
	struct tc t = { .def = &cases[idx], .idx = idx, .ok = 1 };
	struct verdict mine = { .magic = MAGIC, .case_idx = idx }, peer;
	double t0 = now_s();
	int r;

	/* CLOCK_MONOTONIC: close to the kernel log's timestamps. */
	printf("--- case %s %s (%s) at %.3f\n", t.def->id, t.def->name, G.who, t0);
	tc_setup(&t);
	if (t.ok && G.server && t.def->srv_setup)
		t.def->srv_setup(&t);
	r = tc_exchange(&t);
	if (r == -2) {
		tc_teardown(&t);
		return -1;
	}
	if (G.server) {
		if (read_full(G.sock, &peer, sizeof(peer)) || peer.magic != MAGIC ||
		    peer.case_idx != (uint32_t)idx) {
			tc_teardown(&t);
			return -1;
		}
		peer.text[sizeof(peer.text) - 1] = peer.note[sizeof(peer.note) - 1] = 0;
		if (r == 0) {
			if (t.def->srv_check)
				t.def->srv_check(&t);
			no_more(&t, t.rcq, "receive");
			no_more(&t, t.scq, "send");
			cmp_mem(&t);
		}
		tc_teardown(&t);
		mine.ok = t.ok && peer.ok;
		if (!peer.ok && !t.ok)
			snprintf(mine.text, sizeof(mine.text), "client: %.600s; server: %.600s", peer.text,
				 t.msg);
		else if (!peer.ok)
			snprintf(mine.text, sizeof(mine.text), "client: %.600s", peer.text);
		else if (!t.ok)
			snprintf(mine.text, sizeof(mine.text), "server: %.600s", t.msg);
		if (peer.note[0] && t.note[0])
			snprintf(mine.note, sizeof(mine.note), "client: %.300s; server: %.300s", peer.note,
				 t.note);
		else if (peer.note[0])
			snprintf(mine.note, sizeof(mine.note), "client: %.300s", peer.note);
		else if (t.note[0])
			snprintf(mine.note, sizeof(mine.note), "server: %.300s", t.note);
		if (write_full(G.sock, &mine, sizeof(mine)))
			return -1;
		print_result(t.def, &mine);
	} else {
		if (r == 0) {
			t.def->cli_run(&t);
			no_more(&t, t.scq, "send");
			no_more(&t, t.rcq, "receive");
			cmp_mem(&t);
		}
		tc_teardown(&t);
		mine.ok = t.ok;
		snprintf(mine.text, sizeof(mine.text), "%s", t.msg);
		snprintf(mine.note, sizeof(mine.note), "%s", t.note);
		if (write_full(G.sock, &mine, sizeof(mine)) ||
		    read_full(G.sock, &peer, sizeof(peer)) || peer.magic != MAGIC ||
		    peer.case_idx != (uint32_t)idx)
			return -1;
		peer.text[sizeof(peer.text) - 1] = peer.note[sizeof(peer.note) - 1] = 0;
		print_result(t.def, &peer);
		mine.ok = peer.ok;
	}
	printf("  %s: case %s took %.2f s\n", G.who, t.def->id, now_s() - t0);
	return mine.ok;
}

/* --- main ----------------------------------------------------------------------------- */

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s server|client -d DEV -g GIDIDX [-p PORT] [-k rrxe|rxe] [-c ID,...]\n"
		"          [SERVER_ADDRESS (client)]\n"
		"       %s list\n", argv0, argv0);
	exit(2);
}

static int selected(const char *list, const char *id)
{
	char buf[256], *save, *tok;

	if (!list)
		return 1;
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, id))
			return 1;
	return 0;
}

static int tcp_connect(const char *server, const char *port)
{
	struct timeval tv = { .tv_sec = SOCK_TIMEOUT_S };
	int sock = tcp_rendezvous(G.server, server, port);

	if (sock < 0)
		return -1;
	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return sock;
}

int main(int argc, char **argv)
{
	const char *devname = NULL, *server = NULL, *port = "18800", *only = NULL;
	struct ibv_port_attr pa;
	int passed = 0, nfailed = 0, opt, i;
	char gidstr[INET6_ADDRSTRLEN];

	if (argc < 2)
		usage(argv[0]);
	if (!strcmp(argv[1], "list")) {
		for (i = 0; i < NCASES; i++)
			printf("%s %s\n", cases[i].id, cases[i].name);
		return 0;
	}
	if (!strcmp(argv[1], "server"))
		G.server = 1;
	else if (strcmp(argv[1], "client"))
		usage(argv[0]);
	G.who = G.server ? "server" : "client";
	G.gid_index = -1;
	optind = 2;
	while ((opt = getopt(argc, argv, "d:g:p:k:c:")) != -1) {
		switch (opt) {
		case 'd': devname = optarg; break;
		case 'g': G.gid_index = atoi(optarg); break;
		case 'p': port = optarg; break;
		case 'k':
			if (!strcmp(optarg, "rxe"))
				G.rxe = 1;
			else if (strcmp(optarg, "rrxe"))
				usage(argv[0]);
			break;
		case 'c': only = optarg; break;
		default: usage(argv[0]);
		}
	}
	if (!G.server) {
		if (optind != argc - 1)
			usage(argv[0]);
		server = argv[optind];
	} else if (optind != argc) {
		usage(argv[0]);
	}
	if (!devname || G.gid_index < 0)
		usage(argv[0]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand48(getpid() ^ time(NULL));

	G.ctx = open_dev(devname);
	if (!G.ctx) {
		fprintf(stderr, "cannot open %s\n", devname);
		return 1;
	}
	G.pd = ibv_alloc_pd(G.ctx);
	if (!G.pd || ibv_query_port(G.ctx, 1, &pa) ||
	    ibv_query_gid(G.ctx, 1, G.gid_index, &G.gid)) {
		perror("alloc pd / query port / query gid");
		return 1;
	}
	G.lid = pa.lid;
	inet_ntop(AF_INET6, &G.gid, gidstr, sizeof(gidstr));
	printf("%s: %s (%s driver checks), GID %d %s\n", G.who, devname,
	       G.rxe ? "rdma_rxe" : "rrxe", G.gid_index, gidstr);

	G.sock = tcp_connect(server, port);
	if (G.sock < 0)
		return 1;

	for (i = 0; i < NCASES; i++) {
		int r;

		if (!selected(only, cases[i].id))
			continue;
		r = run_case(i);
		if (r < 0) {
			printf("%s: connection to the peer lost in case %s\n", G.who, cases[i].id);
			for (; i < NCASES; i++)
				if (selected(only, cases[i].id)) {
					printf("CASE %s %s FAIL: connection to the peer lost\n",
					       cases[i].id, cases[i].name);
					nfailed++;
				}
			break;
		}
		if (r)
			passed++;
		else
			nfailed++;
	}
	close(G.sock);
	if (ibv_dealloc_pd(G.pd) || ibv_close_device(G.ctx)) {
		perror("dealloc pd / close device");
		nfailed++;
	}
	printf("%s: %d passed, %d failed\n", G.who, passed, nfailed);
	return nfailed ? 1 : 0;
}
