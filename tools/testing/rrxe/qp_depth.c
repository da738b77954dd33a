// SPDX-License-Identifier: GPL-2.0
/*
 * qp_depth: what an RC QP keeps in flight, over loopback (a QP connected to itself).
 *
 * The driver sizes a QP's private state by what the QP asked for, not by the device's
 * maximum: its copies of the send WQEs in flight by the send queue depth asked for at
 * creation (the ring the provider maps can hold nearly twice as many), its queue of READ
 * responses and its responder resources by max_dest_rd_atomic. These checks fill what the
 * QP was given, past what it asked for, and check every byte and every completion:
 *
 *  - sq_beyond_requested_depth: a QP of 8 send WRs (the ring holds more, the capacity
 *    query_qp reports) takes a full ring of RDMA WRITEs posted at once: each completes,
 *    in order, with its data in place;
 *  - reads_up_to_dest_rd_atomic: 12 READs of 32 KiB posted at once with max_rd_atomic and
 *    max_dest_rd_atomic 4 (4 outstanding fill the requester's window of 128 PSNs);
 *  - reads_beyond_dest_rd_atomic: 12 READs of 16 KiB from a requester that keeps up to 8
 *    outstanding against a responder of 1 resource (against IBA 9.5, which the requester
 *    must respect): every READ still completes with its data (responses that would not fit
 *    the responder's queue are dropped and asked for again by the requester's retry; how
 *    many is printed);
 *  - qp_memory_idle_rc: 500 idle RC QPs of 64 send and 64 receive WRs (qp_cost's, taken to
 *    RTS) cost at most MAX_KIB each (default 96; the fall of MemFree: kernel and user
 *    memory, the rings included). rdma_rxe's cost 53.5 KiB, rrxe's 142.9 when it sized its
 *    state by the device's maximum (Documentation/rrxe-bench.rst, bench kernel); on the test
 *    kernel rrxe's measured 80-83 KiB, 150.6 before; KASAN adds about a quarter.
 *
 * Usage: qp_depth DEVICE GID_INDEX [MAX_KIB]
 */
#include "rrxe_test.h"

#define READS 12
#define READ_MAX (32 * 1024)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;
static int gid_index;

/* An RC QP of @wr send and receive WRs connected to itself with @rd_atomic / @dest_rd_atomic. */
static struct ibv_qp *loop_qp(struct ibv_cq *cq, unsigned int wr, uint8_t rd_atomic,
			      uint8_t dest_rd_atomic)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = wr, .max_recv_wr = wr, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };

	if (!qp)
		return NULL;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		goto fail;
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = qp->qp_num,
		.rq_psn = 0x100, .max_dest_rd_atomic = dest_rd_atomic, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = gid, .sgid_index = gid_index, .hop_limit = 64 } },
	};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		goto fail;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				  .rnr_retry = 7, .sq_psn = 0x100, .max_rd_atomic = rd_atomic };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		goto fail;
	return qp;
fail:
	ibv_destroy_qp(qp);
	return NULL;
}

static void fill(uint8_t *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 8));
}

/*
 * Posts @n signaled @op WRs of @len bytes at once, WR i from @src + i * @len to @dst + i *
 * @len (remote for a WRITE, local for a READ), waits for the @n completions and checks
 * that they are successful and in order. Returns NULL or what went wrong.
 */
static const char *run(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr,
		       enum ibv_wr_opcode op, uint8_t *src, uint8_t *dst, uint32_t len, int n)
{
	static char why[160];
	struct ibv_sge sge[64];
	struct ibv_send_wr wr[64], *bad;
	struct ibv_wc wc;

	if (n > 64)
		return "too many WRs for the test";
	for (int i = 0; i < n; i++) {
		uint8_t *local = op == IBV_WR_RDMA_READ ? dst : src;
		uint8_t *remote = op == IBV_WR_RDMA_READ ? src : dst;

		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)(local + (size_t)i * len),
					   .length = len, .lkey = mr->lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = i, .sg_list = &sge[i], .num_sge = 1, .opcode = op,
			.send_flags = IBV_SEND_SIGNALED, .next = i + 1 < n ? &wr[i + 1] : NULL,
			.wr.rdma = { .remote_addr = (uintptr_t)(remote + (size_t)i * len),
				     .rkey = mr->rkey },
		};
	}
	if (ibv_post_send(qp, wr, &bad)) {
		snprintf(why, sizeof(why), "ibv_post_send of %d WRs: %s (WR %d refused)", n,
			 strerror(errno), bad ? (int)bad->wr_id : -1);
		return why;
	}
	for (int i = 0; i < n; i++) {
		int got = poll_one(cq, &wc, 60);

		if (got != 1) {
			snprintf(why, sizeof(why), "completion %d of %d: %s", i + 1, n,
				 got ? "poll error" : "none within 60 s");
			return why;
		}
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != (uint64_t)i) {
			snprintf(why, sizeof(why), "completion %d of %d: status %s, wr_id %llu",
				 i + 1, n, ibv_wc_status_str(wc.status),
				 (unsigned long long)wc.wr_id);
			return why;
		}
	}
	if (memcmp(src, dst, (size_t)n * len))
		return "data differ";
	return NULL;
}

#define IDLE_QPS 500

/* The memory an idle RC QP of 64 WRs holds, in KiB (MemFree over IDLE_QPS), or -1. */
static double idle_qp_kib(struct ibv_cq *cq)
{
	static struct ibv_qp *qps[IDLE_QPS];
	long m0, m1;
	int n;

	m0 = mem_free_settled_kib();
	for (n = 0; n < IDLE_QPS; n++)
		if (!(qps[n] = loop_qp(cq, 64, 1, 1)))
			break;
	m1 = mem_free_kib();
	for (int i = 0; i < n; i++)
		ibv_destroy_qp(qps[i]);
	if (n < IDLE_QPS || m0 < 0 || m1 < 0)
		return -1;
	return (double)(m0 - m1) / n;
}

/* Replies the device dropped so far (its replies_dropped counter), or -1. */
static long replies_dropped(const char *dev)
{
	char path[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/replies_dropped",
		 dev);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	size_t half = (size_t)READS * READ_MAX;
	struct ibv_qp_init_attr qia;
	struct ibv_qp_attr qa;
	const char *why;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf;
	long d0, d1;
	int max_kib;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX [MAX_KIB]\n", argv[0]);
		return 2;
	}
	max_kib = argc == 4 ? atoi(argv[3]) : 96;
	gid_index = atoi(argv[2]);
	ctx = open_dev(argv[1]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = pd ? ibv_create_cq(ctx, 128, NULL, NULL, 0) : NULL;
	buf = aligned_alloc(4096, 2 * half);
	mr = cq && buf ? ibv_reg_mr(pd, buf, 2 * half, IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) : NULL;
	if (!mr || ibv_query_gid(ctx, 1, gid_index, &gid)) {
		check("qp_depth_setup", 0, "device, PD, CQ, MR or GID");
		return 1;
	}

	/* A full ring of WRITEs from a QP that asked for 8. */
	qp = loop_qp(cq, 8, 1, 1);
	if (!qp || ibv_query_qp(qp, &qa, IBV_QP_CAP, &qia)) {
		check("sq_beyond_requested_depth", 0, "QP of 8 send WRs");
	} else {
		int n = qia.cap.max_send_wr;

		fill(buf, half, 1);
		memset(buf + half, 0, half);
		why = n > 8 && n <= 64 ? run(qp, cq, mr, IBV_WR_RDMA_WRITE, buf, buf + half, 4096, n)
				       : "capacity not in 9..64";
		checkf("sq_beyond_requested_depth", !why, "%d WRITEs posted at once: %s", n,
		       why ? why : "");
		ibv_destroy_qp(qp);
	}

	/* READs queued at the responder, within its resources. */
	qp = loop_qp(cq, 16, 4, 4);
	fill(buf, half, 2);
	memset(buf + half, 0, half);
	why = qp ? run(qp, cq, mr, IBV_WR_RDMA_READ, buf, buf + half, 32 * 1024, READS)
		 : "QP with 4 READs each way";
	checkf("reads_up_to_dest_rd_atomic", !why, "%d READs of 32 KiB, 4 outstanding: %s", READS,
	       why ? why : "");
	if (qp)
		ibv_destroy_qp(qp);

	/* A requester beyond the responder's resources. */
	d0 = replies_dropped(argv[1]);
	qp = loop_qp(cq, 16, 8, 1);
	fill(buf, half, 3);
	memset(buf + half, 0, half);
	why = qp ? run(qp, cq, mr, IBV_WR_RDMA_READ, buf, buf + half, 16 * 1024, READS)
		 : "QP with 8 READs out, 1 in";
	d1 = replies_dropped(argv[1]);
	checkf("reads_beyond_dest_rd_atomic", !why, "%d READs of 16 KiB, 8 outstanding against 1: %s",
	       READS, why ? why : "");
	if (!why)
		printf("# qp_depth: %ld READ responses dropped and asked for again\n",
		       d0 >= 0 && d1 >= 0 ? d1 - d0 : -1);
	if (qp)
		ibv_destroy_qp(qp);

	double kib = idle_qp_kib(cq);

	checkf("qp_memory_idle_rc", kib >= 0 && kib <= max_kib,
	       "%.1f KiB per idle RC QP of 64 WRs (at most %d)", kib, max_kib);
	printf("# qp_depth: an idle RC QP of 64 WRs holds %.1f KiB\n", kib);

	ibv_dereg_mr(mr);
	free(buf);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return failed;
}
