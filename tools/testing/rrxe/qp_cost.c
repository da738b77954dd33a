// SPDX-License-Identifier: GPL-2.0
/*
 * qp_cost: what a queue pair costs on one device, for `make bench` (scripts/bench/guest.sh).
 *
 *   qp_cost -d DEV [-g GID_INDEX] [-n QPS] [-c CYCLES]
 *
 *  1. QPS (default 1000) RC QPs are created (64 send and 64 receive WRs, one SGE each, one
 *     shared CQ) and each is taken to RTS, connected to itself through the device's own GID:
 *     the rate of create+connect, and the memory they hold while idle (the fall of MemFree,
 *     kernel and user memory together, per QP).
 *  2. They are destroyed: the rate of destroy. (How much memory comes back is not measured:
 *     MemFree does not see what freed objects leave in the slab caches.)
 *  3. CYCLES (default 200) times: one QP created, connected and destroyed (churn rate).
 *
 * Prints `BENCH-QP <name> <value> <unit>` lines; exits non-zero if a verb failed.
 */
#include "rrxe_test.h"

#define QP_WRS 64

static struct ibv_qp *qp_up(struct ibv_pd *pd, struct ibv_cq *cq, const union ibv_gid *gid,
			    int gid_index)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = QP_WRS, .max_recv_wr = QP_WRS, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!qp)
		return NULL;
	if (rc_connect(qp, qp->qp_num, gid, gid_index, IBV_ACCESS_REMOTE_WRITE)) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	int gid_index = 1, n = 1000, cycles = 200, opt, i;
	struct ibv_context *ctx;
	struct ibv_qp **qps;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	union ibv_gid gid;
	long m0, m1;
	double t0, t1, t2, t3;

	while ((opt = getopt(argc, argv, "d:g:n:c:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 'n': n = atoi(optarg); break;
		case 'c': cycles = atoi(optarg); break;
		default: dev = NULL; n = 0; break;
		}
	}
	if (!dev || n <= 0 || cycles <= 0) {
		fprintf(stderr, "usage: %s -d DEV [-g GID_INDEX] [-n QPS] [-c CYCLES]\n", argv[0]);
		return 2;
	}
	ctx = open_dev(dev);
	if (!ctx)
		return 1;
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 256, NULL, NULL, 0) : NULL;
	qps = calloc(n, sizeof(*qps));
	if (!pd || !cq || !qps || ibv_query_gid(ctx, 1, gid_index, &gid)) {
		perror("qp_cost: setup");
		return 1;
	}

	m0 = mem_free_settled_kib();
	t0 = now_s();
	for (i = 0; i < n; i++) {
		qps[i] = qp_up(pd, cq, &gid, gid_index);
		if (!qps[i]) {
			fprintf(stderr, "qp_cost: QP %d of %d: %s\n", i, n, strerror(errno));
			n = i;
			break;
		}
	}
	t1 = now_s();
	m1 = mem_free_kib();
	for (i = 0; i < n; i++)
		ibv_destroy_qp(qps[i]);
	t2 = now_s();
	if (n < 1)
		return 1;
	printf("BENCH-QP qps %d count\n", n);
	printf("BENCH-QP qp_create_connect %.0f per_s\n", n / (t1 - t0));
	printf("BENCH-QP qp_destroy %.0f per_s\n", n / (t2 - t1));
	printf("BENCH-QP qp_memory %.1f KiB_per_qp\n", (double)(m0 - m1) / n);

	t2 = now_s();
	for (i = 0; i < cycles; i++) {
		struct ibv_qp *qp = qp_up(pd, cq, &gid, gid_index);

		if (!qp) {
			fprintf(stderr, "qp_cost: churn %d: %s\n", i, strerror(errno));
			return 1;
		}
		ibv_destroy_qp(qp);
	}
	t3 = now_s();
	printf("BENCH-QP qp_churn %.0f per_s\n", cycles / (t3 - t2));
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(qps);
	return 0;
}
