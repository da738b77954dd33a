// SPDX-License-Identifier: GPL-2.0
/*
 * mr_rules: memory windows and region re-registration through stock libibverbs and
 * rdma-core's rxe provider, on one device (loopback), beyond what rdma-core's pyverbs suite
 * checks: the window's bounds and rights, who may use and invalidate a type 2B window, the
 * binding rules, the region a window is bound to; ibv_rereg_mr of rights and PD.
 *
 * A 3-page buffer is registered (LOCAL_WRITE | MW_BIND, no remote right of its own); a
 * window covers its middle page. Writers reach it from connected RC QPs of the same PD;
 * each negative case uses a fresh QP pair (an access error moves the QPs to ERR).
 *  - mw_alloc: a type 1 and a type 2 window allocate; their rkeys differ from the region's;
 *  - mw2_write_inside: a type 2B window bound (IBV_WR_BIND_MW, REMOTE_WRITE | REMOTE_READ)
 *    through QP b: a WRITE from a to b through its rkey lands in the middle page, every
 *    other byte of the buffer unchanged; a READ returns it;
 *  - mw2_write_past_end: a WRITE running 1 byte past the window (still inside the region):
 *    remote access error, nothing written;
 *  - mw2_other_qp: the same window's rkey used through QP d (same PD, not the QP it is
 *    bound through): remote access error (a type 2B window belongs to its QP);
 *  - mw2_no_right: a window bound with REMOTE_READ only: a WRITE through it is a remote
 *    access error; a READ succeeds;
 *  - mw_dereg_busy: the region cannot be deregistered while a window is bound to it
 *    (ibv_dereg_mr fails), can once none is;
 *  - mw2_local_inv: IBV_WR_LOCAL_INV of a type 2B window's rkey on the QP it is bound
 *    through: the window no longer grants the WRITE it granted (remote access error);
 *  - mw2_rebind_bound: binding a type 2B window that is bound already: IBV_WC_MW_BIND_ERR;
 *  - mw_bind_no_mw_bind_right: binding to a region registered without MW_BIND:
 *    IBV_WC_MW_BIND_ERR;
 *  - mw1_bind_write_unbind: a type 1 window bound with ibv_bind_mw: a WRITE through it
 *    lands; after a bind of length 0 the same WRITE is a remote access error;
 *  - mw1_local_inv_refused: IBV_WR_LOCAL_INV of a type 1 window's rkey fails (o10-37.2.26);
 *  - mr_rereg_busy: the region cannot be re-registered while windows are bound to it
 *    (EBUSY);
 *  - mw_dereg_after_dealloc: the region deregisters once its windows are deallocated;
 *  - mr_rereg_access: a region without REMOTE_WRITE refuses a WRITE (remote access
 *    error); re-registered with REMOTE_WRITE (IB_MR_REREG_ACCESS) it keeps its keys and
 *    takes the WRITE;
 *  - mr_rereg_pd: re-registered into another PD (IB_MR_REREG_PD), it refuses a WRITE
 *    through a QP of the old one;
 *  - mr_rereg_readonly_memory: a region pinned without any write right cannot gain one
 *    (the memory was pinned read-only);
 *  - mr_rereg_translation_refused: new memory (IB_MR_REREG_TRANS) is not supported
 *    (EOPNOTSUPP), as in rdma_rxe.
 * The re-registrations go to the kernel's verb directly (see rereg()).
 * Prints "RRXE-TEST <name> ok|FAIL: ..." per check and exits non-zero if any failed.
 *
 * rdma_rxe is no reference here: it checks an access through a window against the
 * region's bounds only (mw2_write_past_end succeeds, writing past the window), and
 * destroying a QP through which a type 2B window is bound waits 50 s for the window's
 * reference and warns (rxe_pool.c).
 *
 * Usage: mr_rules DEVICE GID_INDEX
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "rrxe_test.h"

#define PAGE	4096
#define BUF	(3 * PAGE)
#define WIN_LEN	PAGE
#define MSG	256

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static union ibv_gid gid;
static int gid_index;
static uint8_t *buf, *src, *dst;
static struct ibv_mr *mr, *src_mr, *dst_mr;

static uint8_t pat(size_t i)
{
	return (uint8_t)(i * 7 + 3);
}

static void reset_buf(void)
{
	for (size_t i = 0; i < BUF; i++)
		buf[i] = pat(i);
}

/* The buffer holds its pattern except @len bytes of @with at @off. */
static int buf_is(size_t off, size_t len, const uint8_t *with)
{
	for (size_t i = 0; i < BUF; i++) {
		uint8_t want = (i >= off && i < off + len) ? with[i - off] : pat(i);

		if (buf[i] != want) {
			printf("# byte %zu is 0x%02x, expected 0x%02x\n", i, buf[i], want);
			return 0;
		}
	}
	return 1;
}

static struct ibv_qp *make_qp(void)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .pd = pd,
		.cap = { .max_send_wr = 8, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
				  IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV,
	};

	return ibv_create_qp_ex(ctx, &ia);
}

/* A connected pair: @w (the writer) and @t (the target, whose side the windows are on). */
struct pair {
	struct ibv_qp *w, *t;
};

static int make_pair(struct pair *p)
{
	p->w = make_qp();
	p->t = make_qp();
	if (rc_connect_pair(p->w, p->t, &gid, gid_index,
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)) {
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

/* Waits for the completion of @wr_id; returns its status, or -1. */
static int wait_wc(uint64_t wr_id)
{
	struct ibv_wc wc;

	for (;;) {
		int n = poll_one(cq, &wc, 10.0);

		if (n <= 0) {
			printf("# no completion for wr_id %lu\n", (unsigned long)wr_id);
			return -1;
		}
		if (wc.wr_id == wr_id)
			return wc.status;
		/* Flushed or earlier completions of other WRs: not this one. */
	}
}

/* Binds type 2B window @mw through @qp to @len bytes at @off of region @r; returns the
 * completion status and the new rkey in @rkey. */
static int bind2(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mr *r, size_t off,
		 size_t len, unsigned int access, uint32_t *rkey)
{
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(qp);
	struct ibv_mw_bind_info bi = { .mr = r, .addr = (uintptr_t)buf + off, .length = len,
				       .mw_access_flags = access };
	int st;

	*rkey = ibv_inc_rkey(mw->rkey);
	ibv_wr_start(qx);
	qx->wr_id = 0xb1d;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(qx, mw, *rkey, &bi);
	if (ibv_wr_complete(qx))
		return -1;
	st = wait_wc(0xb1d);
	/* The provider names the window by mw->rkey in the next bind: the application keeps
	 * it current (the bind changed the key's low byte). */
	if (st == IBV_WC_SUCCESS)
		mw->rkey = *rkey;
	return st;
}

/* An RDMA WRITE (or READ) of @len bytes from @qp to @raddr through @rkey: the status. */
static int rdma(struct ibv_qp *qp, int read, uint64_t raddr, uint32_t rkey, size_t len)
{
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(qp);

	ibv_wr_start(qx);
	qx->wr_id = 0xda7a;
	qx->wr_flags = IBV_SEND_SIGNALED;
	if (read) {
		ibv_wr_rdma_read(qx, rkey, raddr);
		ibv_wr_set_sge(qx, dst_mr->lkey, (uintptr_t)dst, len);
	} else {
		ibv_wr_rdma_write(qx, rkey, raddr);
		ibv_wr_set_sge(qx, src_mr->lkey, (uintptr_t)src, len);
	}
	if (ibv_wr_complete(qx))
		return -1;
	return wait_wc(0xda7a);
}

static int local_inv(struct ibv_qp *qp, uint32_t rkey)
{
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(qp);

	ibv_wr_start(qx);
	qx->wr_id = 0x1a1;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(qx, rkey);
	if (ibv_wr_complete(qx))
		return -1;
	return wait_wc(0x1a1);
}

/*
 * The kernel's re-registration verb (IB_USER_VERBS_CMD_REREG_MR), issued on the context's
 * command file as a provider issues it: rdma-core v44's rxe provider has no rereg_mr, so
 * ibv_rereg_mr() fails with EOPNOTSUPP before reaching the kernel, on rdma_rxe as on rrxe.
 * Returns 0, or the errno of the write. On success the region's keys are in @lkey, @rkey.
 */
static int rereg(struct ibv_mr *r, uint32_t flags, struct ibv_pd *new_pd, void *addr,
		 size_t len, uint32_t access, uint32_t *lkey, uint32_t *rkey)
{
	struct ib_uverbs_rereg_mr_resp resp = {};
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_rereg_mr cmd;
	} req = {
		.hdr = { .command = IB_USER_VERBS_CMD_REREG_MR,
			 .in_words = sizeof(req) / 4, .out_words = sizeof(resp) / 4 },
		.cmd = { .response = (uintptr_t)&resp, .mr_handle = r->handle, .flags = flags,
			 .start = (uintptr_t)addr, .length = len, .hca_va = (uintptr_t)addr,
			 .pd_handle = new_pd ? new_pd->handle : 0, .access_flags = access },
	};

	if (write(ctx->cmd_fd, &req, sizeof(req)) != sizeof(req))
		return errno;
	*lkey = resp.lkey;
	*rkey = resp.rkey;
	return 0;
}

/* Re-registration: rights and PD change in place; read-only memory stays so; no new
 * memory. */
static void rereg_checks(void)
{
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct ibv_mr *r, *ro;
	struct pair p = {};
	uint32_t lkey = 0, rkey = 0;
	int st, st2 = -1, rc;

	reset_buf();
	r = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE);
	if (!pd2 || !r || make_pair(&p)) {
		checkf("mr_rereg_access", 0, "setup: %s", strerror(errno));
		return;
	}
	st = rdma(p.w, 0, (uintptr_t)buf + 64, r->rkey, MSG);
	free_pair(&p);
	rc = rereg(r, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &lkey, &rkey);
	if (!rc && !make_pair(&p))
		st2 = rdma(p.w, 0, (uintptr_t)buf + 64, r->rkey, MSG);
	free_pair(&p);
	checkf("mr_rereg_access",
	       st == IBV_WC_REM_ACCESS_ERR && rc == 0 && r->lkey == lkey && r->rkey == rkey &&
		       st2 == IBV_WC_SUCCESS && buf_is(64, MSG, src),
	       "write before %d, rereg %s, keys 0x%x/0x%x -> 0x%x/0x%x, write after %d", st,
	       strerror(rc), r->lkey, r->rkey, lkey, rkey, st2);

	reset_buf();
	st = -1;
	rc = rereg(r, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0, &lkey, &rkey);
	if (!rc && !make_pair(&p))
		st = rdma(p.w, 0, (uintptr_t)buf + 64, r->rkey, MSG);
	free_pair(&p);
	checkf("mr_rereg_pd", rc == 0 && st == IBV_WC_REM_ACCESS_ERR && buf_is(0, 0, NULL),
	       "rereg %s, write through the old PD %d", strerror(rc), st);

	ro = ibv_reg_mr(pd, dst, PAGE, IBV_ACCESS_REMOTE_READ);
	rc = ro ? rereg(ro, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, &lkey, &rkey) : -1;
	checkf("mr_rereg_readonly_memory", ro && rc == EACCES, "registration %p, rereg %s",
	       (void *)ro, rc > 0 ? strerror(rc) : "succeeded");
	rc = ro ? rereg(ro, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, src, PAGE, 0, &lkey, &rkey) : -1;
	checkf("mr_rereg_translation_refused", ro && rc == EOPNOTSUPP, "rereg %s",
	       rc > 0 ? strerror(rc) : "succeeded");
	if (ro)
		ibv_dereg_mr(ro);
	ibv_dereg_mr(r);
	ibv_dealloc_pd(pd2);
}

#define WIN_OFF PAGE
#define WIN_VA ((uintptr_t)buf + WIN_OFF)
#define RW_RIGHTS (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

int main(int argc, char **argv)
{
	struct pair p = {}, q = {};
	struct ibv_mw *mw1, *mw2, *mw3, *mw4;
	struct ibv_mr *plain;
	uint32_t rkey, rkey3;
	int st, st2;

	if (argc != 3) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX\n", argv[0]);
		return 2;
	}
	gid_index = atoi(argv[2]);
	ctx = open_dev(argv[1]);
	if (!ctx || ibv_query_gid(ctx, 1, gid_index, &gid))
		return 1;
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	buf = aligned_alloc(PAGE, BUF);
	src = aligned_alloc(PAGE, PAGE + 64);
	dst = aligned_alloc(PAGE, PAGE + 64);
	if (!pd || !cq || !buf || !src || !dst)
		return 1;
	for (size_t i = 0; i < PAGE + 64; i++)
		src[i] = (uint8_t)(0xa0 ^ i);
	reset_buf();
	mr = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	src_mr = ibv_reg_mr(pd, src, PAGE + 64, IBV_ACCESS_LOCAL_WRITE);
	dst_mr = ibv_reg_mr(pd, dst, PAGE + 64, IBV_ACCESS_LOCAL_WRITE);
	plain = ibv_reg_mr(pd, dst, PAGE, IBV_ACCESS_LOCAL_WRITE);
	if (!mr || !src_mr || !dst_mr || !plain) {
		printf("# ibv_reg_mr: %s\n", strerror(errno));
		return 1;
	}

	mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	mw3 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	checkf("mw_alloc", mw1 && mw2 && mw3 && mw1->rkey != mr->rkey && mw2->rkey != mw1->rkey,
	       "ibv_alloc_mw: %s", strerror(errno));
	if (!mw1 || !mw2 || !mw3)
		return 1;

	/* Type 2B: bound through p.t, written from p.w. */
	if (make_pair(&p) || make_pair(&q))
		return 1;
	st = bind2(p.t, mw2, mr, WIN_OFF, WIN_LEN, RW_RIGHTS, &rkey);
	st2 = st == IBV_WC_SUCCESS ? rdma(p.w, 0, WIN_VA + 100, rkey, MSG) : -2;
	memset(dst, 0, MSG);
	checkf("mw2_write_inside",
	       st2 == IBV_WC_SUCCESS && buf_is(WIN_OFF + 100, MSG, src) &&
		       rdma(p.w, 1, WIN_VA + 100, rkey, MSG) == IBV_WC_SUCCESS &&
		       !memcmp(dst, src, MSG),
	       "bind %d, write %d, or the data is wrong", st, st2);

	/* 1 byte past the window's end (the region goes on). */
	reset_buf();
	st = rdma(p.w, 0, WIN_VA + WIN_LEN - MSG + 1, rkey, MSG);
	checkf("mw2_write_past_end", st == IBV_WC_REM_ACCESS_ERR && buf_is(0, 0, NULL),
	       "status %d (%s)", st, st >= 0 ? ibv_wc_status_str(st) : "none");

	/* The window's rkey through another QP of the PD (q.t): refused. */
	st = rdma(q.w, 0, WIN_VA, rkey, MSG);
	checkf("mw2_other_qp", st == IBV_WC_REM_ACCESS_ERR && buf_is(0, 0, NULL),
	       "status %d (%s)", st, st >= 0 ? ibv_wc_status_str(st) : "none");
	free_pair(&p);
	free_pair(&q);

	/* A READ-only window: WRITE refused, READ granted. */
	if (make_pair(&p) || make_pair(&q))
		return 1;
	st = bind2(p.t, mw3, mr, WIN_OFF, WIN_LEN, IBV_ACCESS_REMOTE_READ, &rkey3);
	st2 = rdma(p.w, 1, WIN_VA, rkey3, MSG);
	checkf("mw2_no_right",
	       st == IBV_WC_SUCCESS && st2 == IBV_WC_SUCCESS &&
		       !memcmp(dst, buf + WIN_OFF, MSG) &&
		       rdma(p.w, 0, WIN_VA, rkey3, MSG) == IBV_WC_REM_ACCESS_ERR &&
		       buf_is(0, 0, NULL),
	       "bind %d, read %d, or the write was not refused", st, st2);
	free_pair(&p);

	/* The region is busy while windows are bound to it. */
	errno = ibv_dereg_mr(mr);
	st = errno;
	checkf("mw_dereg_busy", st != 0, "ibv_dereg_mr succeeded with windows bound");
	if (!st)
		return 1;

	/* LOCAL_INV of a type 2B window bound through p.t, on p.t. */
	free_pair(&q);
	if (make_pair(&p))
		return 1;
	mw4 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	if (!mw4)
		return 1;
	reset_buf();
	st = bind2(p.t, mw4, mr, WIN_OFF, WIN_LEN, RW_RIGHTS, &rkey);
	st2 = rdma(p.w, 0, WIN_VA, rkey, MSG);
	reset_buf();
	checkf("mw2_local_inv",
	       st == IBV_WC_SUCCESS && st2 == IBV_WC_SUCCESS &&
		       local_inv(p.t, rkey) == IBV_WC_SUCCESS &&
		       rdma(p.w, 0, WIN_VA, rkey, MSG) == IBV_WC_REM_ACCESS_ERR &&
		       buf_is(0, 0, NULL),
	       "bind %d, write %d, or the window still granted access", st, st2);
	free_pair(&p);

	/* Rebinding a bound type 2B window; binding to a region without MW_BIND. */
	if (make_pair(&p))
		return 1;
	st = bind2(p.t, mw4, mr, WIN_OFF, WIN_LEN, RW_RIGHTS, &rkey);
	st2 = bind2(p.t, mw4, mr, WIN_OFF, WIN_LEN, RW_RIGHTS, &rkey);
	checkf("mw2_rebind_bound", st == IBV_WC_SUCCESS && st2 == IBV_WC_MW_BIND_ERR,
	       "first bind %d, second %d (%s)", st, st2,
	       st2 >= 0 ? ibv_wc_status_str(st2) : "none");
	free_pair(&p);
	if (make_pair(&p))
		return 1;
	{
		struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(p.t);
		struct ibv_mw_bind_info bi = { .mr = plain, .addr = (uintptr_t)dst,
					       .length = 64, .mw_access_flags = RW_RIGHTS };

		ibv_wr_start(qx);
		qx->wr_id = 0xb1d;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_bind_mw(qx, mw3, ibv_inc_rkey(mw3->rkey), &bi);
		st = ibv_wr_complete(qx) ? -1 : wait_wc(0xb1d);
	}
	checkf("mw_bind_no_mw_bind_right", st == IBV_WC_MW_BIND_ERR, "status %d (%s)", st,
	       st >= 0 ? ibv_wc_status_str(st) : "none");
	free_pair(&p);

	/* Type 1: bind, write, unbind (length 0), write refused. */
	if (make_pair(&p))
		return 1;
	{
		struct ibv_mw_bind mb = {
			.wr_id = 0x71, .send_flags = IBV_SEND_SIGNALED,
			.bind_info = { .mr = mr, .addr = WIN_VA, .length = WIN_LEN,
				       .mw_access_flags = RW_RIGHTS },
		};
		int b1, w1, b0 = -1, w0 = -1;

		reset_buf();
		b1 = ibv_bind_mw(p.t, mw1, &mb) ? -1 : wait_wc(0x71);
		w1 = rdma(p.w, 0, WIN_VA + 8, mw1->rkey, MSG);
		if (b1 == IBV_WC_SUCCESS && w1 == IBV_WC_SUCCESS && buf_is(WIN_OFF + 8, MSG, src)) {
			mb.bind_info.length = 0;
			mb.bind_info.addr = 0;
			b0 = ibv_bind_mw(p.t, mw1, &mb) ? -1 : wait_wc(0x71);
			w0 = rdma(p.w, 0, WIN_VA + 8, mw1->rkey, MSG);
		}
		checkf("mw1_bind_write_unbind", b0 == IBV_WC_SUCCESS && w0 == IBV_WC_REM_ACCESS_ERR,
		       "bind %d, write %d, unbind %d, write after %d", b1, w1, b0, w0);
	}
	free_pair(&p);
	if (make_pair(&p))
		return 1;
	st = local_inv(p.t, mw1->rkey);
	checkf("mw1_local_inv_refused", st != IBV_WC_SUCCESS && st >= 0, "status %d", st);
	free_pair(&p);

	/* Windows bound (mw2, mw3): no re-registration either. */
	{
		uint32_t l, k;

		st = rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND | IBV_ACCESS_REMOTE_READ,
			   &l, &k);
		checkf("mr_rereg_busy", st == EBUSY, "rereg with windows bound: %s",
		       st ? strerror(st) : "succeeded");
	}

	/* Windows gone: the region deregisters. */
	ibv_dealloc_mw(mw1);
	ibv_dealloc_mw(mw2);
	ibv_dealloc_mw(mw3);
	ibv_dealloc_mw(mw4);
	errno = ibv_dereg_mr(mr);
	checkf("mw_dereg_after_dealloc", errno == 0, "ibv_dereg_mr: %s", strerror(errno));
	rereg_checks();
	ibv_dereg_mr(src_mr);
	ibv_dereg_mr(dst_mr);
	ibv_dereg_mr(plain);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return failed ? 1 : 0;
}
