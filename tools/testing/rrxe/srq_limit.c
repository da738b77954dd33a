// SPDX-License-Identifier: GPL-2.0
/*
 * srq_limit: a shared receive queue through stock libibverbs and rdma-core's rxe provider,
 * on one device (loopback): its attributes, the limit event, and its WQEs taken by two QPs.
 *
 * An SRQ of 16 WQEs (1 SGE) gets 8 receives, each with its own 64-byte buffer; RC QP a sends
 * to QPs b and c, both attached to the SRQ (the three on this device, connected through its
 * own GID). The limit is armed at 4 (ibv_modify_srq, IBV_SRQ_LIMIT) and read back
 * (ibv_query_srq). Then SENDs, alternately to b and c, one at a time, each waited for:
 *  - srq_attrs: max_wr >= 16, max_sge >= 1, srq_limit as armed; a limit above max_wr is
 *    refused (EINVAL);
 *  - srq_sends: 7 SENDs complete, each into a receive of the SRQ (every byte of every buffer
 *    checked: the payload of SEND i lands in exactly one buffer, once; the wr_ids of the
 *    receives taken are distinct);
 *  - srq_limit_event: IBV_EVENT_SRQ_LIMIT_REACHED for this SRQ arrives once the 5th receive
 *    was taken (3 left, below 4), and not before: none is pending after the 4th (4 left);
 *  - srq_limit_disarmed: once it fired, ibv_query_srq reports srq_limit 0, and no second
 *    event comes for the 6th and 7th;
 *  - srq_qp_error_keeps_wqes: QP c moved to ERR takes nothing with it: the SRQ's last
 *    receive still takes an 8th SEND, to b;
 *  - qp_last_wqe_event: c's move to ERR raised IBV_EVENT_QP_LAST_WQE_REACHED for c;
 *  - qp_access_err_event: an RDMA WRITE from a to b (which grants remote write) with a
 *    wrong rkey (the receive buffers' MR allows remote write) completes on a with
 *    IBV_WC_REM_ACCESS_ERR, and b's owner gets IBV_EVENT_QP_ACCESS_ERR, then
 *    IBV_EVENT_QP_LAST_WQE_REACHED (b, on the SRQ, entered ERR);
 *  - cq_err_event: a send CQ of the fewest entries the device gives (ibv_create_cq with 1)
 *    that more signaled WRITEs complete into than it holds, never polled, overflows:
 *    IBV_EVENT_CQ_ERR for it;
 *  - sq_drained_event: an RC QP with WRITEs posted, moved to SQD, raises
 *    IBV_EVENT_SQ_DRAINED once they completed (all of them, successfully); ibv_query_qp
 *    then reports SQD and sq_draining 0; back to RTS, a new WRITE completes;
 *  - srq_resize: an SRQ of 4 WQEs with 3 posted grows (IBV_SRQ_MAX_WR) to at least 64:
 *    ibv_query_srq says so, 40 more receives can be posted, and SENDs to a QP on it take
 *    the 3 first receives first, in order, then the new ones; shrinking it below the WQEs
 *    it holds fails (EINVAL) and changes nothing;
 *  - srq_destroy_busy: the SRQ cannot be destroyed while QPs use it (EBUSY), can after.
 * Prints "RRXE-TEST <name> ok|FAIL: ..." per check and exits non-zero if any failed.
 *
 * Usage: srq_limit DEVICE GID_INDEX
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "rrxe_test.h"

#define NRECV	8
#define MSG	64

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = srq ? 0 : 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &ia);
}

static int connect_qp(struct ibv_qp *qp, uint32_t dqpn, union ibv_gid *gid, int gid_index)
{
	return rc_connect(qp, dqpn, gid, gid_index, IBV_ACCESS_REMOTE_WRITE);
}

/* The QP and CQ events seen: type and QP (or CQ), in order. */
static struct { enum ibv_event_type type; struct ibv_qp *qp; } qp_ev[32];
static int n_qp_ev;

/* Takes the async events waiting (none if @ms is 0 and none is queued): SRQ limit events of
 * @srq counted in *@limits, QP events recorded in qp_ev, all printed. */
static void drain_events(struct ibv_context *ctx, struct ibv_srq *srq, int ms, int *limits)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	while (poll(&p, 1, ms) > 0) {
		if (ibv_get_async_event(ctx, &ev))
			return;
		printf("# async event %s\n", ibv_event_type_str(ev.event_type));
		if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == srq)
			(*limits)++;
		if ((ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED ||
		     ev.event_type == IBV_EVENT_QP_ACCESS_ERR || ev.event_type == IBV_EVENT_QP_FATAL ||
		     ev.event_type == IBV_EVENT_QP_REQ_ERR || ev.event_type == IBV_EVENT_SQ_DRAINED) &&
		    n_qp_ev < 32) {
			qp_ev[n_qp_ev].type = ev.event_type;
			qp_ev[n_qp_ev++].qp = ev.element.qp;
		}
		if (ev.event_type == IBV_EVENT_CQ_ERR && n_qp_ev < 32) {
			/* Recorded with the CQ in place of a QP. */
			qp_ev[n_qp_ev].type = ev.event_type;
			qp_ev[n_qp_ev++].qp = (struct ibv_qp *)ev.element.cq;
		}
		ibv_ack_async_event(&ev);
		ms = 0;
	}
}

/* Waits up to @ms for a QP event of @type for @qp after index @from; returns its index, or
 * -1. */
static int wait_qp_event(struct ibv_context *ctx, struct ibv_srq *srq, int *limits, int from,
			 enum ibv_event_type type, struct ibv_qp *qp, int ms)
{
	double end = now_s() + ms / 1000.0;

	for (;;) {
		for (int i = from; i < n_qp_ev; i++)
			if (qp_ev[i].type == type && qp_ev[i].qp == qp)
				return i;
		if (now_s() > end)
			return -1;
		drain_events(ctx, srq, 100, limits);
	}
}

static unsigned char pattern(int msg, int i)
{
	return (unsigned char)(msg * 37 + i * 11 + 5);
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *a, *b, *c;
	struct ibv_mr *rmr, *smr;
	struct ibv_srq_attr sa;
	union ibv_gid gid;
	unsigned char *rbuf, sbuf[MSG];
	int gid_index, limits = 0, used[NRECV] = { 0 }, sends_ok = 1, before = -1, flags;
	char why[256] = "";

	if (argc != 3) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX\n", argv[0]);
		return 2;
	}
	gid_index = atoi(argv[2]);
	ctx = open_dev(argv[1]);
	if (!ctx || ibv_query_gid(ctx, 1, gid_index, &gid)) {
		check("srq_setup", 0, "device or GID");
		return 1;
	}
	flags = fcntl(ctx->async_fd, F_GETFL);
	fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 16, .max_sge = 1 } };
	srq = cq ? ibv_create_srq(pd, &si) : NULL;
	rbuf = calloc(NRECV, MSG);
	rmr = srq ? ibv_reg_mr(pd, rbuf, NRECV * MSG,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
	smr = rmr ? ibv_reg_mr(pd, sbuf, MSG, 0) : NULL;
	a = smr ? make_qp(pd, cq, NULL) : NULL;
	b = a ? make_qp(pd, cq, srq) : NULL;
	c = b ? make_qp(pd, cq, srq) : NULL;
	if (!c || connect_qp(a, b->qp_num, &gid, gid_index) ||
	    connect_qp(b, a->qp_num, &gid, gid_index)) {
		check("srq_setup", 0, "PD, CQ, SRQ, MRs or QPs");
		return 1;
	}
	/* c is connected to a too; a's one connection is to b, so SENDs to c go through a QP
	 * a2 connected to c. */
	struct ibv_qp *a2 = make_qp(pd, cq, NULL);

	if (!a2 || connect_qp(a2, c->qp_num, &gid, gid_index) ||
	    connect_qp(c, a2->qp_num, &gid, gid_index)) {
		check("srq_setup", 0, "second sender");
		return 1;
	}
	check("srq_setup", 1, "");

	for (int i = 0; i < NRECV; i++) {
		struct ibv_sge sge = { (uintptr_t)(rbuf + i * MSG), MSG, rmr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 100 + i, .sg_list = &sge, .num_sge = 1 }, *bad;

		memset(rbuf + i * MSG, 0xee, MSG);
		if (ibv_post_srq_recv(srq, &wr, &bad)) {
			check("srq_post", 0, "ibv_post_srq_recv");
			return 1;
		}
	}
	sa = (struct ibv_srq_attr){ .srq_limit = 4 };
	int arm = ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT);
	memset(&sa, 0, sizeof(sa));
	int q = ibv_query_srq(srq, &sa);
	struct ibv_srq_attr big = { .srq_limit = sa.max_wr + 1 };
	int over = ibv_modify_srq(srq, &big, IBV_SRQ_LIMIT);
	checkf("srq_attrs", !arm && !q && sa.max_wr >= 16 && sa.max_sge >= 1 && sa.srq_limit == 4 &&
		   over == EINVAL,
	       "arm %d, query %d: max_wr %u max_sge %u srq_limit %u; limit max_wr+1: %d", arm, q,
	       sa.max_wr, sa.max_sge, sa.srq_limit, over);

	for (int m = 0; m < NRECV - 1; m++) {
		struct ibv_qp *from = m % 2 ? a2 : a;
		struct ibv_sge sge = { (uintptr_t)sbuf, MSG, smr->lkey };
		struct ibv_send_wr wr = { .wr_id = m, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;
		int got_send = 0, got_recv = 0;

		for (int i = 0; i < MSG; i++)
			sbuf[i] = pattern(m, i);
		if (ibv_post_send(from, &wr, &bad)) {
			snprintf(why, sizeof(why), "SEND %d not posted", m);
			sends_ok = 0;
			break;
		}
		while (got_send + got_recv < 2) {
			struct ibv_wc wc;

			if (poll_one(cq, &wc, 10) != 1 || wc.status != IBV_WC_SUCCESS) {
				snprintf(why, sizeof(why), "SEND %d: no completion or status %d", m,
					 wc.status);
				sends_ok = 0;
				break;
			}
			if (wc.opcode == IBV_WC_SEND) {
				got_send++;
				continue;
			}
			got_recv++;
			int k = (int)wc.wr_id - 100;
			uint32_t to = m % 2 ? c->qp_num : b->qp_num;

			if (k < 0 || k >= NRECV || used[k] || wc.byte_len != MSG || wc.qp_num != to) {
				snprintf(why, sizeof(why),
					 "SEND %d: receive wr_id %lu byte_len %u qp 0x%x (expected 0x%x)",
					 m, (unsigned long)wc.wr_id, wc.byte_len, wc.qp_num, to);
				sends_ok = 0;
				break;
			}
			used[k] = 1;
			for (int i = 0; i < MSG; i++)
				if (rbuf[k * MSG + i] != pattern(m, i)) {
					snprintf(why, sizeof(why), "SEND %d: byte %d of buffer %d", m, i,
						 k);
					sends_ok = 0;
				}
		}
		if (!sends_ok)
			break;
		/* The receive's completion is posted before the event is raised: wait for it
		 * where one is due, look without waiting elsewhere. */
		drain_events(ctx, srq, m == 4 ? 2000 : 0, &limits);
		if (m == 3)
			before = limits;
	}
	check("srq_sends", sends_ok, why);
	memset(&sa, 0, sizeof(sa));
	ibv_query_srq(srq, &sa);
	drain_events(ctx, srq, 200, &limits);
	checkf("srq_limit_event", sends_ok && before == 0 && limits >= 1,
	       "limit events: %d after 4 receives taken (4 left), %d in all", before, limits);
	checkf("srq_limit_disarmed", sends_ok && limits == 1 && sa.srq_limit == 0,
	       "%d limit events, srq_limit now %u", limits, sa.srq_limit);

	/* c in ERR: the SRQ's last receive is still there for b. */
	struct ibv_qp_attr e = { .qp_state = IBV_QPS_ERR };
	int err = ibv_modify_qp(c, &e, IBV_QP_STATE);
	struct ibv_sge sge = { (uintptr_t)sbuf, MSG, smr->lkey };
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	int last_ok = !err && !ibv_post_send(a, &wr, &bad);
	int seen = 0;

	for (int n = 0; last_ok && n < 2; n++) {
		struct ibv_wc wc;

		if (poll_one(cq, &wc, 10) != 1 || wc.status != IBV_WC_SUCCESS)
			last_ok = 0;
		else if (wc.opcode == IBV_WC_RECV)
			seen = wc.qp_num == b->qp_num && wc.wr_id >= 100;
	}
	checkf("srq_qp_error_keeps_wqes", last_ok && seen, "c to ERR %d, 8th SEND %s", err,
	       last_ok ? "completed, but no receive on b" : "failed");
	int lw = wait_qp_event(ctx, srq, &limits, 0, IBV_EVENT_QP_LAST_WQE_REACHED, c, 2000);
	checkf("qp_last_wqe_event", lw >= 0, "no IBV_EVENT_QP_LAST_WQE_REACHED for c (%d QP events)",
	       n_qp_ev);

	/* A WRITE to b with a wrong rkey: b's access error. */
	int mark = n_qp_ev;
	struct ibv_send_wr w = { .wr_id = 10, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				 .wr.rdma = { .remote_addr = (uintptr_t)rbuf,
					      .rkey = rmr->rkey ^ 0x5500 } };
	struct ibv_wc wc = { .status = IBV_WC_SUCCESS };
	int posted = !ibv_post_send(a, &w, &bad);
	int got = posted ? poll_one(cq, &wc, 20) : 0;
	int ae = wait_qp_event(ctx, srq, &limits, mark, IBV_EVENT_QP_ACCESS_ERR, b, 2000);
	int bl = ae >= 0 ? wait_qp_event(ctx, srq, &limits, ae, IBV_EVENT_QP_LAST_WQE_REACHED, b,
					 2000) : -1;
	checkf("qp_access_err_event", got == 1 && wc.status == IBV_WC_REM_ACCESS_ERR && ae >= 0 &&
		   bl > ae,
	       "WRITE: %s, status %d; b's access error event %d, then last WQE event %d",
	       posted ? "posted" : "not posted", wc.status, ae, bl);

	/* A CQ too small for what completes into it. */
	struct ibv_cq *tiny = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	struct ibv_qp_init_attr xa = {
		.send_cq = tiny, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 32, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *x = tiny ? ibv_create_qp(pd, &xa) : NULL;
	struct ibv_qp *y = x ? make_qp(pd, cq, NULL) : NULL;
	int cq_marker = n_qp_ev, nwrites = tiny ? tiny->cqe + 3 : 0, wposted = 0;

	if (y && !connect_qp(x, y->qp_num, &gid, gid_index) &&
	    !connect_qp(y, x->qp_num, &gid, gid_index)) {
		for (int i = 0; i < nwrites && i < 32; i++) {
			struct ibv_send_wr ww = { .wr_id = 20 + i, .sg_list = &sge, .num_sge = 1,
						  .opcode = IBV_WR_RDMA_WRITE,
						  .send_flags = IBV_SEND_SIGNALED,
						  .wr.rdma = { .remote_addr = (uintptr_t)rbuf,
							       .rkey = rmr->rkey } };

			wposted += !ibv_post_send(x, &ww, &bad);
		}
	}
	int cqe_ev = wait_qp_event(ctx, srq, &limits, cq_marker, IBV_EVENT_CQ_ERR,
				   (struct ibv_qp *)tiny, 3000);
	checkf("cq_err_event", tiny && wposted == nwrites && cqe_ev >= 0,
	       "CQ of %d entries, %d of %d WRITEs posted, CQ error event %d", tiny ? tiny->cqe : -1,
	       wposted, nwrites, cqe_ev);
	if (x)
		ibv_destroy_qp(x);
	if (y)
		ibv_destroy_qp(y);
	if (tiny)
		ibv_destroy_cq(tiny);

	/* SQD: the send queue drains, then IBV_EVENT_SQ_DRAINED. */
	struct ibv_qp *d = make_qp(pd, cq, NULL), *dp = d ? make_qp(pd, cq, NULL) : NULL;
	int dmark = n_qp_ev, dposted = 0, dok = 0, dev_idx = -1, after = -1;
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_SQD };
	struct ibv_qp_init_attr qi;

	while (dp && poll_one(cq, &wc, 0) > 0)
		; /* earlier completions */
	if (dp && !connect_qp(d, dp->qp_num, &gid, gid_index) &&
	    !connect_qp(dp, d->qp_num, &gid, gid_index)) {
		for (int i = 0; i < 4; i++) {
			struct ibv_send_wr ww = { .wr_id = 60 + i, .sg_list = &sge, .num_sge = 1,
						  .opcode = IBV_WR_RDMA_WRITE,
						  .send_flags = IBV_SEND_SIGNALED,
						  .wr.rdma = { .remote_addr = (uintptr_t)rbuf,
							       .rkey = rmr->rkey } };

			dposted += !ibv_post_send(d, &ww, &bad);
		}
		if (!ibv_modify_qp(d, &qa, IBV_QP_STATE))
			dev_idx = wait_qp_event(ctx, srq, &limits, dmark, IBV_EVENT_SQ_DRAINED, d,
						5000);
		for (int i = 0; i < 4 && poll_one(cq, &wc, 5) == 1; i++)
			dok += wc.status == IBV_WC_SUCCESS && wc.wr_id >= 60 && wc.wr_id < 64;
		memset(&qa, 0, sizeof(qa));
		if (!ibv_query_qp(d, &qa, IBV_QP_STATE, &qi) && qa.qp_state == IBV_QPS_SQD &&
		    !qa.sq_draining) {
			struct ibv_send_wr ww = { .wr_id = 70, .sg_list = &sge, .num_sge = 1,
						  .opcode = IBV_WR_RDMA_WRITE,
						  .send_flags = IBV_SEND_SIGNALED,
						  .wr.rdma = { .remote_addr = (uintptr_t)rbuf,
							       .rkey = rmr->rkey } };

			qa.qp_state = IBV_QPS_RTS;
			if (!ibv_modify_qp(d, &qa, IBV_QP_STATE) && !ibv_post_send(d, &ww, &bad) &&
			    poll_one(cq, &wc, 5) == 1 && wc.wr_id == 70)
				after = wc.status;
		}
	}
	checkf("sq_drained_event", dposted == 4 && dev_idx >= 0 && dok == 4 &&
		   after == IBV_WC_SUCCESS,
	       "%d WRITEs posted, drained event %d, %d completed, state %d draining %d, WRITE "
	       "after RTS %d", dposted, dev_idx, dok, qa.qp_state, qa.sq_draining, after);
	if (d)
		ibv_destroy_qp(d);
	if (dp)
		ibv_destroy_qp(dp);

	/* Resizing an SRQ with WQEs in it. */
	struct ibv_srq_init_attr si2 = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *s2 = ibv_create_srq(pd, &si2);
	struct ibv_qp *ts = s2 ? make_qp(pd, cq, NULL) : NULL, *tr = ts ? make_qp(pd, cq, s2) : NULL;
	int rposted = 0, grow = -1, shrink = -1, in_order = 0, rq = -1;
	struct ibv_srq_attr ra = {};

	if (tr && !connect_qp(ts, tr->qp_num, &gid, gid_index) &&
	    !connect_qp(tr, ts->qp_num, &gid, gid_index)) {
		struct ibv_sge rs = { (uintptr_t)rbuf, MSG, rmr->lkey };

		while (poll_one(cq, &wc, 0) > 0)
			; /* earlier completions */
		for (int i = 0; i < 43; i++) {
			struct ibv_recv_wr rw = { .wr_id = 500 + i, .sg_list = &rs, .num_sge = 1 };

			if (i == 3) {
				ra.max_wr = 64;
				grow = ibv_modify_srq(s2, &ra, IBV_SRQ_MAX_WR);
				memset(&ra, 0, sizeof(ra));
				rq = ibv_query_srq(s2, &ra);
			}
			struct ibv_recv_wr *rbad;

			rposted += !ibv_post_srq_recv(s2, &rw, &rbad);
		}
		struct ibv_srq_attr small = { .max_wr = 8 };

		shrink = ibv_modify_srq(s2, &small, IBV_SRQ_MAX_WR);
		for (int i = 0; i < 5; i++) {
			struct ibv_send_wr sw = { .wr_id = 600 + i, .sg_list = &sge, .num_sge = 1,
						  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };

			if (ibv_post_send(ts, &sw, &bad))
				break;
		}
		/* 5 sends and 5 receives complete; the receives must be 500..504 in order. */
		for (int n = 0, next = 500; n < 10 && poll_one(cq, &wc, 5) == 1; n++)
			if (wc.status == IBV_WC_SUCCESS && wc.wr_id >= 500 && wc.wr_id < 600 &&
			    (int)wc.wr_id == next) {
				next++;
				in_order++;
			}
	}
	checkf("srq_resize", grow == 0 && rq == 0 && ra.max_wr >= 64 && rposted == 43 &&
		   shrink == EINVAL && in_order == 5,
	       "grow %d, query %d max_wr %u, %d of 43 receives posted, shrink below the count "
	       "%d, %d of 5 receives in order", grow, rq, ra.max_wr, rposted, shrink, in_order);
	if (tr)
		ibv_destroy_qp(tr);
	if (ts)
		ibv_destroy_qp(ts);
	if (s2)
		ibv_destroy_srq(s2);

	int busy = ibv_destroy_srq(srq);
	ibv_destroy_qp(a);
	ibv_destroy_qp(a2);
	ibv_destroy_qp(b);
	ibv_destroy_qp(c);
	int gone = ibv_destroy_srq(srq);
	checkf("srq_destroy_busy", busy == EBUSY && gone == 0,
	       "destroy with QPs: %d (expected EBUSY), without: %d", busy, gone);
	ibv_dereg_mr(rmr);
	ibv_dereg_mr(smr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(rbuf);
	return failed;
}
