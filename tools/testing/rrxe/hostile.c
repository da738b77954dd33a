// SPDX-License-Identifier: GPL-2.0
/*
 * hostile: a process that scribbles over the rings it shares with the driver.
 *
 * The rxe user ABI puts the send queue, the receive queue and the CQ of a user QP in memory
 * the kernel and the process both map (struct rxe_queue_buf: log2_elem_size @0, index_mask
 * @4, producer_index @128, consumer_index @256, slots from @384). The process produces the
 * SQ and RQ (it writes the WQEs and the producer index) and consumes the CQ; nothing stops
 * it from writing anything there at any time. The driver must copy and check what it takes,
 * end a bad ring in an error completion or a QP in ERR, never hang, oops or touch memory
 * that is not the process's own, and keep working for everyone else.
 *
 * The rings are found without the provider's private structures: the uverbs mappings in
 * /proc/self/maps before and after ibv_create_qp / ibv_create_cq are the new object's rings
 * (a QP: one ring whose slots hold a 208-byte rxe_send_wqe, the SQ, and one with smaller
 * slots, the RQ); each is then verified (its header is sane, posting a receive moves the RQ
 * producer index by one over a slot holding that receive, posting a send moves the SQ's
 * over a slot holding that send, whose completion appears in the CQ ring).
 *
 * A storm thread then, for STORM_SECONDS (default 1.5), writes random and plausible-but-bad
 * WQEs into the slots and random values into the index the process owns (kept in range
 * most of the time; out of range, with the header's geometry and the kernel's own index
 * garbled as well, in short phases during which the main thread keeps out of the provider,
 * whose post and poll paths trust those fields and would fault in this process). The main
 * thread meanwhile posts through libibverbs (errors allowed), rings the send doorbell itself
 * (the POST_SEND write() librxe sends, also with a work request list, which user QPs do not
 * take), polls, and resets and reconnects a QP found in ERR. Cases:
 *
 *   hostile_sq_storm_rc      RC QP in RTS (connected to a second QP of the device), SQ storm
 *   hostile_sq_storm_rc_err  the same with the QP in ERR first (the flush path)
 *   hostile_sq_storm_ud      UD QP in RTS, SQ storm (UD sends take their own path)
 *   hostile_rq_storm         RC QP receiving a peer's SENDs and WRITE_WITH_IMMs, RQ storm
 *   hostile_cq_storm         RC pair completing into one CQ whose indices are stormed
 *   hostile_user_wr_lists    POST_SEND, POST_RECV and POST_SRQ_RECV with a work request list
 *                            for a user QP and SRQ, its SGE naming kernel memory by the
 *                            local DMA lkey: each refused, nothing completes
 *   hostile_stale_ring_offsets  100 CQs in a fresh context, destroyed one by one: after each,
 *                            mmap() of the rings of destroyed CQs (their offsets read from
 *                            /proc/self/maps) succeeds for at most an eighth of the table
 *                            (none while it holds 64 entries or fewer), and for none once
 *                            every CQ is gone
 *   hostile_get_context_twice  GET_CONTEXT through the ioctl interface on a uverbs file that
 *                            already has its context, in 4 child processes: refused with
 *                            EINVAL each time; the group's kmemleak check then finds no
 *                            task_struct left behind (ib_core 7.3.4 freed the refused context
 *                            without dropping the task reference its resource tracking had
 *                            taken: every such call leaked the calling process's task_struct;
 *                            patches/0008 fixes it)
 *   hostile_device_still_works  a fresh context's RC pair: SEND and RDMA WRITE, data checked
 *
 * A storm case passes when every call returned within CALL_LIMIT_S, the CQs went quiet
 * after the storm, the stormed QP (in whatever state the storm left it) could be reset,
 * reconnected and then exchange a SEND each way with the data checked, and every object was
 * destroyed without error. Every blocking step runs under a deadline and alarm(): a hang
 * prints the case as failed, with the step it hung in. Measured numbers go to "# " lines.
 *
 * Usage: hostile DEVICE GID_INDEX [STORM_SECONDS [SEED]]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl.h>

#include "rrxe_test.h"

/* struct rxe_queue_buf (include/uapi/rdma/rdma_user_rxe.h). */
#define RB_LOG2		0
#define RB_MASK		4
#define RB_PROD		128
#define RB_CONS		256
#define RB_DATA		384
/* struct rxe_send_wqe and struct rxe_recv_wqe headers; SGEs follow. */
#define SEND_WQE_HDR	208
#define RECV_WQE_HDR	40

#define QP_WR		64
#define CQ_CQE		256
#define BUF_LEN		(1 << 20)
#define QKEY		0x11111111
#define PSN0		0x1000
#define MSG		64
#define GRH		40

#define CALL_LIMIT_S	5.0	/* no single verb may take longer */
#define CASE_ALARM_S	60	/* a case still running this much past its storm is hung */
#define QUIET_S		0.3	/* after a storm: no completion for this long = quiet */
#define DRAIN_LIMIT_S	4.0
#define WAIT_LIMIT_S	5.0
#define MAX_RECYCLES	25

/* Buffer regions (one MR over all of buf; plausible WQEs aim anywhere in it). */
#define REG_VSEND	0x00000
#define REG_PSEND	0x01000
#define REG_VRECV	0x10000
#define REG_PRECV	0x20000
#define REG_WRITE	0x30000
#define REG_REUSE	0x40000

/* wr_id tags (top byte) of the main thread's work requests. */
#define TAG_VSEND	(1ull << 56)
#define TAG_PSEND	(2ull << 56)
#define TAG_RECV	(3ull << 56)
#define TAG_VERIFY	(4ull << 56)
#define TAG_REUSE	(5ull << 56)
#define TAG(w)		((w) & (0xffull << 56))

enum target { R_SQ, R_RQ, R_CQ };

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static uint8_t *buf;
static union ibv_gid gid;
static int gid_index;
static double storm_s = 1.5;
static uint64_t seed;

/* For the alarm handler: the case and step in progress. */
static const char *volatile cur_case = "hostile_setup";
static const char *volatile cur_step = "start";

static void on_alarm(int sig)
{
	const char *parts[] = { "RRXE-TEST ", cur_case, " FAIL: hung in ", cur_step,
				" (alarm)\n" };
	char msg[256];
	size_t len = 0;

	(void)sig;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t l = strlen(parts[i]);

		if (len + l >= sizeof(msg))
			break;
		memcpy(msg + len, parts[i], l);
		len += l;
	}
	if (write(STDOUT_FILENO, msg, len) < 0) {
		/* nothing left to do */
	}
	_exit(1);
}

static void begin_case(const char *name)
{
	cur_case = name;
	cur_step = "setup";
	alarm(CASE_ALARM_S + (unsigned int)storm_s);
}

static uint64_t rnd_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static void put16(uint8_t *p, size_t off, uint16_t v)
{
	memcpy(p + off, &v, 2);
}

static void put32(uint8_t *p, size_t off, uint32_t v)
{
	memcpy(p + off, &v, 4);
}

static void put64(uint8_t *p, size_t off, uint64_t v)
{
	memcpy(p + off, &v, 8);
}

static uint32_t get32(const uint8_t *p, size_t off)
{
	uint32_t v;

	memcpy(&v, p + off, 4);
	return v;
}

static uint64_t get64(const uint8_t *p, size_t off)
{
	uint64_t v;

	memcpy(&v, p + off, 8);
	return v;
}

/* ---- rings ------------------------------------------------------------------------------ */

/* A mapped rxe_queue_buf, with the geometry read when it was created (kept privately). */
struct ring {
	uint8_t *base;
	size_t len;
	uint32_t log2, mask;
};

static uint32_t *ring_u32(const struct ring *r, size_t off)
{
	return (uint32_t *)(void *)(r->base + off);
}

static uint32_t ld(const struct ring *r, size_t off)
{
	return __atomic_load_n(ring_u32(r, off), __ATOMIC_ACQUIRE);
}

static void st(const struct ring *r, size_t off, uint32_t v)
{
	__atomic_store_n(ring_u32(r, off), v, __ATOMIC_RELEASE);
}

static size_t ring_esz(const struct ring *r)
{
	return (size_t)1 << r->log2;
}

static uint8_t *ring_slot(const struct ring *r, uint32_t i)
{
	return r->base + RB_DATA + ((size_t)(i & r->mask) << r->log2);
}

static void ring_restore_header(const struct ring *r)
{
	st(r, RB_LOG2, r->log2);
	st(r, RB_MASK, r->mask);
}

static int ring_read_header(struct ring *r)
{
	r->log2 = ld(r, RB_LOG2);
	r->mask = ld(r, RB_MASK);
	if (r->log2 < 4 || r->log2 > 13 || !r->mask || (r->mask & (r->mask + 1)) ||
	    r->mask > (1u << 20))
		return -1;
	if (RB_DATA + ((size_t)(r->mask + 1) << r->log2) > r->len)
		return -1;
	if (ld(r, RB_PROD) > r->mask || ld(r, RB_CONS) > r->mask)
		return -1;
	return 0;
}

#define MAX_MAPS 512
struct maps {
	int n;
	uintptr_t start[MAX_MAPS], end[MAX_MAPS];
};

/* The mappings of /dev/infiniband/uverbs* in this process. */
static void uverbs_maps(struct maps *m)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	m->n = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && m->n < MAX_MAPS) {
		unsigned long s, e;
		char *path = strchr(line, '/');

		if (sscanf(line, "%lx-%lx", &s, &e) != 2 || !path ||
		    strncmp(path, "/dev/infiniband/uverbs", 22))
			continue;
		m->start[m->n] = s;
		m->end[m->n] = e;
		m->n++;
	}
	fclose(f);
}

/* The mappings in @a that are not in @b (at most @max into @out); returns their number. */
static int new_maps(const struct maps *b, const struct maps *a, struct ring *out, int max)
{
	int n = 0;

	for (int i = 0; i < a->n; i++) {
		int seen = 0;

		for (int j = 0; j < b->n && !seen; j++)
			seen = b->start[j] == a->start[i] && b->end[j] == a->end[i];
		if (seen)
			continue;
		if (n < max) {
			out[n].base = (uint8_t *)a->start[i];
			out[n].len = a->end[i] - a->start[i];
		}
		n++;
	}
	return n;
}

/* ---- bookkeeping ------------------------------------------------------------------------ */

static char why[512];

static void set_why(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
}

struct counts {
	unsigned long posts, post_err, recvs, recv_err, doorbells, doorbell_err;
	unsigned long legacy, legacy_err, cqes, cqe_err, poll_err, polls_skipped;
	unsigned long recycles, recycle_err, iterations;
};

struct case_cfg {
	const char *name;
	enum ibv_qp_type type;
	enum target target;
	int err_first;	/* the victim goes to ERR before the storm (flush path) */
	int recycle;	/* reset and reconnect a QP found in ERR during the storm */
	int shared_cq;	/* victim and peer complete into the victim's CQ */
	int v_sends;	/* the victim sends to the peer (else the peer to the victim) */
};

/* One case: the victim QP V (whose rings are stormed) and its peer P. */
struct pairx {
	const struct case_cfg *cfg;
	struct ibv_cq *vcq, *pcq;
	struct ibv_qp *v, *p;
	struct ibv_ah *ah;
	struct ring vsq, vrq, vcqr;
	uint32_t ah_num;
	pthread_mutex_t prov;	/* held while a stormed ring is unusable by the provider */
	struct counts c;
	unsigned int p_out;	/* peer sends in flight (peer-sends cases) */
	double max_call;
	const char *max_call_name;
	int slow_call;
};

static void note_call(struct pairx *px, const char *name, double d)
{
	if (!px)
		return;
	if (d > px->max_call) {
		px->max_call = d;
		px->max_call_name = name;
	}
	if (d > CALL_LIMIT_S)
		px->slow_call = 1;
}

/* Runs a verb, names it for the alarm handler and times it. */
#define CALL(px, name, expr) ({						\
	double t0_ = now_s();						\
	cur_step = (name);						\
	__typeof__(expr) r_ = (expr);					\
	note_call((px), (name), now_s() - t0_);				\
	r_;								\
})

/* ---- the send doorbell, by hand ---------------------------------------------------------- */

/* struct ibv_post_send of the legacy write() ABI (what librxe's post_send_db() writes). */
struct raw_post_send {
	uint32_t command;
	uint16_t in_words, out_words;
	uint64_t response;
	uint32_t qp_handle, wr_count, sge_count, wqe_size;
};
_Static_assert(sizeof(struct raw_post_send) == 32, "struct ibv_post_send");
#define IB_USER_VERBS_CMD_POST_SEND 28

static int doorbell(struct ibv_qp *qp)
{
	uint32_t resp = 0;
	struct raw_post_send c = {
		.command = IB_USER_VERBS_CMD_POST_SEND, .in_words = sizeof(c) / 4,
		.out_words = sizeof(resp) / 4, .response = (uintptr_t)&resp,
		.qp_handle = qp->handle, .wqe_size = 128,
	};

	return write(qp->context->cmd_fd, &c, sizeof(c)) == (ssize_t)sizeof(c) ? 0 : errno;
}

/*
 * The same command carrying one struct ib_uverbs_send_wr (56 bytes): ib_core builds an
 * ib_send_wr from it and hands it to the driver's post_send, which a user QP must refuse
 * (its work requests come through the ring).
 */
static int legacy_doorbell(struct ibv_qp *qp, uint64_t r)
{
	static const uint32_t ops[] = { 0, 1, 2, 3, 4, 5, 6, 9 };
	uint32_t resp = 0;
	struct {
		struct raw_post_send h;
		uint8_t wr[56];
	} c;

	memset(&c, 0, sizeof(c));
	c.h.command = IB_USER_VERBS_CMD_POST_SEND;
	c.h.in_words = sizeof(c) / 4;
	c.h.out_words = sizeof(resp) / 4;
	c.h.response = (uintptr_t)&resp;
	c.h.qp_handle = qp->handle;
	c.h.wr_count = 1;
	c.h.wqe_size = sizeof(c.wr);
	put64(c.wr, 0, r);				/* wr_id */
	put32(c.wr, 12, ops[r % 8]);			/* opcode; num_sge 0 */
	put32(c.wr, 16, (uint32_t)(r >> 8) & 0x1f);	/* send_flags */
	put64(c.wr, 24, (uintptr_t)buf);		/* rdma/atomic remote_addr */
	put32(c.wr, 32, mr->rkey);
	return write(qp->context->cmd_fd, &c, sizeof(c)) == (ssize_t)sizeof(c) ? 0 : errno;
}

/* ---- verbs helpers ----------------------------------------------------------------------- */

struct conn {
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
};

/* Storm pairs give up fast (a plausible garbage SEND must not RNR-retry for ever). */
static const struct conn storm_conn = { .timeout = 14, .retry_cnt = 3, .rnr_retry = 2,
					.min_rnr_timer = 1 };
static const struct conn calm_conn = { .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
				       .min_rnr_timer = 12 };

static int set_state(struct pairx *px, struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };

	return CALL(px, "ibv_modify_qp", ibv_modify_qp(qp, &a, IBV_QP_STATE));
}

static int qp_state(struct pairx *px, struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (CALL(px, "ibv_query_qp", ibv_query_qp(qp, &a, IBV_QP_STATE, &ia)))
		return -1;
	return a.qp_state;
}

static const char *state_name(int s)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return s >= 0 && s <= IBV_QPS_ERR ? n[s] : "?";
}

/*
 * Any state -> RESET (which empties the queues without completions). A QP that libibverbs
 * last moved to RESET (a new one) stays as it is; one the driver moved to ERR behind
 * libibverbs' back is still moved.
 */
static int to_reset(struct pairx *px, struct ibv_qp *qp)
{
	return qp->state == IBV_QPS_RESET ? 0 : set_state(px, qp, IBV_QPS_RESET);
}

/* RESET (from any state) -> INIT -> RTR -> RTS, connected to @dqpn. */
static int rc_up(struct pairx *px, struct ibv_qp *qp, uint32_t dqpn, const struct conn *c)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC };

	if (to_reset(px, qp) ||
	    CALL(px, "ibv_modify_qp", ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = PSN0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = c->min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	if (CALL(px, "ibv_modify_qp", ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
				     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = c->timeout;
	a.retry_cnt = c->retry_cnt;
	a.rnr_retry = c->rnr_retry;
	a.sq_psn = PSN0;
	a.max_rd_atomic = 1;
	return CALL(px, "ibv_modify_qp", ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
				   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				   IBV_QP_MAX_QP_RD_ATOMIC)) ? -1 : 0;
}

static int ud_up(struct pairx *px, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				 .qkey = QKEY };

	if (to_reset(px, qp) ||
	    CALL(px, "ibv_modify_qp", ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					     IBV_QP_PORT | IBV_QP_QKEY)))
		return -1;
	if (set_state(px, qp, IBV_QPS_RTR))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = PSN0;
	return CALL(px, "ibv_modify_qp",
		    ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) ? -1 : 0;
}

/* Both QPs of the case back to RTS (through RESET, which empties their queues). */
static int bring_up(struct pairx *px)
{
	if (px->cfg->type == IBV_QPT_UD)
		return ud_up(px, px->v) || ud_up(px, px->p) ? -1 : 0;
	return rc_up(px, px->v, px->p->qp_num, &storm_conn) ||
	       rc_up(px, px->p, px->v->qp_num, &storm_conn) ? -1 : 0;
}

static int post_send1(struct pairx *px, struct ibv_qp *qp, uint32_t dqpn, uint64_t wr_id,
		      enum ibv_wr_opcode op, uint64_t addr, uint32_t len, uint64_t raddr)
{
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM)
		wr.imm_data = htonl((uint32_t)wr_id);
	if (op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM) {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = mr->rkey;
	}
	if (qp->qp_type == IBV_QPT_UD) {
		wr.wr.ud.ah = px->ah;
		wr.wr.ud.remote_qpn = dqpn;
		wr.wr.ud.remote_qkey = QKEY;
	}
	return CALL(px, "ibv_post_send", ibv_post_send(qp, &wr, &bad));
}

static int post_recv1(struct pairx *px, struct ibv_qp *qp, uint64_t wr_id, uint64_t addr,
		      uint32_t len)
{
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return CALL(px, "ibv_post_recv", ibv_post_recv(qp, &wr, &bad));
}

/*
 * Polls @cqs until every wr_id in @want completed (its status into @status, -1 if not) or
 * @limit_s passed; completions of other work requests are counted in *@other. Returns the
 * number of @want found.
 */
static int wait_wrids(struct pairx *px, struct ibv_cq **cqs, int ncq, const uint64_t *want,
		      int *status, uint32_t *byte_len, int nwant, double limit_s,
		      unsigned long *other)
{
	double end = now_s() + limit_s;
	int found = 0;

	for (int i = 0; i < nwant; i++)
		status[i] = -1;
	while (found < nwant && now_s() < end) {
		int got = 0;

		for (int c = 0; c < ncq; c++) {
			struct ibv_wc wc[16];
			int n = CALL(px, "ibv_poll_cq", ibv_poll_cq(cqs[c], 16, wc));

			for (int k = 0; k < n; k++) {
				int hit = 0;

				for (int i = 0; i < nwant; i++) {
					if (wc[k].wr_id == want[i] && status[i] < 0) {
						status[i] = wc[k].status;
						if (byte_len)
							byte_len[i] = wc[k].byte_len;
						found++;
						hit = 1;
						break;
					}
				}
				if (!hit && other)
					(*other)++;
			}
			got += n > 0 ? n : 0;
		}
		if (!got)
			usleep(200);
	}
	return found;
}

/* ---- finding and checking a case's rings --------------------------------------------------- */

static struct ibv_cq *create_cq_ring(struct pairx *px, struct ring *r)
{
	struct maps before, after;
	struct ring found[4];
	struct ibv_cq *cq;
	int n;

	uverbs_maps(&before);
	cq = CALL(px, "ibv_create_cq", ibv_create_cq(ctx, CQ_CQE, NULL, NULL, 0));
	if (!cq) {
		set_why("ibv_create_cq: %s", strerror(errno));
		return NULL;
	}
	if (!r)
		return cq;
	uverbs_maps(&after);
	n = new_maps(&before, &after, found, 4);
	if (n != 1) {
		set_why("%d new uverbs mappings after ibv_create_cq, expected 1", n);
		goto fail;
	}
	*r = found[0];
	if (ring_read_header(r) || ring_esz(r) < sizeof(struct ibv_wc) || r->mask + 1 < CQ_CQE) {
		set_why("CQ mapping %p+%zu: no CQ ring header (log2 %u, mask %#x)",
			(void *)r->base, r->len, ld(r, RB_LOG2), ld(r, RB_MASK));
		goto fail;
	}
	return cq;
fail:
	ibv_destroy_cq(cq);
	return NULL;
}

static struct ibv_qp *create_qp_rings(struct pairx *px, struct ibv_cq *cq,
				      enum ibv_qp_type type, struct ring *sq, struct ring *rq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = QP_WR, .max_recv_wr = QP_WR, .max_send_sge = 2,
			 .max_recv_sge = 2, .max_inline_data = 64 },
	};
	struct maps before, after;
	struct ring found[4];
	struct ibv_qp *qp;
	int n, s0, s1;

	uverbs_maps(&before);
	qp = CALL(px, "ibv_create_qp", ibv_create_qp(pd, &ia));
	if (!qp) {
		set_why("ibv_create_qp: %s", strerror(errno));
		return NULL;
	}
	if (!sq)
		return qp;
	uverbs_maps(&after);
	n = new_maps(&before, &after, found, 4);
	if (n != 2) {
		set_why("%d new uverbs mappings after ibv_create_qp, expected 2 (RQ and SQ)", n);
		goto fail;
	}
	for (int i = 0; i < 2; i++) {
		if (ring_read_header(&found[i])) {
			set_why("QP mapping %p+%zu: no ring header (log2 %u, mask %#x)",
				(void *)found[i].base, found[i].len, ld(&found[i], RB_LOG2),
				ld(&found[i], RB_MASK));
			goto fail;
		}
	}
	/* SQ slots hold a 208-byte rxe_send_wqe; RQ slots a 40-byte header and 2 SGEs. */
	s0 = ring_esz(&found[0]) >= SEND_WQE_HDR;
	s1 = ring_esz(&found[1]) >= SEND_WQE_HDR;
	if (s0 == s1) {
		set_why("cannot tell SQ from RQ: slot sizes %zu and %zu", ring_esz(&found[0]),
			ring_esz(&found[1]));
		goto fail;
	}
	*sq = found[s0 ? 0 : 1];
	*rq = found[s0 ? 1 : 0];
	if (ring_esz(rq) < RECV_WQE_HDR + 2 * 16 || sq->mask + 1 < QP_WR || rq->mask + 1 < QP_WR) {
		set_why("ring geometry: SQ %u x %zu B, RQ %u x %zu B", sq->mask + 1, ring_esz(sq),
			rq->mask + 1, ring_esz(rq));
		goto fail;
	}
	return qp;
fail:
	ibv_destroy_qp(qp);
	return NULL;
}

/*
 * Checks that the rings found are the victim's: a receive moves the RQ producer index by one
 * over a slot that holds it; a send moves the SQ's over a slot that holds it, and completes
 * (successfully) through the CQ ring, whose slot holds its wr_id. UD: learns the AH number
 * librxe writes into the send WQE.
 */
static int verify_rings(struct pairx *px)
{
	const int ud = px->cfg->type == IBV_QPT_UD;
	uint32_t p0, p1, cq0;
	uint8_t *slot;
	uint64_t want[2];
	int status[2];
	struct ibv_cq *cqs[2] = { px->vcq, px->pcq };
	int ncq = px->pcq == px->vcq ? 1 : 2;

	p0 = ld(&px->vrq, RB_PROD);
	if (post_recv1(px, px->v, TAG_VERIFY | 1, (uintptr_t)buf + REG_VRECV, 256)) {
		set_why("verify: ibv_post_recv: %s", strerror(errno));
		return -1;
	}
	p1 = ld(&px->vrq, RB_PROD);
	slot = ring_slot(&px->vrq, p0);
	if (p1 != ((p0 + 1) & px->vrq.mask) || get64(slot, 0) != (TAG_VERIFY | 1) ||
	    get32(slot, 16 + 12) != 1) {
		set_why("verify: RQ producer %u -> %u, slot wr_id %#llx num_sge %u", p0, p1,
			(unsigned long long)get64(slot, 0), get32(slot, 28));
		return -1;
	}
	if (post_recv1(px, px->p, TAG_VERIFY | 2, (uintptr_t)buf + REG_PRECV, 256)) {
		set_why("verify: peer ibv_post_recv: %s", strerror(errno));
		return -1;
	}
	cq0 = ld(&px->vcqr, RB_PROD);
	p0 = ld(&px->vsq, RB_PROD);
	if (post_send1(px, px->v, px->p->qp_num, TAG_VERIFY | 3, IBV_WR_SEND,
		       (uintptr_t)buf + REG_VSEND, MSG, 0)) {
		set_why("verify: ibv_post_send: %s", strerror(errno));
		return -1;
	}
	p1 = ld(&px->vsq, RB_PROD);
	slot = ring_slot(&px->vsq, p0);
	if (p1 != ((p0 + 1) & px->vsq.mask) || get64(slot, 0) != (TAG_VERIFY | 3) ||
	    get32(slot, 12) != IBV_WR_SEND) {
		set_why("verify: SQ producer %u -> %u, slot wr_id %#llx opcode %u", p0, p1,
			(unsigned long long)get64(slot, 0), get32(slot, 12));
		return -1;
	}
	if (ud)
		px->ah_num = get32(slot, 36);
	want[0] = TAG_VERIFY | 3;
	want[1] = TAG_VERIFY | 2;
	if (wait_wrids(px, cqs, ncq, want, status, NULL, 2, WAIT_LIMIT_S, NULL) != 2 ||
	    status[0] != IBV_WC_SUCCESS || status[1] != IBV_WC_SUCCESS) {
		set_why("verify: SEND completions: send status %d, receive status %d",
			status[0], status[1]);
		return -1;
	}
	/* The send's CQE went through the ring found for the CQ. */
	if (ld(&px->vcqr, RB_PROD) == cq0 ||
	    ld(&px->vcqr, RB_CONS) != ld(&px->vcqr, RB_PROD)) {
		set_why("verify: CQ ring producer %u -> %u, consumer %u", cq0,
			ld(&px->vcqr, RB_PROD), ld(&px->vcqr, RB_CONS));
		return -1;
	}
	for (uint32_t i = cq0, ok = 0; !ok; i = (i + 1) & px->vcqr.mask) {
		if (i == ld(&px->vcqr, RB_PROD)) {
			set_why("verify: the send's wr_id is not in the CQ ring slots %u..%u", cq0,
				ld(&px->vcqr, RB_PROD));
			return -1;
		}
		ok = get64(ring_slot(&px->vcqr, i), 0) == (TAG_VERIFY | 3);
	}
	return 0;
}

/* ---- the storm ---------------------------------------------------------------------------- */

struct storm {
	struct ring *r;
	enum target target;
	enum ibv_qp_type type;
	pthread_mutex_t *prov;
	int stop;
	uint64_t rng;
	uint32_t ah_num, peer_qpn;
	unsigned long slot_writes, index_writes, wild_phases, wild_writes, kernel_index_writes;
	uint8_t tmp[8192];
};

static uint32_t pick32(struct storm *s, const uint32_t *v, size_t n)
{
	uint64_t r = rnd_next(&s->rng);

	return r % 8 == 0 ? (uint32_t)(r >> 32) : v[(r >> 8) % n];
}

/* A send WQE that looks like one: a real opcode, some real keys, sizes and counts that lie. */
/*
 * @n SGEs at @w: addresses mostly inside the MR, sometimes 0, its last word, random or a
 * kernel address; lengths and lkeys picked from @lens and @lkeys.
 */
static void plausible_sges(struct storm *s, uint8_t *w, size_t n, const uint32_t *lens,
			   size_t nlens, const uint32_t *lkeys, size_t nlkeys)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t r = rnd_next(&s->rng);

		put64(w, 16 * i, r % 4 ? (uintptr_t)buf + (r >> 24) % BUF_LEN :
			   (uint64_t[]){ 0, (uintptr_t)buf + BUF_LEN - 8, r, 0xffff800000000000ull }
			   [(r >> 8) % 4]);
		put32(w, 16 * i + 8, pick32(s, lens, nlens));
		put32(w, 16 * i + 12, pick32(s, lkeys, nlkeys));
	}
}

static void plausible_send(struct storm *s, uint8_t *w, size_t len)
{
	static const uint32_t ops[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
					16, 0x20, 0x21, 0xff, 0x80000002 };
	const size_t nsge_fit = (len - SEND_WQE_HDR) / 16;
	uint32_t lens[] = { 0, 1, MSG, 4096, BUF_LEN, BUF_LEN + 1, 0x7fffffff, 0xffffffff };
	uint32_t nsges[] = { 0, 1, 2, 3, (uint32_t)nsge_fit, (uint32_t)nsge_fit + 1, 0xffff,
			     0xffffffff };
	uint32_t lkeys[] = { mr->lkey, mr->lkey, mr->lkey ^ 0x100, mr->lkey + 1, 0, 0xffffffff };
	uint32_t ahs[] = { s->ah_num, s->ah_num, 0, s->ah_num + 1, 0xffffffff, s->ah_num + 0x100,
			   0x7fff };
	uint32_t op = pick32(s, ops, sizeof(ops) / 4);
	uint64_t r;

	memset(w, 0, len);
	put64(w, 0, rnd_next(&s->rng));				/* wr_id */
	put32(w, 12, op);
	r = rnd_next(&s->rng);
	put32(w, 16, (uint32_t)r & 0x1f);			/* send_flags */
	if (r % 16 == 0)
		put32(w, 16, (uint32_t)(r >> 32));
	put32(w, 20, (uint32_t)rnd_next(&s->rng));		/* imm / invalidate rkey */
	if (s->type == IBV_QPT_UD) {
		r = rnd_next(&s->rng);
		put32(w, 24, r % 2 ? s->peer_qpn : (uint32_t)(r >> 32));	/* remote_qpn */
		put32(w, 28, r % 4 ? QKEY : (uint32_t)(r >> 16));		/* remote_qkey */
		put16(w, 32, r % 8 ? 0 : (uint16_t)(r >> 40));			/* pkey_index */
		put32(w, 36, pick32(s, ahs, sizeof(ahs) / 4));			/* ah_num */
		for (size_t o = 56; o < 144; o += 8)				/* struct rxe_av */
			put64(w, o, rnd_next(&s->rng));
		r = rnd_next(&s->rng);
		w[56] = r % 2 ? 1 : (uint8_t)r;				/* port_num */
		w[57] = (uint8_t[]){ 1, 2, 0, 3, 0xff }[(r >> 8) % 5];	/* network_type */
		w[56 + 8 + 20] = r % 2 ? (uint8_t)gid_index : (uint8_t)(r >> 16);
	} else {
		r = rnd_next(&s->rng);
		put64(w, 24, r % 2 ? (uintptr_t)buf + (r >> 20) % (BUF_LEN + 64) : r);
		put32(w, 32, r % 4 ? mr->rkey : (uint32_t)(r >> 8));		/* rdma rkey */
		put64(w, 40, rnd_next(&s->rng));				/* atomic swap */
		put32(w, 48, r % 3 ? mr->rkey : (uint32_t)(r >> 12));		/* atomic rkey */
		if (op == 8) {							/* BIND_MW */
			put32(w, 40, mr->lkey);
			put32(w, 44, (uint32_t)r);
		}
		if (op == 0x20)		/* IB_WR_REG_MR: a kernel pointer where a user WQE has none */
			put64(w, 24, 0xffff888000000000ull | ((r >> 8) & 0xffffff8ull));
	}
	r = rnd_next(&s->rng);
	put32(w, 144, r % 2 ? 0 : (uint32_t)r);				/* status */
	put32(w, 148, r % 4 ? 0 : (uint32_t)(r >> 8));			/* state */
	put64(w, 152, r % 2 ? (uintptr_t)buf : rnd_next(&s->rng));	/* iova */
	if (r % 2)
		for (size_t o = 160; o < 184; o += 8)	/* mask, psns, ack_length, ssn, ... */
			put64(w, o, rnd_next(&s->rng));
	put32(w, 184, pick32(s, lens, sizeof(lens) / 4));		/* dma.length */
	r = rnd_next(&s->rng);
	put32(w, 188, r % 2 ? get32(w, 184) : (uint32_t)r);		/* resid */
	put32(w, 192, r % 4 ? 0 : (uint32_t)(r >> 8));			/* cur_sge */
	put32(w, 196, pick32(s, nsges, sizeof(nsges) / 4));		/* num_sge */
	put32(w, 200, r % 4 ? 0 : (uint32_t)(r >> 24));			/* sge_offset */
	plausible_sges(s, w + SEND_WQE_HDR, nsge_fit, lens, sizeof(lens) / 4, lkeys,
		       sizeof(lkeys) / 4);
}

static void plausible_recv(struct storm *s, uint8_t *w, size_t len)
{
	const size_t nsge_fit = (len - RECV_WQE_HDR) / 16;
	uint32_t lens[] = { 0, 1, MSG, 4096, BUF_LEN, BUF_LEN + 1, 0x7fffffff, 0xffffffff };
	uint32_t nsges[] = { 0, 1, 2, 3, (uint32_t)nsge_fit, (uint32_t)nsge_fit + 1, 0xffff,
			     0xffffffff };
	uint32_t lkeys[] = { mr->lkey, mr->lkey, mr->lkey ^ 0x100, mr->lkey + 1, 0, mr->rkey };
	uint64_t r = rnd_next(&s->rng);

	memset(w, 0, len);
	put64(w, 0, rnd_next(&s->rng));					/* wr_id */
	put32(w, 8, r % 2 ? 0 : (uint32_t)r);				/* reserved, padding */
	put32(w, 12, r % 2 ? 0 : (uint32_t)(r >> 32));
	put32(w, 16, pick32(s, lens, sizeof(lens) / 4));		/* dma.length */
	r = rnd_next(&s->rng);
	put32(w, 20, r % 2 ? get32(w, 16) : (uint32_t)r);		/* resid */
	put32(w, 24, r % 4 ? 0 : (uint32_t)(r >> 8));			/* cur_sge */
	put32(w, 28, pick32(s, nsges, sizeof(nsges) / 4));		/* num_sge */
	put32(w, 32, r % 4 ? 0 : (uint32_t)(r >> 24));			/* sge_offset */
	plausible_sges(s, w + RECV_WQE_HDR, nsge_fit, lens, sizeof(lens) / 4, lkeys,
		       sizeof(lkeys) / 4);
}

/* Garbage into one slot: random bytes or words, or a plausible WQE of the ring's kind. */
static void garbage_slot(struct storm *s)
{
	struct ring *r = s->r;
	size_t len = ring_esz(r) < sizeof(s->tmp) ? ring_esz(r) : sizeof(s->tmp);
	uint64_t x = rnd_next(&s->rng);
	uint32_t u = ld(r, s->target == R_CQ ? RB_CONS : RB_PROD);
	uint32_t idx = x % 2 ? (uint32_t)(x >> 32) : u + (uint32_t)((x >> 8) % 4);
	uint8_t *slot = ring_slot(r, idx);

	switch (s->target == R_CQ ? 1 : (x >> 4) % 4) {
	case 0:
		for (size_t o = 0; o + 8 <= len; o += 8)
			put64(s->tmp, o, rnd_next(&s->rng));
		break;
	case 1:
		memcpy(s->tmp, slot, len);
		for (int i = 0; i < 4; i++)
			put32(s->tmp, (rnd_next(&s->rng) % (len / 4)) * 4,
			      (uint32_t)rnd_next(&s->rng));
		break;
	default:
		if (s->target == R_SQ)
			plausible_send(s, s->tmp, len);
		else
			plausible_recv(s, s->tmp, len);
	}
	memcpy(slot, s->tmp, len);
	s->slot_writes++;
}

/* An index in range, chosen to hit the edges: full, empty, behind the kernel, a few ahead. */
static uint32_t masked_index(struct storm *s, size_t uoff, size_t koff)
{
	struct ring *r = s->r;
	uint32_t m = r->mask, k = ld(r, koff) & m, u = ld(r, uoff) & m;
	uint64_t x = rnd_next(&s->rng);

	switch (x % 8) {
	case 0:
	case 1:
		return (uint32_t)(x >> 32) & m;
	case 2:
		return (u + 1 + (uint32_t)(x >> 8) % 4) & m;
	case 3:
		return (k - 1) & m;
	case 4:
		return k;
	case 5:
		return (k + m) & m;
	case 6:
		return (u - 1 - (uint32_t)(x >> 8) % 4) & m;
	default:
		return (k + 1) & m;
	}
}

static uint32_t wild_index(struct storm *s)
{
	uint32_t m = s->r->mask;
	uint64_t x = rnd_next(&s->rng);

	switch (x % 6) {
	case 0:
		return (uint32_t)(x >> 32);
	case 1:
		return 0xffffffff;
	case 2:
		return m + 1;
	case 3:
		return 0x80000000u | ((uint32_t)(x >> 32) & m);
	case 4:
		return (m + 1) << ((x >> 8) % 8);
	default:
		return ((uint32_t)(x >> 32) & m) | ((m + 1) << 1);
	}
}

/*
 * Out-of-range indices and a garbled header, with the provider kept out (prov held): its
 * post and poll paths use the producer/consumer index and the header's geometry unmasked.
 * The kernel's own index is garbled too, each value the kernel publishes meanwhile being
 * remembered (compare-and-swap), and the last one put back at the end, so that the provider
 * finds a usable ring again.
 */
static void wild_phase(struct storm *s, size_t uoff, size_t koff)
{
	struct ring *r = s->r;
	uint32_t *kp = ring_u32(r, koff);
	uint32_t saved, last, cur;

	pthread_mutex_lock(s->prov);
	s->wild_phases++;
	saved = last = __atomic_load_n(kp, __ATOMIC_ACQUIRE);
	for (int i = 0; i < 64 && !__atomic_load_n(&s->stop, __ATOMIC_RELAXED); i++) {
		uint64_t x = rnd_next(&s->rng);

		st(r, uoff, wild_index(s));
		s->wild_writes++;
		if (x % 4 == 0) {
			st(r, RB_LOG2, (uint32_t[]){ 0, 31, 255, 1, (uint32_t)(x >> 32) }[(x >> 8) % 5]);
			st(r, RB_MASK, (uint32_t[]){ 0, 0xffffffff, r->mask * 2 + 1,
						      (uint32_t)(x >> 32) }[(x >> 12) % 4]);
		}
		if (x % 4 == 1) {
			uint32_t w = (x >> 16) % 2 ? wild_index(s) : (uint32_t)(x >> 32) & r->mask;

			cur = __atomic_load_n(kp, __ATOMIC_ACQUIRE);
			if (cur != last)
				saved = cur;
			if (__atomic_compare_exchange_n(kp, &cur, w, 0, __ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE)) {
				last = w;
				s->kernel_index_writes++;
			} else {
				saved = cur;
			}
		}
		if (s->target != R_CQ)
			garbage_slot(s);
		if ((i & 15) == 15)
			sched_yield();
	}
	ring_restore_header(r);
	cur = last;
	__atomic_compare_exchange_n(kp, &cur, saved, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	st(r, uoff, (uint32_t)rnd_next(&s->rng) & r->mask);
	pthread_mutex_unlock(s->prov);
}

static void *storm_main(void *arg)
{
	struct storm *s = arg;
	/* The index this process owns (SQ/RQ producer, CQ consumer) and the kernel's. */
	const size_t uoff = s->target == R_CQ ? RB_CONS : RB_PROD;
	const size_t koff = s->target == R_CQ ? RB_PROD : RB_CONS;

	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 256 && !__atomic_load_n(&s->stop, __ATOMIC_RELAXED); i++) {
			uint64_t x = rnd_next(&s->rng);

			if (s->target != R_CQ || x % 16 == 0)
				garbage_slot(s);
			if (x % 4 == 1) {
				st(s->r, uoff, masked_index(s, uoff, koff));
				s->index_writes++;
			}
			if ((i & 31) == 31)
				sched_yield();
		}
		if (rnd_next(&s->rng) % 4 == 0)
			wild_phase(s, uoff, koff);
	}
	return NULL;
}

/* ---- the main thread during a storm --------------------------------------------------------- */

/* Polls @cq once (with the provider lock if @guard: its ring is stormed). */
static void poll_some(struct pairx *px, struct ibv_cq *cq, int guard)
{
	struct ibv_wc wc[32];
	int n;

	if (guard && pthread_mutex_trylock(&px->prov)) {
		px->c.polls_skipped++;
		return;
	}
	n = CALL(px, "ibv_poll_cq", ibv_poll_cq(cq, 32, wc));
	if (guard)
		pthread_mutex_unlock(&px->prov);
	if (n < 0) {
		px->c.poll_err++;
		return;
	}
	for (int i = 0; i < n; i++) {
		px->c.cqes++;
		if (wc[i].status != IBV_WC_SUCCESS)
			px->c.cqe_err++;
		if (TAG(wc[i].wr_id) == TAG_PSEND && px->p_out)
			px->p_out--;
	}
}

static void count_post(unsigned long *n, unsigned long *err, int rc)
{
	(*n)++;
	if (rc)
		(*err)++;
}

/* A QP of the case in ERR (or SQE): both back through RESET to RTS. */
static void maybe_recycle(struct pairx *px)
{
	int sv = qp_state(px, px->v), sp = qp_state(px, px->p);

	if (px->c.recycles >= MAX_RECYCLES ||
	    (sv != IBV_QPS_ERR && sv != IBV_QPS_SQE && sp != IBV_QPS_ERR && sp != IBV_QPS_SQE))
		return;
	px->c.recycles++;
	if (bring_up(px))
		px->c.recycle_err++;
	px->p_out = 0;
}

static void storm_loop(struct pairx *px)
{
	const struct case_cfg *cfg = px->cfg;
	const int ud = cfg->type == IBV_QPT_UD;
	struct ibv_qp *rx = cfg->v_sends ? px->p : px->v;	/* the receiving side */
	const int guard_rx = rx == px->v && cfg->target == R_RQ;
	const uint64_t rx_buf = (uintptr_t)buf + (rx == px->v ? REG_VRECV : REG_PRECV);
	double end = now_s() + storm_s, next_check = now_s() + 0.1;
	uint64_t n = 0;
	int rc;

	while (now_s() < end) {
		n++;
		px->c.iterations++;
		if (cfg->v_sends) {
			int guard = cfg->target == R_SQ;

			if (!guard || !pthread_mutex_trylock(&px->prov)) {
				rc = post_send1(px, px->v, px->p->qp_num, TAG_VSEND | n, IBV_WR_SEND,
						(uintptr_t)buf + REG_VSEND, MSG, 0);
				if (guard)
					pthread_mutex_unlock(&px->prov);
				count_post(&px->c.posts, &px->c.post_err, rc);
			}
			rc = CALL(px, "doorbell write()", doorbell(px->v));
			count_post(&px->c.doorbells, &px->c.doorbell_err, rc);
			if (n % 32 == 0) {
				rc = CALL(px, "POST_SEND write() with a WR", legacy_doorbell(px->v, n));
				count_post(&px->c.legacy, &px->c.legacy_err, rc);
			}
		} else if (px->p_out < 16) {
			static const enum ibv_wr_opcode ops[] = { IBV_WR_SEND, IBV_WR_SEND_WITH_IMM,
								  IBV_WR_RDMA_WRITE_WITH_IMM };

			rc = post_send1(px, px->p, px->v->qp_num, TAG_PSEND | n, ops[n % 3],
					(uintptr_t)buf + REG_PSEND, MSG,
					(uintptr_t)buf + REG_WRITE + (n % 64) * MSG);
			count_post(&px->c.posts, &px->c.post_err, rc);
			if (!rc)
				px->p_out++;
		}
		/* Keep the receiving side's RQ fed (it is full most of the time: errors). */
		for (int k = 0; k < 2; k++) {
			if (guard_rx && pthread_mutex_trylock(&px->prov))
				break;
			rc = post_recv1(px, rx, TAG_RECV | n, rx_buf + (n % 64) * 256,
					ud ? GRH + MSG : 256);
			if (guard_rx)
				pthread_mutex_unlock(&px->prov);
			count_post(&px->c.recvs, &px->c.recv_err, rc);
			if (rc)
				break;
		}
		poll_some(px, px->vcq, cfg->target == R_CQ);
		if (px->pcq != px->vcq)
			poll_some(px, px->pcq, 0);
		if (cfg->recycle && now_s() > next_check) {
			next_check = now_s() + 0.1;
			maybe_recycle(px);
		}
	}
}

/* After the storm: polls until no completion came for QUIET_S; returns whether it did. */
static int drain_quiet(struct pairx *px, unsigned long *drained, double *took)
{
	double t0 = now_s(), last = t0;
	unsigned long before = px->c.cqes;

	cur_step = "draining the CQs";
	while (now_s() - last < QUIET_S) {
		unsigned long n0 = px->c.cqes;

		if (now_s() - t0 > DRAIN_LIMIT_S)
			break;
		poll_some(px, px->vcq, 0);
		if (px->pcq != px->vcq)
			poll_some(px, px->pcq, 0);
		if (px->c.cqes != n0)
			last = now_s();
		else
			usleep(1000);
	}
	*drained = px->c.cqes - before;
	*took = now_s() - t0;
	return now_s() - last >= QUIET_S;
}

/*
 * The stormed QP keeps working once reset: both QPs through RESET back to RTS, then a SEND
 * each way, both received with the right bytes.
 */
static int reuse_check(struct pairx *px, unsigned long *stale)
{
	const int ud = px->cfg->type == IBV_QPT_UD;
	uint8_t *reg = buf + REG_REUSE;
	const size_t vsrc = 0, psrc = 0x400, vdst = 0x800, pdst = 0xc00, off = ud ? GRH : 0;
	uint64_t want[4] = { TAG_REUSE | 1, TAG_REUSE | 2, TAG_REUSE | 3, TAG_REUSE | 4 };
	int status[4];
	uint32_t blen[4];
	struct ibv_cq *cqs[2] = { px->vcq, px->pcq };
	int ncq = px->pcq == px->vcq ? 1 : 2;

	if (bring_up(px)) {
		set_why("reset and reconnect after the storm: %s", strerror(errno));
		return -1;
	}
	memset(reg, 0, 0x1000);
	for (size_t i = 0; i < MSG; i++) {
		reg[vsrc + i] = (uint8_t)(0xa5 ^ i);
		reg[psrc + i] = (uint8_t)(0x5a + 3 * i);
	}
	if (post_recv1(px, px->v, want[0], (uintptr_t)reg + vdst, 256) ||
	    post_recv1(px, px->p, want[1], (uintptr_t)reg + pdst, 256) ||
	    post_send1(px, px->v, px->p->qp_num, want[2], IBV_WR_SEND, (uintptr_t)reg + vsrc,
		       MSG, 0) ||
	    post_send1(px, px->p, px->v->qp_num, want[3], IBV_WR_SEND, (uintptr_t)reg + psrc,
		       MSG, 0)) {
		set_why("after the storm and a reset: posting failed: %s", strerror(errno));
		return -1;
	}
	int found = wait_wrids(px, cqs, ncq, want, status, blen, 4, WAIT_LIMIT_S, stale);

	if (found != 4 || status[0] || status[1] || status[2] || status[3]) {
		set_why("after the storm and a reset: %d of 4 completions in %.0f s, statuses "
			"recv %d/%d send %d/%d", found, WAIT_LIMIT_S, status[0], status[1],
			status[2], status[3]);
		return -1;
	}
	if (blen[0] != off + MSG || blen[1] != off + MSG ||
	    memcmp(reg + pdst + off, reg + vsrc, MSG) || memcmp(reg + vdst + off, reg + psrc, MSG)) {
		set_why("after the storm and a reset: received data differs (byte_len %u/%u)",
			blen[0], blen[1]);
		return -1;
	}
	return 0;
}

static const char *ring_name(enum target t)
{
	return t == R_SQ ? "SQ" : t == R_RQ ? "RQ" : "CQ";
}

static void run_storm_case(const struct case_cfg *cfg, int index)
{
	struct pairx px;
	struct storm *s = NULL;
	pthread_t th;
	int ok = 0, started = 0, destroy_ok = 1, quiet = 0, sv = -1, sp = -1;
	unsigned long drained = 0, stale = 0;
	double took = 0, t0;

	begin_case(cfg->name);
	memset(&px, 0, sizeof(px));
	px.cfg = cfg;
	pthread_mutex_init(&px.prov, NULL);
	why[0] = 0;

	px.vcq = create_cq_ring(&px, &px.vcqr);
	if (!px.vcq)
		goto out;
	px.pcq = cfg->shared_cq ? px.vcq : create_cq_ring(&px, NULL);
	if (!px.pcq)
		goto out;
	px.v = create_qp_rings(&px, px.vcq, cfg->type, &px.vsq, &px.vrq);
	if (!px.v)
		goto out;
	px.p = create_qp_rings(&px, px.pcq, cfg->type, NULL, NULL);
	if (!px.p)
		goto out;
	if (cfg->type == IBV_QPT_UD) {
		struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
					  .grh = { .dgid = gid, .sgid_index = gid_index,
						   .hop_limit = 64 } };

		px.ah = CALL(&px, "ibv_create_ah", ibv_create_ah(pd, &aa));
		if (!px.ah) {
			set_why("ibv_create_ah: %s", strerror(errno));
			goto out;
		}
	}
	if (bring_up(&px)) {
		set_why("connecting the QPs: %s", strerror(errno));
		goto out;
	}
	if (verify_rings(&px))
		goto out;
	printf("# %s: SQ %p %u x %zu B, RQ %p %u x %zu B, CQ %p %u x %zu B%s, seed %llu\n",
	       cfg->name, (void *)px.vsq.base, px.vsq.mask + 1, ring_esz(&px.vsq),
	       (void *)px.vrq.base, px.vrq.mask + 1, ring_esz(&px.vrq), (void *)px.vcqr.base,
	       px.vcqr.mask + 1, ring_esz(&px.vcqr), cfg->type == IBV_QPT_UD ? ", UD" : "",
	       (unsigned long long)(seed + index));
	if (cfg->err_first && set_state(&px, px.v, IBV_QPS_ERR)) {
		set_why("RTS -> ERR: %s", strerror(errno));
		goto out;
	}

	s = calloc(1, sizeof(*s));
	if (!s) {
		set_why("out of memory");
		goto out;
	}
	s->r = cfg->target == R_SQ ? &px.vsq : cfg->target == R_RQ ? &px.vrq : &px.vcqr;
	s->target = cfg->target;
	s->type = cfg->type;
	s->prov = &px.prov;
	s->rng = (seed + index) * 0x9e3779b97f4a7c15ull | 1;
	s->ah_num = px.ah_num;
	s->peer_qpn = px.p->qp_num;
	cur_step = "starting the storm";
	if (pthread_create(&th, NULL, storm_main, s)) {
		set_why("pthread_create");
		goto out;
	}
	started = 1;
	t0 = now_s();
	storm_loop(&px);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
	cur_step = "stopping the storm";
	pthread_join(th, NULL);
	started = 0;
	t0 = now_s() - t0;

	/* Back to a ring the provider can use; the CQ: empty from the kernel's last index. */
	ring_restore_header(s->r);
	if (cfg->target == R_CQ)
		st(&px.vcqr, RB_CONS, ld(&px.vcqr, RB_PROD) & px.vcqr.mask);
	quiet = drain_quiet(&px, &drained, &took);
	sv = qp_state(&px, px.v);
	sp = qp_state(&px, px.p);
	if (cfg->target != R_CQ)
		st(s->r, RB_PROD, ld(s->r, RB_CONS) & s->r->mask);

	printf("# %s: %.2f s storm on the %s: %lu slot writes, %lu index writes, %lu wild "
	       "phases (%lu writes, %lu to the kernel's index)\n", cfg->name, t0,
	       ring_name(cfg->target), s->slot_writes, s->index_writes, s->wild_phases,
	       s->wild_writes, s->kernel_index_writes);
	printf("# %s: main: %lu iterations, %lu posts (%lu failed), %lu receives (%lu failed), "
	       "%lu doorbells (%lu failed), %lu with a WR (%lu failed), %lu completions (%lu "
	       "errors), %lu polls skipped, %lu resets (%lu failed)\n", cfg->name,
	       px.c.iterations, px.c.posts, px.c.post_err, px.c.recvs, px.c.recv_err,
	       px.c.doorbells, px.c.doorbell_err, px.c.legacy, px.c.legacy_err, px.c.cqes,
	       px.c.cqe_err, px.c.polls_skipped, px.c.recycles, px.c.recycle_err);
	printf("# %s: after: victim %s, peer %s, %lu completions drained in %.2f s%s\n",
	       cfg->name, state_name(sv), state_name(sp), drained, took,
	       quiet ? "" : " (still arriving)");

	if (!quiet) {
		set_why("completions still arriving %.1f s after the storm", took);
		goto out;
	}
	if (sv < 0 || sp < 0) {
		set_why("ibv_query_qp after the storm: %s", strerror(errno));
		goto out;
	}
	if (reuse_check(&px, &stale))
		goto out;
	ok = 1;
out:
	if (started) {
		__atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
		pthread_join(th, NULL);
	}
	/* Destroy everything (rings unmapped by the provider once the kernel let go). */
	cur_step = "destroying";
	if (px.v && CALL(&px, "ibv_destroy_qp", ibv_destroy_qp(px.v)))
		destroy_ok = 0;
	if (px.p && CALL(&px, "ibv_destroy_qp", ibv_destroy_qp(px.p)))
		destroy_ok = 0;
	if (px.ah && CALL(&px, "ibv_destroy_ah", ibv_destroy_ah(px.ah)))
		destroy_ok = 0;
	if (px.pcq && px.pcq != px.vcq && CALL(&px, "ibv_destroy_cq", ibv_destroy_cq(px.pcq)))
		destroy_ok = 0;
	if (px.vcq && CALL(&px, "ibv_destroy_cq", ibv_destroy_cq(px.vcq)))
		destroy_ok = 0;
	free(s);
	pthread_mutex_destroy(&px.prov);
	printf("# %s: longest call %s %.3f s, %lu stale completions after the reset\n",
	       cfg->name, px.max_call_name ? px.max_call_name : "-", px.max_call, stale);
	if (ok && !destroy_ok) {
		ok = 0;
		set_why("destroying the case's objects failed: %s", strerror(errno));
	}
	if (ok && px.slow_call) {
		ok = 0;
		set_why("%s took %.1f s (limit %.0f s)", px.max_call_name, px.max_call,
			CALL_LIMIT_S);
	}
	alarm(0);
	check(cfg->name, ok, why);
}

/* ---- user_wr_lists --------------------------------------------------------------------------- */

/*
 * Work request lists a process hands to the legacy POST_SEND, POST_RECV and POST_SRQ_RECV
 * commands for its own QP and SRQ: ib_core builds ib_send_wr/ib_recv_wr chains from them
 * and calls the driver. A user QP or SRQ takes its work requests through its ring, so each
 * list must be refused (EINVAL from the driver, or EOPNOTSUPP from the core where the
 * command is not enabled), whatever its SGEs name: here the device's local_dma_lkey (0)
 * over a kernel address, which must never be read or written.
 */
struct raw_post_recv {
	uint32_t command;
	uint16_t in_words, out_words;
	uint64_t response;
	uint32_t handle, wr_count, sge_count, wqe_size;
};
_Static_assert(sizeof(struct raw_post_recv) == 32, "struct ibv_post_recv");
#define IB_USER_VERBS_CMD_POST_RECV 29
#define IB_USER_VERBS_CMD_POST_SRQ_RECV 30
#define KERNEL_ADDR 0xffff888000100000ull	/* the x86-64 direct map's start, plus 1 MiB */

/* Writes one work request (WR, WR_LEN bytes) with one SGE {KERNEL_ADDR, 64, 0}. */
static int raw_post(int fd, uint32_t command, uint32_t handle, const uint8_t *wr,
		    size_t wr_len)
{
	uint32_t resp[2] = { 0, 0 };
	struct {
		struct raw_post_recv h;
		uint8_t wr[56];
		uint8_t sge[16];
	} c;
	size_t len = sizeof(c.h) + wr_len + sizeof(c.sge);

	memset(&c, 0, sizeof(c));
	c.h.command = command;
	c.h.in_words = len / 4;
	c.h.out_words = sizeof(resp) / 4;
	c.h.response = (uintptr_t)&resp;
	c.h.handle = handle;
	c.h.wr_count = 1;
	c.h.sge_count = 1;
	c.h.wqe_size = wr_len;
	memcpy(c.wr, wr, wr_len);
	/* The SGEs follow the work requests. */
	put64((uint8_t *)&c + sizeof(c.h) + wr_len, 0, KERNEL_ADDR);
	put32((uint8_t *)&c + sizeof(c.h) + wr_len, 8, 64);
	put32((uint8_t *)&c + sizeof(c.h) + wr_len, 12, 0);
	return write(fd, &c, len) == (ssize_t)len ? 0 : errno;
}

static int user_wr_lists(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_qp *qp = NULL;
	struct ibv_srq *srq = NULL;
	int ok = 0;

	cur_step = "user_wr_lists: creating a CQ, a QP, an SRQ";
	if (cq) {
		struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq,
					       .qp_type = IBV_QPT_RC,
					       .cap = { .max_send_wr = 8, .max_recv_wr = 8,
							.max_send_sge = 1, .max_recv_sge = 1,
							.max_inline_data = 64 } };
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };

		qp = ibv_create_qp(pd, &ia);
		srq = ibv_create_srq(pd, &sa);
	}
	if (!cq || !qp || !srq) {
		set_why("creating a CQ, a QP and an SRQ: %s", strerror(errno));
		goto out;
	}
	if (rc_up(NULL, qp, qp->qp_num, &calm_conn)) {
		set_why("bringing the QP to RTS: %s", strerror(errno));
		goto out;
	}
	{
		/* struct ib_uverbs_send_wr: wr_id, num_sge @8, opcode @12, send_flags @16. */
		static const struct { uint32_t opcode, flags; const char *what; } sends[] = {
			{ 2, 8, "an inline SEND" },		/* IB_WR_SEND, IB_SEND_INLINE */
			{ 2, 2, "a signaled SEND" },		/* IB_SEND_SIGNALED */
			{ 0, 2, "an RDMA WRITE" },
		};
		uint8_t wr[56];
		int e;

		for (size_t i = 0; i < sizeof(sends) / sizeof(sends[0]); i++) {
			memset(wr, 0, sizeof(wr));
			put64(wr, 0, 100 + i);
			put32(wr, 8, 1);
			put32(wr, 12, sends[i].opcode);
			put32(wr, 16, sends[i].flags);
			put64(wr, 24, (uintptr_t)buf);
			put32(wr, 32, mr->rkey);
			cur_step = "user_wr_lists: POST_SEND with a list";
			e = raw_post(qp->context->cmd_fd, IB_USER_VERBS_CMD_POST_SEND, qp->handle,
				     wr, sizeof(wr));
			if (e != EINVAL) {
				set_why("POST_SEND of %s naming kernel memory: %s, not EINVAL",
					sends[i].what, e ? strerror(e) : "accepted");
				goto out;
			}
		}
		/* struct ib_uverbs_recv_wr: wr_id, num_sge @8. */
		memset(wr, 0, 16);
		put64(wr, 0, 200);
		put32(wr, 8, 1);
		/*
		 * rdma_rxe's command mask, which rrxe keeps, leaves these two out (the core
		 * answers EOPNOTSUPP); a driver that enabled them still refuses (EINVAL).
		 */
		cur_step = "user_wr_lists: POST_RECV with a list";
		e = raw_post(qp->context->cmd_fd, IB_USER_VERBS_CMD_POST_RECV, qp->handle, wr, 16);
		printf("# hostile_user_wr_lists: POST_RECV answered %s\n", strerror(e));
		if (e != EINVAL && e != EOPNOTSUPP) {
			set_why("POST_RECV naming kernel memory: %s, not refused",
				e ? strerror(e) : "accepted");
			goto out;
		}
		cur_step = "user_wr_lists: POST_SRQ_RECV with a list";
		e = raw_post(srq->context->cmd_fd, IB_USER_VERBS_CMD_POST_SRQ_RECV, srq->handle,
			     wr, 16);
		printf("# hostile_user_wr_lists: POST_SRQ_RECV answered %s\n", strerror(e));
		if (e != EINVAL && e != EOPNOTSUPP) {
			set_why("POST_SRQ_RECV naming kernel memory: %s, not refused",
				e ? strerror(e) : "accepted");
			goto out;
		}
	}
	{
		/* Nothing was queued: the CQ stays empty. */
		struct ibv_wc wc;

		cur_step = "user_wr_lists: polling";
		usleep(200000);
		if (ibv_poll_cq(cq, 1, &wc) != 0) {
			set_why("a completion (wr_id %llu) for a refused list",
				(unsigned long long)wc.wr_id);
			goto out;
		}
	}
	ok = 1;
out:
	cur_step = "user_wr_lists: destroying";
	if (srq && ibv_destroy_srq(srq))
		ok = 0;
	if (qp && ibv_destroy_qp(qp))
		ok = 0;
	if (cq && ibv_destroy_cq(cq))
		ok = 0;
	if (!ok && !why[0])
		set_why("destroying the CQ, QP or SRQ failed");
	return ok;
}

/* ---- stale_ring_offsets ------------------------------------------------------------------- */

#define STALE_CQS 100
#define SWEEP_ALWAYS 64	/* rust/kernel/rdma/mmap.rs: tables this small are swept at once */

/* The uverbs mappings of this process: their starts, lengths and file offsets. */
static int uverbs_offsets(unsigned long *start, size_t *len, unsigned long long *off, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f) && n < max) {
		unsigned long s, e;
		unsigned long long o;
		char *path = strchr(line, '/');

		if (sscanf(line, "%lx-%lx %*s %llx", &s, &e, &o) != 3 || !path ||
		    strncmp(path, "/dev/infiniband/uverbs", 22))
			continue;
		start[n] = s;
		len[n] = e - s;
		off[n] = o;
		n++;
	}
	fclose(f);
	return n;
}

/* Whether the ring at @off (@len bytes) of the context on @fd can still be mapped. */
static int still_mappable(int fd, unsigned long long off, size_t len, int *bad_errno)
{
	void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off);

	if (p == MAP_FAILED) {
		if (errno != EINVAL)
			*bad_errno = errno;
		return 0;
	}
	munmap(p, len);
	return 1;
}

static int stale_ring_offsets(const char *dev)
{
	struct ibv_context *c2 = open_dev(dev);
	static struct ibv_cq *cqs[STALE_CQS];
	static unsigned long long off[STALE_CQS];
	static size_t len[STALE_CQS];
	enum { MAXM = 2 * STALE_CQS + 16 };
	static unsigned long bs[MAXM], as[MAXM];
	static size_t bl[MAXM], al[MAXM];
	static unsigned long long bo[MAXM], ao[MAXM];
	int ok = 0, n = 0, worst = 0, bad_errno = 0;

	cur_step = "stale_ring_offsets: creating CQs";
	if (!c2) {
		set_why("opening a second context: %s", strerror(errno));
		return 0;
	}
	for (n = 0; n < STALE_CQS; n++) {
		int nb = uverbs_offsets(bs, bl, bo, MAXM), na, found = 0;

		cqs[n] = ibv_create_cq(c2, 4, NULL, NULL, 0);
		if (!cqs[n]) {
			set_why("creating CQ %d: %s", n, strerror(errno));
			goto out;
		}
		na = uverbs_offsets(as, al, ao, MAXM);
		for (int i = 0; i < na; i++) {
			int seen = 0;

			for (int j = 0; j < nb && !seen; j++)
				seen = bs[j] == as[i];
			if (!seen) {
				off[n] = ao[i];
				len[n] = al[i];
				found++;
			}
		}
		if (found != 1) {
			n++;
			set_why("CQ %d added %d uverbs mappings, not 1", n - 1, found);
			goto out;
		}
	}
	cur_step = "stale_ring_offsets: destroying CQs";
	for (int i = 0; i < STALE_CQS; i++) {
		int live = STALE_CQS - 1 - i, stale = 0;

		if (ibv_destroy_cq(cqs[i])) {
			set_why("destroying CQ %d: %s", i, strerror(errno));
			cqs[i] = NULL;
			goto out;
		}
		cqs[i] = NULL;
		for (int j = 0; j <= i; j++)
			stale += still_mappable(c2->cmd_fd, off[j], len[j], &bad_errno);
		if (bad_errno) {
			set_why("mmap of a destroyed CQ's ring: %s, not EINVAL", strerror(bad_errno));
			goto out;
		}
		if (stale > worst)
			worst = stale;
		if (stale && (live + stale <= SWEEP_ALWAYS || stale * 8 >= live + stale)) {
			set_why("after %d of %d CQs destroyed, %d destroyed rings still mappable "
				"with %d CQs alive", i + 1, STALE_CQS, stale, live);
			goto out;
		}
	}
	printf("# hostile_stale_ring_offsets: at most %d destroyed rings mappable at once "
	       "(%d CQs), none at the end\n", worst, STALE_CQS);
	ok = 1;
out:
	for (int i = 0; i < n && i < STALE_CQS; i++)
		if (cqs[i] && ibv_destroy_cq(cqs[i]))
			ok = 0;
	if (ibv_close_device(c2))
		ok = 0;
	if (!ok && !why[0])
		set_why("destroying the CQs or closing the context failed");
	return ok;
}

/* ---- get_context_twice ------------------------------------------------------------------- */

#define GET_CONTEXT_CHILDREN 4

/* A child: a context (librxe's GET_CONTEXT), then a second GET_CONTEXT by ioctl on its file. */
static int get_context_again(const char *dev)
{
	struct ibv_context *c2 = open_dev(dev);
	struct ib_uverbs_ioctl_hdr hdr = {
		.length = sizeof(hdr),
		.object_id = UVERBS_OBJECT_DEVICE,
		.method_id = UVERBS_METHOD_GET_CONTEXT,
		.driver_id = RDMA_DRIVER_RXE,
	};
	int rc, err;

	if (!c2)
		return 2;
	rc = ioctl(c2->cmd_fd, RDMA_VERBS_IOCTL, &hdr);
	err = errno;
	if (ibv_close_device(c2))
		return 3;
	if (rc == 0)
		return 4;
	return err == EINVAL ? 0 : 10 + (err & 0x7f);
}

static int get_context_twice(const char *dev)
{
	int ok = 1;

	cur_step = "get_context_twice: children";
	for (int i = 0; i < GET_CONTEXT_CHILDREN; i++) {
		pid_t pid = fork();
		int st = 0;

		if (pid < 0) {
			set_why("fork: %s", strerror(errno));
			return 0;
		}
		if (pid == 0)
			_exit(get_context_again(dev));
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) {
			set_why("child %d did not exit", i);
			return 0;
		}
		switch (WEXITSTATUS(st)) {
		case 0:
			break;
		case 2:
			set_why("child %d: opening the device failed", i);
			ok = 0;
			break;
		case 3:
			set_why("child %d: closing the device failed", i);
			ok = 0;
			break;
		case 4:
			set_why("child %d: a second GET_CONTEXT on one file succeeded", i);
			ok = 0;
			break;
		default:
			set_why("child %d: a second GET_CONTEXT failed with %s, not EINVAL", i,
				strerror(WEXITSTATUS(st) - 10));
			ok = 0;
		}
	}
	return ok;
}

/* ---- device_still_works ------------------------------------------------------------------- */

static int device_still_works(const char *dev)
{
	struct ibv_context *c2 = open_dev(dev);
	struct ibv_pd *pd2 = NULL;
	struct ibv_cq *cq2 = NULL;
	struct ibv_mr *mr2 = NULL;
	struct ibv_qp *qa = NULL, *qb = NULL;
	const size_t len = 4096;
	uint8_t *b2 = NULL;
	int ok = 0, st_send = -1, st_recv = -1, st_write = -1;

	if (!c2) {
		set_why("a new context on %s: %s", dev, strerror(errno));
		return 0;
	}
	cur_step = "setting up a fresh pair";
	pd2 = ibv_alloc_pd(c2);
	cq2 = ibv_create_cq(c2, 16, NULL, NULL, 0);
	b2 = aligned_alloc(4096, 4 * len);
	if (b2) {
		memset(b2, 0, 4 * len);
		mr2 = pd2 ? ibv_reg_mr(pd2, b2, 4 * len, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE) : NULL;
	}
	if (pd2 && cq2) {
		struct ibv_qp_init_attr ia = { .send_cq = cq2, .recv_cq = cq2,
					       .qp_type = IBV_QPT_RC,
					       .cap = { .max_send_wr = 8, .max_recv_wr = 8,
							.max_send_sge = 1, .max_recv_sge = 1 } };

		qa = ibv_create_qp(pd2, &ia);
		qb = ibv_create_qp(pd2, &ia);
	}
	if (!pd2 || !cq2 || !mr2 || !qa || !qb) {
		set_why("fresh PD/CQ/MR/QPs: %s", strerror(errno));
		goto out;
	}
	{
		/* rc_up() uses the global PD only through the QPs: fine for another context. */
		if (rc_up(NULL, qa, qb->qp_num, &calm_conn) ||
		    rc_up(NULL, qb, qa->qp_num, &calm_conn)) {
			set_why("connecting a fresh RC pair: %s", strerror(errno));
			goto out;
		}
	}
	for (size_t i = 0; i < len; i++) {
		b2[i] = (uint8_t)(i * 7 + 3);
		b2[len + i] = (uint8_t)(i * 13 + 5 + (i >> 8));
	}
	{
		struct ibv_sge rs = { (uintptr_t)b2 + 2 * len, len, mr2->lkey };
		struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_sge ss = { (uintptr_t)b2, len, mr2->lkey };
		struct ibv_send_wr sw = { .wr_id = 2, .sg_list = &ss, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *sbad;
		struct ibv_wc wc;

		cur_step = "fresh pair: SEND";
		if (ibv_post_recv(qb, &rw, &rbad) || ibv_post_send(qa, &sw, &sbad)) {
			set_why("fresh pair: posting the SEND: %s", strerror(errno));
			goto out;
		}
		for (int i = 0; i < 2; i++) {
			if (poll_one(cq2, &wc, WAIT_LIMIT_S) != 1)
				break;
			if (wc.wr_id == 1)
				st_recv = wc.status;
			else if (wc.wr_id == 2)
				st_send = wc.status;
		}
		if (st_send || st_recv || memcmp(b2 + 2 * len, b2, len)) {
			set_why("fresh pair: SEND status %d, receive status %d%s", st_send, st_recv,
				st_send || st_recv ? "" : ", data differs");
			goto out;
		}
		ss.addr = (uintptr_t)b2 + len;
		sw.wr_id = 3;
		sw.opcode = IBV_WR_RDMA_WRITE;
		sw.wr.rdma.remote_addr = (uintptr_t)b2 + 3 * len;
		sw.wr.rdma.rkey = mr2->rkey;
		cur_step = "fresh pair: RDMA WRITE";
		if (ibv_post_send(qa, &sw, &sbad)) {
			set_why("fresh pair: posting the RDMA WRITE: %s", strerror(errno));
			goto out;
		}
		if (poll_one(cq2, &wc, WAIT_LIMIT_S) == 1 && wc.wr_id == 3)
			st_write = wc.status;
		if (st_write || memcmp(b2 + 3 * len, b2 + len, len)) {
			set_why("fresh pair: RDMA WRITE status %d%s", st_write,
				st_write ? "" : ", data differs");
			goto out;
		}
	}
	ok = 1;
out:
	cur_step = "fresh pair: destroying";
	if (qa && ibv_destroy_qp(qa))
		ok = 0;
	if (qb && ibv_destroy_qp(qb))
		ok = 0;
	if (cq2 && ibv_destroy_cq(cq2))
		ok = 0;
	if (mr2 && ibv_dereg_mr(mr2))
		ok = 0;
	if (pd2 && ibv_dealloc_pd(pd2))
		ok = 0;
	if (ibv_close_device(c2))
		ok = 0;
	free(b2);
	if (!ok && !why[0])
		set_why("destroying the fresh pair's objects failed");
	return ok;
}

int main(int argc, char **argv)
{
	static const struct case_cfg cases[] = {
		{ .name = "hostile_sq_storm_rc", .type = IBV_QPT_RC, .target = R_SQ,
		  .recycle = 1, .v_sends = 1 },
		{ .name = "hostile_sq_storm_rc_err", .type = IBV_QPT_RC, .target = R_SQ,
		  .err_first = 1, .v_sends = 1 },
		{ .name = "hostile_sq_storm_ud", .type = IBV_QPT_UD, .target = R_SQ,
		  .recycle = 1, .v_sends = 1 },
		{ .name = "hostile_rq_storm", .type = IBV_QPT_RC, .target = R_RQ, .recycle = 1 },
		{ .name = "hostile_cq_storm", .type = IBV_QPT_RC, .target = R_CQ, .recycle = 1,
		  .shared_cq = 1, .v_sends = 1 },
	};
	double t_start = now_s();
	int ok;

	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX [STORM_SECONDS [SEED]]\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);
	gid_index = atoi(argv[2]);
	if (argc > 3)
		storm_s = atof(argv[3]);
	seed = argc > 4 ? strtoull(argv[4], NULL, 0) :
			  (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
	printf("# hostile: storms of %.2f s, seed %llu\n", storm_s, (unsigned long long)seed);

	begin_case("hostile_setup");
	ctx = open_dev(argv[1]);
	if (!ctx || ibv_query_gid(ctx, 1, gid_index, &gid)) {
		check("hostile_setup", 0, "open device / query gid");
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	buf = aligned_alloc(4096, BUF_LEN);
	if (buf)
		memset(buf, 0, BUF_LEN);
	mr = pd && buf ? ibv_reg_mr(pd, buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC) : NULL;
	if (!mr) {
		check("hostile_setup", 0, "PD / 1 MiB MR");
		return 1;
	}
	alarm(0);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_storm_case(&cases[i], (int)i);

	/* Work request lists for a user QP and SRQ through the legacy commands. */
	begin_case("hostile_user_wr_lists");
	why[0] = 0;
	ok = user_wr_lists();
	alarm(0);
	check("hostile_user_wr_lists", ok, why);

	/* The rings of destroyed CQs stop being mappable, within a bound. */
	begin_case("hostile_stale_ring_offsets");
	why[0] = 0;
	ok = stale_ring_offsets(argv[1]);
	alarm(0);
	check("hostile_stale_ring_offsets", ok, why);

	/* A refused second context leaves nothing behind. */
	begin_case("hostile_get_context_twice");
	why[0] = 0;
	ok = get_context_twice(argv[1]);
	alarm(0);
	check("hostile_get_context_twice", ok, why);

	/* Another context on the same device: a clean pair, SEND and RDMA WRITE. */
	begin_case("hostile_device_still_works");
	why[0] = 0;
	cur_step = "releasing the hostile context";
	int released = !ibv_dereg_mr(mr) && !ibv_dealloc_pd(pd) && !ibv_close_device(ctx);

	ok = device_still_works(argv[1]);
	if (ok && !released) {
		ok = 0;
		set_why("releasing the hostile context's MR/PD/context failed");
	}
	alarm(0);
	check("hostile_device_still_works", ok, why);
	free(buf);
	printf("# hostile: %.1f s in all\n", now_s() - t_start);
	return failed;
}
