// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite rrxe_frwr: rrxe as a kernel storage protocol uses it.
 *
 * Two kernel RC QPs on one RDMA device (loopback), driven through the verbs core exactly
 * as a ULP drives them (Lustre's o2iblnd GET flow, nvme-rdma, svcrdma): a scatterlist of
 * partial pages mapped with ib_dma_map_sg(), a fast-registration region (ib_alloc_mr,
 * ib_map_mr_sg, IB_WR_REG_MR), the peer moving the data with RDMA WRITE and READ from its
 * own DMA-mapped buffers under the PD's local_dma_lkey, invalidation (SEND with
 * invalidate, IB_WR_LOCAL_INV) after which the old rkey fails with a remote access error
 * and changes no memory, re-registration under a new key, rdma_rw contexts with
 * multi-entry scatterlists, and ib_post_send()'s bad_wr contract; and the device, port and
 * address handle verbs such consumers call: ib_modify_device (the node description),
 * ib_modify_port (capability bits, as the CM sets IB_PORT_CM_SUP), rdma_query_ah and
 * rdma_modify_ah.
 *
 * The suite runs when the module is loaded, against the device named by the "device"
 * parameter (rrxe0 by default), which must exist and have an IPv4 RoCE v2 GID: it is a
 * consumer of whatever driver backs that device (rdma_rxe passes it too, but for
 * map_mr_sg_refuses_non_memory: its rxe_set_page() takes any address). It is written in
 * C because it plays the part of the C ULPs it stands for, through their API.
 */
#include <kunit/test.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <net/ipv6.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cache.h>
#include <rdma/rw.h>

static char *device = "rrxe0";
module_param(device, charp, 0444);
MODULE_PARM_DESC(device, "RDMA device to test (default rrxe0)");

#define PORT 1
#define NPAGES 3
/* The target: a first page from an offset to its end, a whole page, the start of a page. */
#define FIRST_OFF 512
#define LAST_LEN 1000
#define TARGET_LEN (PAGE_SIZE - FIRST_OFF + PAGE_SIZE + LAST_LEN)
#define POLL_MS 20000

static struct ib_device *test_dev;

static int frwr_add(struct ib_device *dev);
static void frwr_remove(struct ib_device *dev, void *data);

static struct ib_client frwr_client = {
	.name = "rrxe_frwr_test",
	.add = frwr_add,
	.remove = frwr_remove,
};

static int frwr_add(struct ib_device *dev)
{
	if (!strcmp(dev_name(&dev->dev), device))
		test_dev = dev;
	return 0;
}

static void frwr_remove(struct ib_device *dev, void *data)
{
	if (dev == test_dev)
		test_dev = NULL;
}

/* One side: its own CQ and RC QP. */
struct side {
	struct ib_cq *cq;
	struct ib_qp *qp;
};

struct frwr_ctx {
	struct ib_pd *pd;
	struct side a; /* owns the target memory and the region */
	struct side b; /* moves the data */
	struct page *pages[NPAGES];
	struct scatterlist sgl[NPAGES];
	int nents;
	struct ib_mr *mr;
	u8 *src; /* b's buffers, DMA-mapped */
	u8 *dst;
	u64 src_dma, dst_dma;
	u8 *recv;
	u64 recv_dma;
};

static int find_gid(struct ib_device *dev, union ib_gid *gid, int *index, u8 *mac)
{
	int i;

	for (i = 0; i < dev->port_data[PORT].immutable.gid_tbl_len; i++) {
		const struct ib_gid_attr *attr = rdma_get_gid_attr(dev, PORT, i);

		if (IS_ERR(attr))
			continue;
		if (attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		    ipv6_addr_v4mapped((struct in6_addr *)attr->gid.raw) && attr->ndev) {
			*gid = attr->gid;
			*index = i;
			ether_addr_copy(mac, attr->ndev->dev_addr);
			rdma_put_gid_attr(attr);
			return 0;
		}
		rdma_put_gid_attr(attr);
	}
	return -ENOENT;
}

static int side_create(struct kunit *test, struct frwr_ctx *c, struct side *s)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = {
			.max_send_wr = 32,
			.max_recv_wr = 8,
			.max_send_sge = 4,
			.max_recv_sge = 4,
			.max_rdma_ctxs = 4,
		},
		.port_num = PORT,
	};

	s->cq = ib_alloc_cq(c->pd->device, NULL, 128, 0, IB_POLL_DIRECT);
	if (IS_ERR(s->cq))
		return PTR_ERR(s->cq);
	init.send_cq = s->cq;
	init.recv_cq = s->cq;
	s->qp = ib_create_qp(c->pd, &init);
	if (IS_ERR(s->qp)) {
		int err = PTR_ERR(s->qp);

		s->qp = NULL;
		return err;
	}
	return 0;
}

static int connect_qp(struct ib_qp *qp, u32 dest_qpn, union ib_gid *gid, int gid_index,
		      u8 *mac)
{
	struct ib_qp_attr attr = {};
	int err;

	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = PORT;
	attr.qp_access_flags = IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE |
			       IB_ACCESS_LOCAL_WRITE;
	err = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
				      IB_QP_ACCESS_FLAGS);
	if (err)
		return err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = IB_MTU_1024;
	attr.dest_qp_num = dest_qpn;
	attr.rq_psn = 100;
	attr.max_dest_rd_atomic = 4;
	attr.min_rnr_timer = 12;
	attr.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&attr.ah_attr, PORT);
	rdma_ah_set_grh(&attr.ah_attr, gid, 0, gid_index, 64, 0);
	/* Kernel consumers pass a resolved destination MAC: the device's own. */
	memcpy(attr.ah_attr.roce.dmac, mac, ETH_ALEN);
	err = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
				      IB_QP_DEST_QPN | IB_QP_RQ_PSN |
				      IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.sq_psn = 100;
	attr.max_rd_atomic = 4;
	return ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
				       IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
				       IB_QP_MAX_QP_RD_ATOMIC);
}

/* Waits for the next completion of @s; -ETIMEDOUT after POLL_MS. */
static int poll_one(struct side *s, struct ib_wc *wc)
{
	unsigned long end = jiffies + msecs_to_jiffies(POLL_MS);

	do {
		int n = ib_poll_cq(s->cq, 1, wc);

		if (n < 0)
			return n;
		if (n == 1)
			return 0;
		usleep_range(200, 1000);
	} while (time_before(jiffies, end));
	return -ETIMEDOUT;
}

/* Posts one WR on @s and returns its completion's status (or a negative error). */
static int post_wait(struct kunit *test, struct side *s, struct ib_send_wr *wr,
		     enum ib_wc_opcode opcode)
{
	const struct ib_send_wr *bad = NULL;
	struct ib_wc wc;
	int err;

	wr->send_flags |= IB_SEND_SIGNALED;
	err = ib_post_send(s->qp, wr, &bad);
	if (err)
		return err;
	err = poll_one(s, &wc);
	if (err)
		return err;
	KUNIT_EXPECT_EQ(test, wc.wr_id, wr->wr_id);
	if (wc.status == IB_WC_SUCCESS)
		KUNIT_EXPECT_EQ(test, wc.opcode, opcode);
	return wc.status;
}

static int reg_mr(struct kunit *test, struct frwr_ctx *c, u32 key)
{
	struct ib_reg_wr reg = {
		.wr = { .opcode = IB_WR_REG_MR, .wr_id = 1 },
		.mr = c->mr,
		.key = key,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
			  IB_ACCESS_REMOTE_WRITE,
	};

	return post_wait(test, &c->a, &reg.wr, IB_WC_REG_MR);
}

/* b moves @len bytes between its buffer and the target at @offset, through @rkey. */
static int rdma_op(struct kunit *test, struct frwr_ctx *c, enum ib_wr_opcode op,
		   u32 offset, u32 len, u32 rkey)
{
	struct ib_sge sge = {
		.addr = op == IB_WR_RDMA_READ ? c->dst_dma : c->src_dma,
		.length = len,
		.lkey = c->pd->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = { .opcode = op, .wr_id = 2, .sg_list = &sge, .num_sge = 1 },
		.remote_addr = c->mr->iova + offset,
		.rkey = rkey,
	};

	return post_wait(test, &c->b, &wr.wr,
			 op == IB_WR_RDMA_READ ? IB_WC_RDMA_READ : IB_WC_RDMA_WRITE);
}

/* Copies the target's bytes [off, off + len) out of its pages. */
static void target_read(struct frwr_ctx *c, u8 *out)
{
	struct scatterlist *sg;
	int i;

	for_each_sg(c->sgl, sg, NPAGES, i) {
		memcpy(out, sg_virt(sg), sg->length);
		out += sg->length;
	}
}

static void target_fill(struct frwr_ctx *c, u8 v)
{
	struct scatterlist *sg;
	int i;

	for_each_sg(c->sgl, sg, NPAGES, i)
		memset(sg_virt(sg), v, sg->length);
}

static int frwr_init(struct kunit *test)
{
	struct ib_device *dev = test_dev;
	struct frwr_ctx *c;
	union ib_gid gid;
	u8 mac[ETH_ALEN];
	int gid_index, i;

	KUNIT_ASSERT_NOT_NULL_MSG(test, dev, "no RDMA device named %s", device);
	c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c);
	test->priv = c;
	KUNIT_ASSERT_EQ(test, find_gid(dev, &gid, &gid_index, mac), 0);
	c->pd = ib_alloc_pd(dev, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(c->pd));
	KUNIT_ASSERT_EQ(test, side_create(test, c, &c->a), 0);
	KUNIT_ASSERT_EQ(test, side_create(test, c, &c->b), 0);
	KUNIT_ASSERT_EQ(test, connect_qp(c->a.qp, c->b.qp->qp_num, &gid, gid_index, mac), 0);
	KUNIT_ASSERT_EQ(test, connect_qp(c->b.qp, c->a.qp->qp_num, &gid, gid_index, mac), 0);

	/* The target, as the LND builds its fragments: partial pages with offsets. */
	sg_init_table(c->sgl, NPAGES);
	for (i = 0; i < NPAGES; i++) {
		c->pages[i] = alloc_page(GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, c->pages[i]);
	}
	sg_set_page(&c->sgl[0], c->pages[0], PAGE_SIZE - FIRST_OFF, FIRST_OFF);
	sg_set_page(&c->sgl[1], c->pages[1], PAGE_SIZE, 0);
	sg_set_page(&c->sgl[2], c->pages[2], LAST_LEN, 0);
	c->nents = ib_dma_map_sg(dev, c->sgl, NPAGES, DMA_BIDIRECTIONAL);
	KUNIT_ASSERT_EQ(test, c->nents, NPAGES);

	c->mr = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, 16);
	KUNIT_ASSERT_FALSE(test, IS_ERR(c->mr));

	c->src = kmalloc(TARGET_LEN, GFP_KERNEL);
	c->dst = kzalloc(TARGET_LEN, GFP_KERNEL);
	c->recv = kzalloc(64, GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, c->src && c->dst && c->recv);
	get_random_bytes(c->src, TARGET_LEN);
	c->src_dma = ib_dma_map_single(dev, c->src, TARGET_LEN, DMA_TO_DEVICE);
	c->dst_dma = ib_dma_map_single(dev, c->dst, TARGET_LEN, DMA_FROM_DEVICE);
	c->recv_dma = ib_dma_map_single(dev, c->recv, 64, DMA_FROM_DEVICE);
	return 0;
}

static void frwr_exit(struct kunit *test)
{
	struct frwr_ctx *c = test->priv;
	struct ib_device *dev;
	int i;

	if (!c || !c->pd || IS_ERR(c->pd))
		return;
	dev = c->pd->device;
	if (c->src_dma)
		ib_dma_unmap_single(dev, c->src_dma, TARGET_LEN, DMA_TO_DEVICE);
	if (c->dst_dma)
		ib_dma_unmap_single(dev, c->dst_dma, TARGET_LEN, DMA_FROM_DEVICE);
	if (c->recv_dma)
		ib_dma_unmap_single(dev, c->recv_dma, 64, DMA_FROM_DEVICE);
	kfree(c->src);
	kfree(c->dst);
	kfree(c->recv);
	if (c->a.qp)
		ib_destroy_qp(c->a.qp);
	if (c->b.qp)
		ib_destroy_qp(c->b.qp);
	if (c->mr && !IS_ERR(c->mr))
		ib_dereg_mr(c->mr);
	if (c->nents > 0)
		ib_dma_unmap_sg(dev, c->sgl, NPAGES, DMA_BIDIRECTIONAL);
	for (i = 0; i < NPAGES; i++)
		if (c->pages[i])
			__free_page(c->pages[i]);
	if (c->a.cq && !IS_ERR(c->a.cq))
		ib_free_cq(c->a.cq);
	if (c->b.cq && !IS_ERR(c->b.cq))
		ib_free_cq(c->b.cq);
	ib_dealloc_pd(c->pd);
}

/* A virtual-DMA device: the DMA address of each entry is its kernel virtual address. */
static void dma_map_sg_is_virtual(struct kunit *test)
{
	struct frwr_ctx *c = test->priv;
	struct scatterlist *sg;
	int i;

	KUNIT_EXPECT_TRUE(test, ib_uses_virt_dma(c->pd->device));
	for_each_sg(c->sgl, sg, c->nents, i) {
		KUNIT_EXPECT_EQ(test, sg_dma_address(sg), (u64)(uintptr_t)sg_virt(sg));
		KUNIT_EXPECT_EQ(test, sg_dma_len(sg), sg->length);
	}
	KUNIT_EXPECT_EQ(test, sg_dma_address(&c->sgl[0]) & ~PAGE_MASK, (u64)FIRST_OFF);
	KUNIT_EXPECT_GT(test, c->pd->device->attrs.max_sge_rd, 0);
	KUNIT_EXPECT_TRUE(test, c->pd->device->attrs.device_cap_flags &
				IB_DEVICE_MEM_MGT_EXTENSIONS);
	KUNIT_EXPECT_GE(test, c->pd->device->attrs.max_fast_reg_page_list_len, 16u);
}

/* The seed's flow: map, register, PUT by RDMA WRITE and GET by RDMA READ, bytes compared. */
static void get_flow_write_and_read(struct kunit *test)
{
	struct frwr_ctx *c = test->priv;
	u8 *seen = kunit_kzalloc(test, TARGET_LEN, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, seen);
	KUNIT_ASSERT_EQ(test, ib_map_mr_sg(c->mr, c->sgl, c->nents, NULL, PAGE_SIZE), NPAGES);
	KUNIT_EXPECT_EQ(test, c->mr->iova, sg_dma_address(&c->sgl[0]));
	KUNIT_EXPECT_EQ(test, c->mr->length, (u64)TARGET_LEN);
	KUNIT_ASSERT_EQ(test, reg_mr(test, c, c->mr->rkey), IB_WC_SUCCESS);

	/* PUT: the peer writes the whole target. */
	target_fill(c, 0);
	KUNIT_ASSERT_EQ(test, rdma_op(test, c, IB_WR_RDMA_WRITE, 0, TARGET_LEN, c->mr->rkey),
			IB_WC_SUCCESS);
	target_read(c, seen);
	KUNIT_EXPECT_EQ(test, memcmp(seen, c->src, TARGET_LEN), 0);

	/* GET: the peer reads it back, from an offset that straddles a page boundary. */
	KUNIT_ASSERT_EQ(test, rdma_op(test, c, IB_WR_RDMA_READ, 100, TARGET_LEN - 100,
				      c->mr->rkey), IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, memcmp(c->dst, c->src + 100, TARGET_LEN - 100), 0);

	/* Out of the registered range: a remote access error. */
	KUNIT_EXPECT_EQ(test, rdma_op(test, c, IB_WR_RDMA_READ, 1, TARGET_LEN, c->mr->rkey),
			IB_WC_REM_ACCESS_ERR);
}

/* SEND with invalidate frees the region: the old rkey then fails and writes nothing. */
static void send_with_inv_then_old_rkey_fails(struct kunit *test)
{
	struct frwr_ctx *c = test->priv;
	struct ib_sge rsge = { .addr = c->recv_dma, .length = 64, .lkey = c->pd->local_dma_lkey };
	struct ib_recv_wr rwr = { .wr_id = 7, .sg_list = &rsge, .num_sge = 1 };
	struct ib_sge ssge = { .addr = c->src_dma, .length = 16, .lkey = c->pd->local_dma_lkey };
	struct ib_send_wr swr = {
		.opcode = IB_WR_SEND_WITH_INV, .wr_id = 8, .sg_list = &ssge, .num_sge = 1,
	};
	const struct ib_recv_wr *rbad;
	u8 *seen = kunit_kzalloc(test, TARGET_LEN, GFP_KERNEL);
	struct ib_wc wc;
	u32 rkey;

	KUNIT_ASSERT_NOT_NULL(test, seen);
	KUNIT_ASSERT_EQ(test, ib_map_mr_sg(c->mr, c->sgl, c->nents, NULL, PAGE_SIZE), NPAGES);
	KUNIT_ASSERT_EQ(test, reg_mr(test, c, c->mr->rkey), IB_WC_SUCCESS);
	rkey = c->mr->rkey;
	KUNIT_ASSERT_EQ(test, ib_post_recv(c->a.qp, &rwr, &rbad), 0);
	swr.ex.invalidate_rkey = rkey;
	KUNIT_ASSERT_EQ(test, post_wait(test, &c->b, &swr, IB_WC_SEND), IB_WC_SUCCESS);
	KUNIT_ASSERT_EQ(test, poll_one(&c->a, &wc), 0);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, wc.opcode, IB_WC_RECV);
	KUNIT_EXPECT_EQ(test, wc.byte_len, 16u);
	KUNIT_EXPECT_TRUE(test, wc.wc_flags & IB_WC_WITH_INVALIDATE);
	KUNIT_EXPECT_EQ(test, wc.ex.invalidate_rkey, rkey);

	target_fill(c, 0x5a);
	KUNIT_EXPECT_EQ(test, rdma_op(test, c, IB_WR_RDMA_WRITE, 0, 64, rkey),
			IB_WC_REM_ACCESS_ERR);
	target_read(c, seen);
	KUNIT_EXPECT_NULL(test, memchr_inv(seen, 0x5a, TARGET_LEN));
}

/*
 * Immediate data is big-endian in both work request and completion (__be32): a SEND with
 * immediate delivers the consumer's bytes unchanged.
 */
static void imm_data_keeps_its_bytes(struct kunit *test)
{
	struct frwr_ctx *c = test->priv;
	struct ib_sge rsge = { .addr = c->recv_dma, .length = 64, .lkey = c->pd->local_dma_lkey };
	struct ib_recv_wr rwr = { .wr_id = 20, .sg_list = &rsge, .num_sge = 1 };
	struct ib_sge ssge = { .addr = c->src_dma, .length = 8, .lkey = c->pd->local_dma_lkey };
	struct ib_send_wr swr = {
		.opcode = IB_WR_SEND_WITH_IMM, .wr_id = 21, .sg_list = &ssge, .num_sge = 1,
		.ex.imm_data = cpu_to_be32(0x12345678),
	};
	const struct ib_recv_wr *rbad;
	struct ib_wc wc;

	KUNIT_ASSERT_EQ(test, ib_post_recv(c->a.qp, &rwr, &rbad), 0);
	KUNIT_ASSERT_EQ(test, post_wait(test, &c->b, &swr, IB_WC_SEND), IB_WC_SUCCESS);
	KUNIT_ASSERT_EQ(test, poll_one(&c->a, &wc), 0);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, wc.opcode, IB_WC_RECV);
	KUNIT_EXPECT_EQ(test, wc.byte_len, 8u);
	KUNIT_EXPECT_TRUE(test, wc.wc_flags & IB_WC_WITH_IMM);
	KUNIT_EXPECT_EQ(test, wc.ex.imm_data, cpu_to_be32(0x12345678));
}

/*
 * LOCAL_INV, then a registration under a new key (ib_update_fast_reg_key): the new key
 * works, the old one fails and changes nothing.
 */
static void local_inv_and_new_key(struct kunit *test)
{
	struct frwr_ctx *c = test->priv;
	struct ib_send_wr inv = { .opcode = IB_WR_LOCAL_INV, .wr_id = 3 };
	u8 *seen = kunit_kzalloc(test, TARGET_LEN, GFP_KERNEL);
	u32 old;

	KUNIT_ASSERT_NOT_NULL(test, seen);
	KUNIT_ASSERT_EQ(test, ib_map_mr_sg(c->mr, c->sgl, c->nents, NULL, PAGE_SIZE), NPAGES);
	KUNIT_ASSERT_EQ(test, reg_mr(test, c, c->mr->rkey), IB_WC_SUCCESS);
	old = c->mr->rkey;
	inv.ex.invalidate_rkey = old;
	KUNIT_ASSERT_EQ(test, post_wait(test, &c->a, &inv, IB_WC_LOCAL_INV), IB_WC_SUCCESS);

	ib_update_fast_reg_key(c->mr, ib_inc_rkey(old) & 0xff);
	KUNIT_ASSERT_NE(test, c->mr->rkey, old);
	KUNIT_ASSERT_EQ(test, reg_mr(test, c, c->mr->rkey), IB_WC_SUCCESS);
	target_fill(c, 0);
	KUNIT_ASSERT_EQ(test, rdma_op(test, c, IB_WR_RDMA_WRITE, 0, TARGET_LEN, c->mr->rkey),
			IB_WC_SUCCESS);
	target_read(c, seen);
	KUNIT_EXPECT_EQ(test, memcmp(seen, c->src, TARGET_LEN), 0);

	target_fill(c, 0x33);
	KUNIT_EXPECT_EQ(test, rdma_op(test, c, IB_WR_RDMA_WRITE, 0, 64, old),
			IB_WC_REM_ACCESS_ERR);
	target_read(c, seen);
	KUNIT_EXPECT_NULL(test, memchr_inv(seen, 0x33, TARGET_LEN));
}

/* Only a free region can be registered: a second REG_MR of a valid one is a local error. */
static void reg_mr_of_valid_region_fails(struct kunit *test)
{
	struct frwr_ctx *c = test->priv;

	KUNIT_ASSERT_EQ(test, ib_map_mr_sg(c->mr, c->sgl, c->nents, NULL, PAGE_SIZE), NPAGES);
	KUNIT_ASSERT_EQ(test, reg_mr(test, c, c->mr->rkey), IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, reg_mr(test, c, c->mr->rkey), IB_WC_LOC_QP_OP_ERR);
}

/*
 * A DMA address of a virtual-DMA device is a kernel virtual address the device copies
 * through: ib_map_mr_sg() takes only pages of the direct map (kernel::rdma::mr::DmaPage),
 * so a scatterlist naming anything else (here vmalloc memory, as a buggy consumer that
 * skipped ib_dma_map_sg() would) maps up to that entry and no further.
 */
static void map_mr_sg_refuses_non_memory(struct kunit *test)
{
	struct frwr_ctx *c = test->priv;
	struct scatterlist sg[2];
	void *vbuf;

	vbuf = vmalloc(PAGE_SIZE);
	KUNIT_ASSERT_NOT_NULL(test, vbuf);
	sg_init_table(sg, 2);
	sg_set_page(&sg[0], c->pages[1], PAGE_SIZE, 0);
	sg_dma_address(&sg[0]) = (u64)(uintptr_t)page_address(c->pages[1]);
	sg_dma_len(&sg[0]) = PAGE_SIZE;
	sg_dma_address(&sg[1]) = (u64)(uintptr_t)vbuf;
	sg_dma_len(&sg[1]) = PAGE_SIZE;

	/* Only the vmalloc entry: nothing mapped, an error. */
	KUNIT_EXPECT_LT(test, ib_map_mr_sg(c->mr, &sg[1], 1, NULL, PAGE_SIZE), 0);
	/* A page of the direct map, then the vmalloc entry: the first entry only. */
	KUNIT_EXPECT_EQ(test, ib_map_mr_sg(c->mr, sg, 2, NULL, PAGE_SIZE), 1);
	KUNIT_EXPECT_EQ(test, c->mr->length, (u64)PAGE_SIZE);
	/* The region still works over what it took. */
	KUNIT_EXPECT_EQ(test, reg_mr(test, c, c->mr->rkey), IB_WC_SUCCESS);
	vfree(vbuf);
}

/*
 * An SGE under local_dma_lkey names memory the consumer mapped for DMA: on a virtual-DMA
 * device, an address in the direct map. One that is not (vmalloc memory, as a buggy
 * consumer that skipped ib_dma_map_*() would pass) is never read: the SEND completes with
 * a local protection error and nothing reaches the peer. (rdma_rxe would copy from
 * virt_to_page() of it, a page that is not the buffer's.)
 */
static void local_dma_sge_outside_memory(struct kunit *test)
{
	struct frwr_ctx *c = test->priv;
	struct ib_sge rsge = { .addr = c->recv_dma, .length = 64, .lkey = c->pd->local_dma_lkey };
	struct ib_recv_wr rwr = { .wr_id = 30, .sg_list = &rsge, .num_sge = 1 };
	struct ib_sge ssge = { .length = 16, .lkey = c->pd->local_dma_lkey };
	struct ib_send_wr swr = {
		.opcode = IB_WR_SEND, .wr_id = 31, .sg_list = &ssge, .num_sge = 1,
	};
	const struct ib_recv_wr *rbad;
	struct ib_wc wc;
	void *vbuf;

	vbuf = vmalloc(PAGE_SIZE);
	KUNIT_ASSERT_NOT_NULL(test, vbuf);
	memset(vbuf, 0x77, PAGE_SIZE);
	ssge.addr = (u64)(uintptr_t)vbuf;
	KUNIT_ASSERT_EQ(test, ib_post_recv(c->a.qp, &rwr, &rbad), 0);
	KUNIT_EXPECT_EQ(test, post_wait(test, &c->b, &swr, IB_WC_SEND), IB_WC_LOC_PROT_ERR);
	KUNIT_EXPECT_EQ(test, ib_poll_cq(c->a.cq, 1, &wc), 0);
	vfree(vbuf);
}

/* rdma_rw contexts over a multi-entry scatterlist, both directions (svcrdma, nvmet). */
static void rw_ctx_multi_entry(struct kunit *test)
{
	struct frwr_ctx *c = test->priv;
	struct scatterlist sg[3];
	struct rdma_rw_ctx ctx;
	struct ib_cqe cqe = {};
	struct ib_wc wc;
	u8 *bufs[3], *seen;
	u32 lens[3] = { 700, 2000, TARGET_LEN - 2700 };
	u32 off;
	int i, n;

	seen = kunit_kzalloc(test, TARGET_LEN, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, seen);
	KUNIT_ASSERT_EQ(test, ib_map_mr_sg(c->mr, c->sgl, c->nents, NULL, PAGE_SIZE), NPAGES);
	KUNIT_ASSERT_EQ(test, reg_mr(test, c, c->mr->rkey), IB_WC_SUCCESS);
	sg_init_table(sg, 3);
	for (i = 0, off = 0; i < 3; off += lens[i], i++) {
		bufs[i] = kunit_kmalloc(test, lens[i], GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, bufs[i]);
		memcpy(bufs[i], c->src + off, lens[i]);
		sg_set_buf(&sg[i], bufs[i], lens[i]);
	}

	/* WRITE the three buffers to the target. */
	target_fill(c, 0);
	n = rdma_rw_ctx_init(&ctx, c->b.qp, PORT, sg, 3, 0, c->mr->iova, c->mr->rkey,
			     DMA_TO_DEVICE);
	KUNIT_ASSERT_GT(test, n, 0);
	KUNIT_ASSERT_EQ(test, rdma_rw_ctx_post(&ctx, c->b.qp, PORT, &cqe, NULL), 0);
	KUNIT_ASSERT_EQ(test, poll_one(&c->b, &wc), 0);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	rdma_rw_ctx_destroy(&ctx, c->b.qp, PORT, sg, 3, DMA_TO_DEVICE);
	target_read(c, seen);
	KUNIT_EXPECT_EQ(test, memcmp(seen, c->src, TARGET_LEN), 0);

	/* READ it back into them (one READ with three SGEs: max_sge_rd). */
	for (i = 0; i < 3; i++)
		memset(bufs[i], 0, lens[i]);
	n = rdma_rw_ctx_init(&ctx, c->b.qp, PORT, sg, 3, 0, c->mr->iova, c->mr->rkey,
			     DMA_FROM_DEVICE);
	KUNIT_ASSERT_GT(test, n, 0);
	KUNIT_ASSERT_EQ(test, rdma_rw_ctx_post(&ctx, c->b.qp, PORT, &cqe, NULL), 0);
	KUNIT_ASSERT_EQ(test, poll_one(&c->b, &wc), 0);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	rdma_rw_ctx_destroy(&ctx, c->b.qp, PORT, sg, 3, DMA_FROM_DEVICE);
	for (i = 0, off = 0; i < 3; off += lens[i], i++)
		KUNIT_EXPECT_EQ(test, memcmp(bufs[i], c->src + off, lens[i]), 0);
}

/*
 * ib_post_send() refuses what the QP cannot carry out, pointing bad_wr at it; the work
 * requests before it are posted and complete.
 */
static void post_send_bad_wr(struct kunit *test)
{
	struct frwr_ctx *c = test->priv;
	struct ib_sge sge = { .addr = c->src_dma, .length = 8, .lkey = c->pd->local_dma_lkey };
	struct ib_rdma_wr first = {
		.wr = { .opcode = IB_WR_RDMA_WRITE, .wr_id = 10, .sg_list = &sge, .num_sge = 1,
			.send_flags = IB_SEND_SIGNALED },
		.rkey = c->mr->rkey,
	};
	struct ib_reg_wr bad_key = {
		.wr = { .opcode = IB_WR_REG_MR, .wr_id = 11, .send_flags = IB_SEND_SIGNALED },
		.mr = c->mr,
		/* Another region's index: only the low byte may change. */
		.key = c->mr->rkey ^ 0x100,
		.access = IB_ACCESS_LOCAL_WRITE,
	};
	struct ib_send_wr masked = { .opcode = IB_WR_MASKED_ATOMIC_CMP_AND_SWP, .wr_id = 12 };
	const struct ib_send_wr *bad = NULL;
	struct ib_wc wc;

	KUNIT_ASSERT_EQ(test, ib_map_mr_sg(c->mr, c->sgl, c->nents, NULL, PAGE_SIZE), NPAGES);
	KUNIT_ASSERT_EQ(test, reg_mr(test, c, c->mr->rkey), IB_WC_SUCCESS);
	first.remote_addr = c->mr->iova;
	first.rkey = c->mr->rkey;
	first.wr.next = &bad_key.wr;
	KUNIT_EXPECT_NE(test, ib_post_send(c->b.qp, &first.wr, &bad), 0);
	KUNIT_EXPECT_PTR_EQ(test, bad, &bad_key.wr);
	KUNIT_ASSERT_EQ(test, poll_one(&c->b, &wc), 0);
	KUNIT_EXPECT_EQ(test, wc.wr_id, 10ull);
	KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);

	bad = NULL;
	KUNIT_EXPECT_NE(test, ib_post_send(c->b.qp, &masked, &bad), 0);
	KUNIT_EXPECT_PTR_EQ(test, bad, (const struct ib_send_wr *)&masked);
	/* A registration without a region, and an opcode reserved for drivers. */
	bad_key.mr = NULL;
	bad = NULL;
	KUNIT_EXPECT_EQ(test, ib_post_send(c->b.qp, &bad_key.wr, &bad), -EINVAL);
	KUNIT_EXPECT_PTR_EQ(test, bad, (const struct ib_send_wr *)&bad_key.wr);
	masked.opcode = IB_WR_RESERVED1;
	bad = NULL;
	KUNIT_EXPECT_EQ(test, ib_post_send(c->b.qp, &masked, &bad), -EINVAL);
	KUNIT_EXPECT_PTR_EQ(test, bad, (const struct ib_send_wr *)&masked);
	/* Nothing was queued for the refused requests. */
	KUNIT_EXPECT_EQ(test, ib_poll_cq(c->b.cq, 1, &wc), 0);
}

/* ib_modify_port: capability bits set and cleared as the CM does it; no shutdown. */
static void modify_port_caps(struct kunit *test)
{
	struct ib_device *dev = test_dev;
	struct ib_port_modify set = { .set_port_cap_mask = IB_PORT_DEVICE_MGMT_SUP };
	struct ib_port_modify clr = { .clr_port_cap_mask = IB_PORT_DEVICE_MGMT_SUP };
	struct ib_port_attr attr;

	KUNIT_ASSERT_EQ(test, ib_query_port(dev, PORT, &attr), 0);
	KUNIT_EXPECT_TRUE(test, attr.port_cap_flags & IB_PORT_CM_SUP);
	KUNIT_EXPECT_FALSE(test, attr.port_cap_flags & IB_PORT_DEVICE_MGMT_SUP);
	KUNIT_ASSERT_EQ(test, ib_modify_port(dev, PORT, 0, &set), 0);
	KUNIT_ASSERT_EQ(test, ib_query_port(dev, PORT, &attr), 0);
	KUNIT_EXPECT_TRUE(test, attr.port_cap_flags & IB_PORT_DEVICE_MGMT_SUP);
	KUNIT_EXPECT_TRUE(test, attr.port_cap_flags & IB_PORT_CM_SUP);
	KUNIT_ASSERT_EQ(test, ib_modify_port(dev, PORT, 0, &clr), 0);
	KUNIT_ASSERT_EQ(test, ib_query_port(dev, PORT, &attr), 0);
	KUNIT_EXPECT_FALSE(test, attr.port_cap_flags & IB_PORT_DEVICE_MGMT_SUP);
	KUNIT_EXPECT_EQ(test, ib_modify_port(dev, PORT, IB_PORT_SHUTDOWN, &set), -EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, ib_modify_port(dev, PORT + 1, 0, &set), -EINVAL);
}

/* ib_modify_device: the node description changes (and is restored); unknown bits refused. */
static void modify_device_node_desc(struct kunit *test)
{
	struct ib_device *dev = test_dev;
	struct ib_device_modify m = {};
	char old[IB_DEVICE_NODE_DESC_MAX];

	memcpy(old, dev->node_desc, sizeof(old));
	strscpy(m.node_desc, "kunit node", sizeof(m.node_desc));
	KUNIT_ASSERT_EQ(test, ib_modify_device(dev, IB_DEVICE_MODIFY_NODE_DESC, &m), 0);
	KUNIT_EXPECT_STREQ(test, dev->node_desc, "kunit node");
	memcpy(m.node_desc, old, sizeof(old));
	KUNIT_ASSERT_EQ(test, ib_modify_device(dev, IB_DEVICE_MODIFY_NODE_DESC, &m), 0);
	KUNIT_EXPECT_EQ(test, memcmp(dev->node_desc, old, sizeof(old)), 0);
	KUNIT_EXPECT_EQ(test, ib_modify_device(dev, 1 << 7, &m), -EOPNOTSUPP);
}

/*
 * rdma_query_ah returns the address vector an AH was created with; rdma_modify_ah changes
 * it.
 */
static void query_and_modify_ah(struct kunit *test)
{
	struct frwr_ctx *c = test->priv;
	struct rdma_ah_attr attr = {}, got = {};
	union ib_gid gid;
	struct ib_ah *ah;
	int gid_index;
	u8 mac[ETH_ALEN];

	KUNIT_ASSERT_EQ(test, find_gid(c->pd->device, &gid, &gid_index, mac), 0);
	attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&attr, PORT);
	rdma_ah_set_sl(&attr, 2);
	rdma_ah_set_grh(&attr, &gid, 0x1234, gid_index, 64, 0x20);
	ah = rdma_create_ah(c->pd, &attr, RDMA_CREATE_AH_SLEEPABLE);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ah));
	KUNIT_ASSERT_EQ(test, rdma_query_ah(ah, &got), 0);
	KUNIT_EXPECT_EQ(test, got.type, RDMA_AH_ATTR_TYPE_ROCE);
	KUNIT_EXPECT_EQ(test, rdma_ah_get_sl(&got), 2);
	KUNIT_EXPECT_EQ(test, rdma_ah_read_grh(&got)->hop_limit, 64);
	KUNIT_EXPECT_EQ(test, rdma_ah_read_grh(&got)->flow_label, 0x1234);
	KUNIT_EXPECT_EQ(test, rdma_ah_read_grh(&got)->traffic_class, 0x20);
	KUNIT_EXPECT_EQ(test, memcmp(rdma_ah_read_grh(&got)->dgid.raw, gid.raw, 16), 0);

	rdma_ah_set_sl(&attr, 5);
	rdma_ah_set_grh(&attr, &gid, 0x42, gid_index, 9, 0);
	KUNIT_EXPECT_EQ(test, rdma_modify_ah(ah, &attr), 0);
	memset(&got, 0, sizeof(got));
	KUNIT_ASSERT_EQ(test, rdma_query_ah(ah, &got), 0);
	KUNIT_EXPECT_EQ(test, rdma_ah_get_sl(&got), 5);
	KUNIT_EXPECT_EQ(test, rdma_ah_read_grh(&got)->hop_limit, 9);
	KUNIT_EXPECT_EQ(test, rdma_ah_read_grh(&got)->flow_label, 0x42);
	rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
}

/* Posts receive WR @i of the SRQ: 4 bytes into its own piece of c->recv. */
static int srq_post(struct frwr_ctx *c, struct ib_srq *srq, int i)
{
	struct ib_sge sge = {
		.addr = c->recv_dma + 4 * i, .length = 4, .lkey = c->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
	const struct ib_recv_wr *bad = NULL;

	return ib_post_srq_recv(srq, &wr, &bad);
}

#define SRQ_WRS 13

/*
 * A kernel consumer's SRQ resized (ib_modify_srq IB_SRQ_MAX_WR, as rdma_rxe allows):
 * refused below the WRs it holds (nothing changes), grown with 3 WRs waiting, then posted
 * past its old size;
 * 13 SENDs land in the 13 WRs in the order they were posted (wr_id k gets the k-th
 * SEND's bytes). Then shrunk, empty.
 */
static void srq_resize_keeps_waiting_wrs(struct kunit *test)
{
	struct frwr_ctx *c = test->priv;
	struct ib_device *dev = c->pd->device;
	struct ib_srq_init_attr sinit = {
		.attr = { .max_wr = 4, .max_sge = 1 },
		.srq_type = IB_SRQT_BASIC,
	};
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.cap = { .max_send_wr = 32, .max_send_sge = 1, .max_recv_sge = 1 },
		.port_num = PORT,
	};
	struct side tx = {}, rx = {};
	struct ib_srq_attr sattr = {};
	union ib_gid gid;
	struct ib_srq *srq;
	struct ib_wc wc;
	int gid_index, i, got = 0;
	u8 mac[ETH_ALEN];

	KUNIT_ASSERT_EQ(test, find_gid(dev, &gid, &gid_index, mac), 0);
	srq = ib_create_srq(c->pd, &sinit);
	KUNIT_ASSERT_FALSE(test, IS_ERR(srq));
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, srq_post(c, srq, i), 0);

	/* Room for one WR (sizes round up to a power of two, less one): 3 do not fit. */
	sattr.max_wr = 1;
	KUNIT_EXPECT_EQ(test, ib_modify_srq(srq, &sattr, IB_SRQ_MAX_WR), -EINVAL);
	KUNIT_EXPECT_EQ(test, ib_query_srq(srq, &sattr), 0);
	KUNIT_EXPECT_GE(test, sattr.max_wr, 4);
	KUNIT_EXPECT_LT(test, sattr.max_wr, 8);
	sattr.max_wr = 16;
	KUNIT_EXPECT_EQ(test, ib_modify_srq(srq, &sattr, IB_SRQ_MAX_WR), 0);
	KUNIT_EXPECT_EQ(test, ib_query_srq(srq, &sattr), 0);
	KUNIT_EXPECT_GE(test, sattr.max_wr, 16);
	for (i = 3; i < SRQ_WRS; i++)
		KUNIT_EXPECT_EQ(test, srq_post(c, srq, i), 0);

	tx.cq = ib_alloc_cq(dev, NULL, 64, 0, IB_POLL_DIRECT);
	rx.cq = ib_alloc_cq(dev, NULL, 64, 0, IB_POLL_DIRECT);
	if (IS_ERR(tx.cq) || IS_ERR(rx.cq))
		goto out;
	init.send_cq = tx.cq;
	init.recv_cq = tx.cq;
	tx.qp = ib_create_qp(c->pd, &init);
	init.send_cq = rx.cq;
	init.recv_cq = rx.cq;
	init.srq = srq;
	rx.qp = ib_create_qp(c->pd, &init);
	if (IS_ERR(tx.qp) || IS_ERR(rx.qp)) {
		KUNIT_FAIL(test, "create QPs: %d %d", PTR_ERR_OR_ZERO(tx.qp),
			   PTR_ERR_OR_ZERO(rx.qp));
		goto out;
	}
	KUNIT_ASSERT_EQ(test, connect_qp(tx.qp, rx.qp->qp_num, &gid, gid_index, mac), 0);
	KUNIT_ASSERT_EQ(test, connect_qp(rx.qp, tx.qp->qp_num, &gid, gid_index, mac), 0);

	for (i = 0; i < SRQ_WRS; i++) {
		struct ib_sge sge = {
			.addr = c->src_dma + 4 * i, .length = 4, .lkey = c->pd->local_dma_lkey,
		};
		struct ib_send_wr wr = {
			.wr_id = 100 + i, .opcode = IB_WR_SEND, .sg_list = &sge, .num_sge = 1,
			.send_flags = IB_SEND_SIGNALED,
		};
		const struct ib_send_wr *bad = NULL;

		KUNIT_ASSERT_EQ(test, ib_post_send(tx.qp, &wr, &bad), 0);
	}
	for (i = 0; i < SRQ_WRS; i++) {
		KUNIT_ASSERT_EQ(test, poll_one(&tx, &wc), 0);
		KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
	}
	for (i = 0; i < SRQ_WRS; i++) {
		if (poll_one(&rx, &wc))
			break;
		KUNIT_EXPECT_EQ(test, wc.status, IB_WC_SUCCESS);
		KUNIT_EXPECT_EQ(test, wc.wr_id, (u64)i);
		got++;
	}
	KUNIT_EXPECT_EQ(test, got, SRQ_WRS);
	ib_dma_sync_single_for_cpu(dev, c->recv_dma, 64, DMA_FROM_DEVICE);
	KUNIT_EXPECT_EQ(test, memcmp(c->recv, c->src, 4 * SRQ_WRS), 0);

	/* Empty again: it shrinks. */
	sattr.max_wr = 4;
	KUNIT_EXPECT_EQ(test, ib_modify_srq(srq, &sattr, IB_SRQ_MAX_WR), 0);
	KUNIT_EXPECT_EQ(test, ib_query_srq(srq, &sattr), 0);
	KUNIT_EXPECT_LT(test, sattr.max_wr, 16);
out:
	if (!IS_ERR_OR_NULL(rx.qp))
		ib_destroy_qp(rx.qp);
	if (!IS_ERR_OR_NULL(tx.qp))
		ib_destroy_qp(tx.qp);
	if (!IS_ERR_OR_NULL(rx.cq))
		ib_free_cq(rx.cq);
	if (!IS_ERR_OR_NULL(tx.cq))
		ib_free_cq(tx.cq);
	ib_destroy_srq(srq);
}

static int frwr_suite_init(struct kunit_suite *suite)
{
	return ib_register_client(&frwr_client);
}

static void frwr_suite_exit(struct kunit_suite *suite)
{
	ib_unregister_client(&frwr_client);
}

static struct kunit_case rrxe_frwr_cases[] = {
	KUNIT_CASE(dma_map_sg_is_virtual),
	KUNIT_CASE(get_flow_write_and_read),
	KUNIT_CASE(send_with_inv_then_old_rkey_fails),
	KUNIT_CASE(imm_data_keeps_its_bytes),
	KUNIT_CASE(local_inv_and_new_key),
	KUNIT_CASE(reg_mr_of_valid_region_fails),
	KUNIT_CASE(map_mr_sg_refuses_non_memory),
	KUNIT_CASE(local_dma_sge_outside_memory),
	KUNIT_CASE(rw_ctx_multi_entry),
	KUNIT_CASE(post_send_bad_wr),
	KUNIT_CASE(modify_port_caps),
	KUNIT_CASE(modify_device_node_desc),
	KUNIT_CASE(query_and_modify_ah),
	KUNIT_CASE(srq_resize_keeps_waiting_wrs),
	{}
};

static struct kunit_suite rrxe_frwr_suite = {
	.name = "rrxe_frwr",
	.suite_init = frwr_suite_init,
	.suite_exit = frwr_suite_exit,
	.init = frwr_init,
	.exit = frwr_exit,
	.test_cases = rrxe_frwr_cases,
};

kunit_test_suite(rrxe_frwr_suite);

MODULE_DESCRIPTION("KUnit tests of an RDMA device as a kernel storage consumer uses it");
MODULE_LICENSE("GPL");
