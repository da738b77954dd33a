// SPDX-License-Identifier: GPL-2.0
/*
 * verbs_qp: queue pairs through stock libibverbs and rdma-core's rxe provider: creation with
 * the rings the provider maps, the state machine with the attributes the spec requires per
 * transition, the device's own limits, query, destroy, and QP numbers.
 * Prints "RRXE-TEST <name> ok|FAIL: ..." per check; exits non-zero if any failed.
 *
 * Usage: verbs_qp DEVICE GID_INDEX
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "rrxe_test.h"

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type type,
			      unsigned int wr, unsigned int sge, unsigned int inl)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = wr, .max_recv_wr = wr, .max_send_sge = sge,
			 .max_recv_sge = sge, .max_inline_data = inl },
	};

	return ibv_create_qp(pd, &ia);
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				     IBV_QP_ACCESS_FLAGS);
}

static int to_rtr(struct ibv_qp *qp, union ibv_gid *gid, int gid_index, enum ibv_mtu mtu,
		  uint32_t dqpn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = mtu, .dest_qp_num = dqpn, .rq_psn = 0x123456,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *gid, .sgid_index = gid_index, .hop_limit = 64 } },
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				     IBV_QP_MIN_RNR_TIMER);
}

static int to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				 .rnr_retry = 7, .sq_psn = 0xabcdef, .max_rd_atomic = 1 };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/*
 * One UD SEND, from a QP of protection domain QP_PD to its own QP number through an address
 * handle of AH_PD on the device's own GID (loopback); returns the send's completion status,
 * or -1 if it could not be set up or did not complete.
 */
static int ud_send_status(struct ibv_context *ctx, struct ibv_pd *qp_pd, struct ibv_pd *ah_pd,
			  union ibv_gid *gid, int gid_index)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp *qp = NULL;
	struct ibv_ah *ah = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
				  .grh = { .dgid = *gid, .sgid_index = gid_index, .hop_limit = 64 } };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				 .qkey = 0x1234 };
	static char buf[64];
	int st = -1;

	if (cq)
		qp = make_qp(qp_pd, cq, IBV_QPT_UD, 4, 1, 0);
	ah = ibv_create_ah(ah_pd, &aa);
	mr = ibv_reg_mr(qp_pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!qp || !ah || !mr ||
	    ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		goto out;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		goto out;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		goto out;
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 16, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qp->qp_num;
	wr.wr.ud.remote_qkey = 0x1234;
	if (ibv_post_send(qp, &wr, &bad))
		goto out;
	for (int i = 0; i < 5000; i++) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n) {
			st = n < 0 ? -1 : (int)wc.status;
			break;
		}
		usleep(1000);
	}
out:
	if (mr)
		ibv_dereg_mr(mr);
	if (ah)
		ibv_destroy_ah(ah);
	if (qp)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
	return st;
}

static int set_state(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx = NULL;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	union ibv_gid gid;
	int gid_index;

	if (argc != 3) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX\n", argv[0]);
		return 2;
	}
	gid_index = atoi(argv[2]);
	ctx = open_dev(argv[1]);
	if (!ctx || ibv_query_gid(ctx, 1, gid_index, &gid)) {
		check("qp_setup", 0, "open device / query gid");
		return 1;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);

	/* Creation: caps at least as requested, a 24-bit QP number above the special QPs. */
	struct ibv_qp *qp = make_qp(pd, cq, IBV_QPT_RC, 16, 2, 64);
	check("qp_create_rc", qp != NULL, "ibv_create_qp(RC)");
	if (!qp)
		return 1;
	check("qp_num_range", qp->qp_num >= 16 && qp->qp_num <= 0xffffff, "qp_num");
	check("qp_query_reset", !ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_CAP, &qia) &&
				       qa.qp_state == IBV_QPS_RESET && qia.cap.max_send_wr >= 16 &&
				       qia.cap.max_send_sge >= 2 && qia.cap.max_inline_data >= 64 &&
				       qia.cap.max_recv_wr >= 16, "ibv_query_qp");

	/* The spec's transitions, each with its required attributes. */
	check("qp_reset_to_rts_rejected", set_state(qp, IBV_QPS_RTS) != 0, "RESET->RTS");
	check("qp_to_init", !to_init(qp), "RESET->INIT");
	check("qp_init_to_rtr_without_av_rejected", set_state(qp, IBV_QPS_RTR) != 0,
	      "INIT->RTR without attributes");
	check("qp_path_mtu_over_port_rejected", to_rtr(qp, &gid, gid_index, IBV_MTU_4096,
						       qp->qp_num) != 0, "path MTU 4096 > 1024");
	check("qp_to_rtr", !to_rtr(qp, &gid, gid_index, IBV_MTU_1024, qp->qp_num),
	      "INIT->RTR");
	check("qp_to_rts", !to_rts(qp), "RTR->RTS");
	memset(&qa, 0, sizeof(qa));
	check("qp_query_rts", !ibv_query_qp(qp, &qa, IBV_QP_STATE, &qia) &&
				      qa.qp_state == IBV_QPS_RTS && qa.path_mtu == IBV_MTU_1024 &&
				      qa.dest_qp_num == qp->qp_num && qa.rq_psn == 0x123456 &&
				      qa.sq_psn == 0xabcdef && qa.retry_cnt == 7 && qa.timeout == 14 &&
				      !memcmp(&qa.ah_attr.grh.dgid, &gid, sizeof(gid)),
	      "query after RTS");
	check("qp_to_err", !set_state(qp, IBV_QPS_ERR), "RTS->ERR");
	check("qp_err_to_rts_rejected", set_state(qp, IBV_QPS_RTS) != 0, "ERR->RTS");
	check("qp_err_to_reset", !set_state(qp, IBV_QPS_RESET), "ERR->RESET");
	check("qp_destroy", !ibv_destroy_qp(qp), "ibv_destroy_qp");

	/* Device limits and attribute ranges. */
	errno = 0;
	qp = make_qp(pd, cq, IBV_QPT_RC, 16, 33, 0);
	check("qp_too_many_sge_rejected", !qp, "33 SGEs");
	if (qp)
		ibv_destroy_qp(qp);
	qp = make_qp(pd, cq, IBV_QPT_RC, 16, 1, 0);
	if (qp) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 2 };

		check("core_qp_bad_port_rejected", ibv_modify_qp(qp, &a, IBV_QP_STATE |
					      IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0,
		      "port 2");
		a.port_num = 1;
		a.pkey_index = 1;
		check("qp_bad_pkey_index_rejected", ibv_modify_qp(qp, &a, IBV_QP_STATE |
					   IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0,
		      "pkey index 1");
		check("qp_init_after_rejections", !to_init(qp), "RESET->INIT");
		struct ibv_qp_attr r = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
					 .dest_qp_num = 0x1000000, .ah_attr = { .is_global = 1,
					 .port_num = 1, .grh = { .dgid = gid, .sgid_index = gid_index } } };
		check("qp_dest_qpn_over_24_bits_rejected", ibv_modify_qp(qp, &r, IBV_QP_STATE |
				IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0, "dest QPN 2^24");
		ibv_destroy_qp(qp);
	}

	/*
	 * The transition is decided from the QP's real state: naming another current state
	 * (IBV_QP_CUR_STATE) is refused, and a true one accepted. The core's table alone would
	 * take RESET->RTS here as RTR->RTS.
	 */
	qp = make_qp(pd, cq, IBV_QPT_RC, 8, 1, 0);
	if (qp) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .cur_qp_state = IBV_QPS_RTR,
					 .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
					 .sq_psn = 0, .max_rd_atomic = 1 };
		int mask = IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

		check("qp_false_cur_state_rejected", ibv_modify_qp(qp, &a, mask) != 0 &&
		      !ibv_query_qp(qp, &qa, IBV_QP_STATE, &qia) && qa.qp_state == IBV_QPS_RESET,
		      "RESET->RTS named as RTR->RTS");
		/* The spec allows naming the current state on RTS->RTS (among others). */
		struct ibv_qp_attr r = { .qp_state = IBV_QPS_RTS, .cur_qp_state = IBV_QPS_RTS };

		check("qp_true_cur_state_accepted", !to_init(qp) &&
		      !to_rtr(qp, &gid, gid_index, IBV_MTU_1024, qp->qp_num) && !to_rts(qp) &&
		      !ibv_modify_qp(qp, &r, IBV_QP_STATE | IBV_QP_CUR_STATE),
		      "RTS->RTS named as RTS->RTS");
		ibv_destroy_qp(qp);
	} else {
		check("qp_false_cur_state_rejected", 0, "ibv_create_qp");
		check("qp_true_cur_state_accepted", 0, "ibv_create_qp");
	}

	/*
	 * A UD QP sends only through the address handles of its own protection domain: an AH
	 * number of another PD (another process's, or the kernel's) names nothing.
	 */
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	int st = ud_send_status(ctx, pd, pd, &gid, gid_index);

	char what[64];

	snprintf(what, sizeof(what), "completion status %d, expected success", st);
	check("ud_send_own_pd_ah", st == IBV_WC_SUCCESS, what);
	st = pd2 ? ud_send_status(ctx, pd2, pd, &gid, gid_index) : -1;
	snprintf(what, sizeof(what), "completion status %d, expected IBV_WC_LOC_QP_OP_ERR", st);
	check("ud_send_other_pd_ah_rejected", st == IBV_WC_LOC_QP_OP_ERR, what);
	if (pd2)
		ibv_dealloc_pd(pd2);

	/* Other transports, and QP numbers stay unique across many QPs. */
	qp = make_qp(pd, cq, IBV_QPT_UD, 8, 1, 0);
	check("qp_create_ud", qp && !ibv_destroy_qp(qp), "UD");
	qp = make_qp(pd, cq, IBV_QPT_UC, 8, 1, 0);
	check("qp_create_uc", qp && !ibv_destroy_qp(qp), "UC");
	struct ibv_qp *many[100];
	int unique = 1, made = 0;

	for (; made < 100; made++)
		if (!(many[made] = make_qp(pd, cq, IBV_QPT_RC, 4, 1, 0)))
			break;
	for (int i = 0; i < made; i++)
		for (int j = i + 1; j < made; j++)
			unique &= many[i]->qp_num != many[j]->qp_num;
	check("qp_100_unique_numbers", made == 100 && unique, "100 RC QPs");
	for (int i = 0; i < made; i += 2)
		ibv_destroy_qp(many[i]);
	/* The rest, with the PD and CQ, are left to the context close. */
	check("qp_close_with_objects", !ibv_close_device(ctx), "ibv_close_device");
	return failed;
}
