// SPDX-License-Identifier: GPL-2.0
/*
 * odp_rules: on-demand paging memory regions (IBV_ACCESS_ON_DEMAND) through stock libibverbs
 * and rdma-core's rxe provider, on one device (loopback), beyond what rdma-core's pyverbs
 * suite checks: memory that is not present when the device needs it, memory the kernel
 * takes away (MADV_DONTNEED, fork's copy on write, munmap) between and during transfers,
 * prefetch, and the advice and registrations that must be refused.
 *
 * Every ODP buffer is mapped fresh (mmap) and registered before it is touched: none of its
 * pages is present for the device until it faults it in. Transfers run between connected
 * RC QPs of one PD; each case that may fail uses a fresh QP pair.
 *  - odp_caps: ibv_query_device_ex reports ODP for RC (SEND, RECV, WRITE, READ, ATOMIC,
 *    SRQ_RECV) and UD (SEND, RECV), as rdma_rxe;
 *  - odp_implicit_refused: an implicit ODP region (address 0, length SIZE_MAX) is refused
 *    with EOPNOTSUPP, as in rdma_rxe;
 *  - odp_write / odp_read / odp_atomic / odp_send: an RDMA WRITE of 3 pages at an odd
 *    offset into an ODP region, a READ of it back into another ODP region, a FETCH_ADD on
 *    an untouched ODP word, a SEND from ODP memory into a receive in ODP memory: each
 *    completes successfully with the data byte for byte (every page is faulted in);
 *  - odp_dontneed_write: after MADV_DONTNEED of the target (its pages are freed: the CPU
 *    sees zeros), a WRITE lands in the new pages, seen by the CPU (the device does not keep
 *    writing the old ones);
 *  - odp_fork_cow: after fork() (every page write-protected: copy on write) the parent's
 *    next WRITE lands where the parent sees it, the child keeps what it had;
 *  - odp_prefetch: the kernel's advise_mr verb (PREFETCH_WRITE, FLUSH; issued with
 *    libibverbs' ibv_cmd_advise_mr, see advise()) on a fresh range succeeds, and a WRITE
 *    into it then succeeds;
 *  - odp_advise_bad_lkey, odp_advise_write_readonly: advice naming an lkey that is no region
 *    of the PD, or a write prefetch of a region without local write access: EINVAL (as
 *    rdma_rxe, whose lookup asks for local write access);
 *  - odp_advise_not_odp (not with -k rxe): advice on a pinned region: EINVAL (rdma_rxe
 *    handles the pinned umem as an ODP one);
 *  - odp_munmap_write: a WRITE into an ODP region whose memory was unmapped completes with
 *    IBV_WC_REM_ACCESS_ERR (the fault fails), not a hang;
 *  - odp_munmap_race: 64 WRITEs of 64 KiB in flight into an ODP region while another thread
 *    unmaps it: every WRITE completes (success, then remote access error and flushes from
 *    the first failure on) within the time limit.
 * Prints "RRXE-TEST <name> ok|FAIL: ..." per check and exits non-zero if any failed.
 *
 * Usage: odp_rules DEVICE GID_INDEX [-k rxe]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "rrxe_test.h"

#define PAGE	4096
#define BUF	(16 * PAGE)
#define ODP	(IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define RACE_WRS	64
#define RACE_LEN	(64 * 1024)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static union ibv_gid gid;
static int gid_index;
static uint8_t *src, *dst;
static struct ibv_mr *src_mr, *dst_mr;

static uint8_t pat(size_t i, unsigned int salt)
{
	return (uint8_t)(i * 7 + 3 + salt * 13);
}

/* A fresh anonymous mapping of @len bytes, registered for ODP with @access (NULL if not). */
static uint8_t *odp_buf(size_t len, unsigned int access, struct ibv_mr **mr)
{
	uint8_t *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (b == MAP_FAILED)
		return NULL;
	*mr = ibv_reg_mr(pd, b, len, access);
	if (!*mr) {
		munmap(b, len);
		return NULL;
	}
	return b;
}

static struct ibv_qp *make_qp(void)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .pd = pd,
		.cap = { .max_send_wr = RACE_WRS + 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
				  IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
	};

	return ibv_create_qp_ex(ctx, &ia);
}

struct pair {
	struct ibv_qp *w, *t;
};

static int make_pair(struct pair *p)
{
	unsigned int acc = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_ATOMIC;

	p->w = make_qp();
	p->t = make_qp();
	if (rc_connect_pair(p->w, p->t, &gid, gid_index, acc)) {
		printf("# QP pair: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

static void free_pair(struct pair *p)
{
	if (p->w)
		ibv_destroy_qp(p->w);
	if (p->t)
		ibv_destroy_qp(p->t);
	p->w = p->t = NULL;
}

/* The status of the receive completion seen while waiting for another (-1: none yet). */
static int recv_status = -1;

/* Waits for the completion of @wr_id; returns its status, or -1 (none within 20 s). A
 * receive completion (wr_id 0x7ecf) met meanwhile is kept in recv_status. */
static int wait_wc(uint64_t wr_id)
{
	struct ibv_wc wc;

	if (wr_id == 0x7ecf && recv_status >= 0) {
		int st = recv_status;

		recv_status = -1;
		return st;
	}
	for (;;) {
		if (poll_one(cq, &wc, 20.0) <= 0) {
			printf("# no completion for wr_id 0x%lx\n", (unsigned long)wr_id);
			return -1;
		}
		if (wc.wr_id == wr_id)
			return wc.status;
		if (wc.wr_id == 0x7ecf)
			recv_status = wc.status;
	}
}

enum op { WRITE, READ, FADD, SEND };

/* Posts one signaled operation from @qp: @len bytes at @laddr (@lkey) to or from @raddr
 * (@rkey); a FETCH_ADD of @add at @raddr. Returns its completion status, or -1. */
static int post(struct ibv_qp *qp, enum op op, uint32_t lkey, void *laddr, uint32_t rkey,
		uint64_t raddr, size_t len, uint64_t add)
{
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(qp);

	ibv_wr_start(qx);
	qx->wr_id = 0xda7a;
	qx->wr_flags = IBV_SEND_SIGNALED;
	switch (op) {
	case WRITE: ibv_wr_rdma_write(qx, rkey, raddr); break;
	case READ: ibv_wr_rdma_read(qx, rkey, raddr); break;
	case FADD: ibv_wr_atomic_fetch_add(qx, rkey, raddr, add); break;
	case SEND: ibv_wr_send(qx); break;
	}
	ibv_wr_set_sge(qx, lkey, (uintptr_t)laddr, len);
	if (ibv_wr_complete(qx))
		return -1;
	return wait_wc(0xda7a);
}

static int post_recv(struct ibv_qp *qp, uint32_t lkey, void *addr, size_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = 0x7ecf, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/* The first byte of @b (@len bytes) that is not pat(i, @salt), or -1. */
static long mismatch(const uint8_t *b, size_t len, unsigned int salt)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != pat(i, salt))
			return (long)i;
	return -1;
}

static void fill(uint8_t *b, size_t len, unsigned int salt)
{
	for (size_t i = 0; i < len; i++)
		b[i] = pat(i, salt);
}

static void caps(void)
{
	struct ibv_device_attr_ex a = {};
	uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
		      IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
	uint32_t ud = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV;
	int ret = ibv_query_device_ex(ctx, NULL, &a);

	checkf("odp_caps", !ret && (a.odp_caps.general_caps & IBV_ODP_SUPPORT) &&
	       (a.odp_caps.per_transport_caps.rc_odp_caps & rc) == rc &&
	       (a.odp_caps.per_transport_caps.ud_odp_caps & ud) == ud,
	       "query %d, general 0x%lx, rc 0x%x, ud 0x%x", ret,
	       (unsigned long)a.odp_caps.general_caps, a.odp_caps.per_transport_caps.rc_odp_caps,
	       a.odp_caps.per_transport_caps.ud_odp_caps);
}

static void traffic(void)
{
	struct ibv_mr *a_mr = NULL, *b_mr = NULL;
	uint8_t *a = odp_buf(BUF, ODP, &a_mr), *b = odp_buf(BUF, ODP, &b_mr);
	size_t off = 3 * PAGE / 2 + 5, len = 3 * PAGE + 11;
	struct pair p = {};
	int st;
	long bad;

	if (!a || !b || make_pair(&p)) {
		checkf("odp_write", 0, "setup: %s", strerror(errno));
		return;
	}
	/* WRITE from pinned memory into untouched ODP pages at an odd offset. */
	fill(src, len, 1);
	st = post(p.w, WRITE, src_mr->lkey, src, b_mr->rkey, (uintptr_t)b + off, len, 0);
	bad = st == IBV_WC_SUCCESS ? mismatch(b + off, len, 1) : -2;
	checkf("odp_write", st == IBV_WC_SUCCESS && bad < 0 && b[off - 1] == 0 && b[off + len] == 0,
	       "status %d, first bad byte %ld", st, bad);

	/* READ it back into untouched ODP pages of the other region. */
	st = post(p.w, READ, a_mr->lkey, a + 7, b_mr->rkey, (uintptr_t)b + off, len, 0);
	bad = st == IBV_WC_SUCCESS ? mismatch(a + 7, len, 1) : -2;
	checkf("odp_read", st == IBV_WC_SUCCESS && bad < 0, "status %d, first bad byte %ld", st,
	       bad);

	/* FETCH_ADD on an untouched ODP word, the original into an untouched ODP word. */
	st = post(p.w, FADD, a_mr->lkey, a + 10 * PAGE, b_mr->rkey, (uintptr_t)b + 12 * PAGE,
		  8, 5);
	st = st == IBV_WC_SUCCESS ? post(p.w, FADD, a_mr->lkey, a + 11 * PAGE, b_mr->rkey,
					 (uintptr_t)b + 12 * PAGE, 8, 7) : st;
	checkf("odp_atomic", st == IBV_WC_SUCCESS && *(uint64_t *)(a + 10 * PAGE) == 0 &&
	       *(uint64_t *)(a + 11 * PAGE) == 5 && *(uint64_t *)(b + 12 * PAGE) == 12,
	       "status %d, originals %lu %lu, word %lu", st,
	       (unsigned long)*(uint64_t *)(a + 10 * PAGE),
	       (unsigned long)*(uint64_t *)(a + 11 * PAGE),
	       (unsigned long)*(uint64_t *)(b + 12 * PAGE));

	/* SEND from ODP memory (written by the CPU, never by the device) into a receive in
	 * untouched ODP memory. */
	fill(a + 2 * PAGE + 1, len, 2);
	st = post_recv(p.t, b_mr->lkey, b + 8 * PAGE + 3, len) ? -1 :
	     post(p.w, SEND, a_mr->lkey, a + 2 * PAGE + 1, 0, 0, len, 0);
	st = st == IBV_WC_SUCCESS ? wait_wc(0x7ecf) : st;
	bad = st == IBV_WC_SUCCESS ? mismatch(b + 8 * PAGE + 3, len, 2) : -2;
	checkf("odp_send", st == IBV_WC_SUCCESS && bad < 0, "status %d, first bad byte %ld", st,
	       bad);

	/* MADV_DONTNEED: the pages are freed (zeros for the CPU); the next WRITE must land in
	 * the new ones. */
	madvise(b, BUF, MADV_DONTNEED);
	fill(src, len, 3);
	st = post(p.w, WRITE, src_mr->lkey, src, b_mr->rkey, (uintptr_t)b + off, len, 0);
	bad = st == IBV_WC_SUCCESS ? mismatch(b + off, len, 3) : -2;
	checkf("odp_dontneed_write", st == IBV_WC_SUCCESS && bad < 0 && b[off - 1] == 0,
	       "status %d, first bad byte %ld", st, bad);

	/* fork(): copy on write. The child keeps the data as it was; the parent's next WRITE
	 * lands where the parent sees it. */
	{
		int pipefd[2], status = -1;
		pid_t pid;
		char c = 0;

		if (pipe(pipefd))
			pipefd[0] = pipefd[1] = -1;
		pid = fork();
		if (pid == 0) {
			/* Wait for the parent's WRITE, then check our copy is the old data. */
			close(pipefd[1]);
			if (read(pipefd[0], &c, 1) != 1)
				_exit(2);
			_exit(mismatch(b + off, len, 3) < 0 ? 0 : 1);
		}
		close(pipefd[0]);
		fill(src, len, 4);
		st = post(p.w, WRITE, src_mr->lkey, src, b_mr->rkey, (uintptr_t)b + off, len, 0);
		bad = st == IBV_WC_SUCCESS ? mismatch(b + off, len, 4) : -2;
		if (write(pipefd[1], &c, 1) != 1)
			status = -1;
		close(pipefd[1]);
		if (pid > 0)
			waitpid(pid, &status, 0);
		checkf("odp_fork_cow", pid > 0 && st == IBV_WC_SUCCESS && bad < 0 &&
		       WIFEXITED(status) && WEXITSTATUS(status) == 0,
		       "status %d, first bad byte %ld, child %d", st, bad, status);
	}
	free_pair(&p);
	ibv_dereg_mr(a_mr);
	ibv_dereg_mr(b_mr);
	munmap(a, BUF);
	munmap(b, BUF);
}

/*
 * libibverbs' own command for the kernel's advise_mr verb (UVERBS_METHOD_ADVISE_MR), which a
 * provider's advise_mr issues: rdma-core v44's rxe provider has none, so ibv_advise_mr()
 * fails with EOPNOTSUPP before reaching the kernel, on rdma_rxe as on rrxe (and pyverbs'
 * prefetch tests skip). The kernel verb is what is checked here.
 */
int ibv_cmd_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		      struct ibv_sge *sg_list, uint32_t num_sge);

static int advise(struct ibv_mr *mr, void *addr, size_t len, enum ibv_advise_mr_advice adv)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = mr->lkey };
	int ret = ibv_cmd_advise_mr(pd, adv, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);

	return ret < 0 ? -ret : ret;
}

static void advice(int rxe)
{
	struct ibv_mr *mr = NULL, *ro = NULL, fake;
	uint8_t *b = odp_buf(BUF, ODP, &mr);
	uint8_t *r = odp_buf(BUF, IBV_ACCESS_ON_DEMAND | IBV_ACCESS_REMOTE_READ, &ro);
	struct pair p = {};
	int ret, st = -1;

	if (!b || !r) {
		checkf("odp_prefetch", 0, "setup: %s", strerror(errno));
		return;
	}
	ret = advise(mr, b + PAGE, 4 * PAGE, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);
	fill(src, 4 * PAGE, 5);
	if (!ret && !make_pair(&p))
		st = post(p.w, WRITE, src_mr->lkey, src, mr->rkey, (uintptr_t)b + PAGE, 4 * PAGE, 0);
	free_pair(&p);
	checkf("odp_prefetch", !ret && st == IBV_WC_SUCCESS && mismatch(b + PAGE, 4 * PAGE, 5) < 0,
	       "advise %s, write %d", strerror(ret), st);

	fake = *mr;
	fake.lkey ^= 0x5500;
	ret = advise(&fake, b, PAGE, IBV_ADVISE_MR_ADVICE_PREFETCH);
	checkf("odp_advise_bad_lkey", ret == EINVAL, "advise %s", strerror(ret));
	ret = advise(ro, r, PAGE, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);
	checkf("odp_advise_write_readonly", ret == EINVAL, "advise %s", strerror(ret));
	if (!rxe) {
		ret = advise(src_mr, src, PAGE, IBV_ADVISE_MR_ADVICE_PREFETCH);
		checkf("odp_advise_not_odp", ret == EINVAL, "advise %s", strerror(ret));
	}
	ibv_dereg_mr(mr);
	ibv_dereg_mr(ro);
	munmap(b, BUF);
	munmap(r, BUF);
}

static void *unmapper(void *arg)
{
	usleep(2000);
	munmap(arg, RACE_WRS * RACE_LEN);
	return NULL;
}

static void munmap_cases(void)
{
	struct ibv_mr *mr = NULL, *big_src_mr;
	uint8_t *b = odp_buf(BUF, ODP, &mr), *big;
	struct pair p = {};
	int st = -1, n_ok = 0, n_err = 0, n_other = 0, n_done = 0;
	pthread_t th;

	if (!b || make_pair(&p)) {
		checkf("odp_munmap_write", 0, "setup: %s", strerror(errno));
		return;
	}
	munmap(b, BUF);
	st = post(p.w, WRITE, src_mr->lkey, src, mr->rkey, (uintptr_t)b + PAGE, PAGE, 0);
	checkf("odp_munmap_write", st == IBV_WC_REM_ACCESS_ERR, "status %d", st);
	free_pair(&p);
	ibv_dereg_mr(mr);

	/* WRITEs in flight while another thread unmaps the target. */
	big = malloc(RACE_LEN);
	b = odp_buf(RACE_WRS * RACE_LEN, ODP, &mr);
	big_src_mr = big ? ibv_reg_mr(pd, big, RACE_LEN, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!b || !big_src_mr || make_pair(&p)) {
		checkf("odp_munmap_race", 0, "setup: %s", strerror(errno));
		return;
	}
	memset(big, 0x3c, RACE_LEN);
	{
		struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(p.w);

		ibv_wr_start(qx);
		for (int i = 0; i < RACE_WRS; i++) {
			qx->wr_id = i;
			qx->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_rdma_write(qx, mr->rkey, (uintptr_t)b + (size_t)i * RACE_LEN);
			ibv_wr_set_sge(qx, big_src_mr->lkey, (uintptr_t)big, RACE_LEN);
		}
		if (pthread_create(&th, NULL, unmapper, b) || ibv_wr_complete(qx)) {
			checkf("odp_munmap_race", 0, "post: %s", strerror(errno));
			return;
		}
	}
	while (n_done < RACE_WRS) {
		struct ibv_wc wc;

		if (poll_one(cq, &wc, 30.0) <= 0)
			break;
		n_done++;
		if (wc.status == IBV_WC_SUCCESS && !n_err)
			n_ok++;
		else if (wc.status == IBV_WC_REM_ACCESS_ERR || wc.status == IBV_WC_WR_FLUSH_ERR ||
			 wc.status == IBV_WC_RETRY_EXC_ERR)
			n_err++;
		else
			n_other++;
	}
	pthread_join(th, NULL);
	checkf("odp_munmap_race", n_done == RACE_WRS && n_other == 0,
	       "%d of %d completed: %d ok, %d errors as expected, %d unexpected", n_done,
	       RACE_WRS, n_ok, n_err, n_other);
	printf("# odp_munmap_race: %d ok before the unmap took effect, %d failed or flushed\n",
	       n_ok, n_err);
	free_pair(&p);
	ibv_dereg_mr(mr);
	ibv_dereg_mr(big_src_mr);
	free(big);
}

int main(int argc, char **argv)
{
	struct ibv_mr *imp;
	int rxe = argc == 5 && !strcmp(argv[3], "-k") && !strcmp(argv[4], "rxe");

	if (argc != 3 && !rxe) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX [-k rxe]\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	gid_index = atoi(argv[2]);
	ctx = open_dev(argv[1]);
	if (!ctx || ibv_query_gid(ctx, 1, gid_index, &gid)) {
		printf("RRXE-TEST odp_setup FAIL: cannot open %s\n", argv[1]);
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 2 * RACE_WRS + 16, NULL, NULL, 0) : NULL;
	src = aligned_alloc(PAGE, BUF);
	dst = aligned_alloc(PAGE, BUF);
	src_mr = src ? ibv_reg_mr(pd, src, BUF, IBV_ACCESS_LOCAL_WRITE) : NULL;
	dst_mr = dst ? ibv_reg_mr(pd, dst, BUF, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!cq || !src_mr || !dst_mr) {
		printf("RRXE-TEST odp_setup FAIL: %s\n", strerror(errno));
		return 1;
	}
	caps();
	errno = 0;
	imp = ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE);
	checkf("odp_implicit_refused", !imp && errno == EOPNOTSUPP, "registration %s",
	       imp ? "succeeded" : strerror(errno));
	if (imp)
		ibv_dereg_mr(imp);
	traffic();
	advice(rxe);
	munmap_cases();
	ibv_dereg_mr(src_mr);
	ibv_dereg_mr(dst_mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return failed ? 1 : 0;
}
