// SPDX-License-Identifier: GPL-2.0
/*
 * verbs_mr: memory regions through stock libibverbs and rdma-core's rxe provider:
 * registration with each access combination, keys, the spec's access rules, bad ranges,
 * many regions, and regions left to the context close.
 * Prints "RRXE-TEST <name> ok|FAIL: ..." per check; exits non-zero if any failed.
 *
 * Usage: verbs_mr DEVICE
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <infiniband/verbs.h>

#include "rrxe_test.h"

int main(int argc, char **argv)
{
	struct ibv_context *ctx = NULL;
	static char buf[1 << 20];
	const int flags[] = {
		0,
		IBV_ACCESS_LOCAL_WRITE,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_REMOTE_READ,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC,
	};

	if (argc != 2) {
		fprintf(stderr, "usage: %s DEVICE\n", argv[0]);
		return 2;
	}
	ctx = open_dev(argv[1]);
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	check("mr_setup", pd != NULL, "open device / alloc pd");
	if (!pd)
		return 1;

	for (unsigned int i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		char name[64];
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), flags[i]);

		snprintf(name, sizeof(name), "mr_reg_access_%#x", flags[i]);
		check(name, mr && mr->lkey && mr->lkey == mr->rkey && mr->length == sizeof(buf) &&
				    !ibv_dereg_mr(mr), "reg/dereg");
	}
	/* IBA: remote write or atomic access needs local write. */
	errno = 0;
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE);
	check("core_mr_remote_write_needs_local_write", !mr && errno == EINVAL, "REMOTE_WRITE alone");
	if (mr)
		ibv_dereg_mr(mr);
	/* A range that is not mapped cannot be pinned. */
	void *hole = mmap(NULL, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	munmap(hole, 1 << 16);
	errno = 0;
	mr = ibv_reg_mr(pd, hole, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
	check("core_mr_unmapped_range_rejected", !mr && errno != 0, "unmapped range");
	if (mr)
		ibv_dereg_mr(mr);
	/* Unaligned start and odd length; a zero-based iova. */
	mr = ibv_reg_mr(pd, buf + 123, 4567, IBV_ACCESS_LOCAL_WRITE);
	check("mr_unaligned", mr && mr->length == 4567 && !ibv_dereg_mr(mr), "buf+123, 4567");
	/* An iova keeps the page offset of the address (the core checks it). */
	mr = ibv_reg_mr_iova(pd, buf, 8192, (uintptr_t)buf & 4095,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	check("mr_iova_zero_based", mr && !ibv_dereg_mr(mr), "ibv_reg_mr_iova(page offset)");
	errno = 0;
	mr = ibv_reg_mr_iova(pd, buf, 8192, ((uintptr_t)buf & 4095) + 1, IBV_ACCESS_LOCAL_WRITE);
	check("core_mr_iova_other_page_offset_rejected", !mr && errno == EINVAL, "iova offset");
	if (mr)
		ibv_dereg_mr(mr);

	/* Keys are unique and not a plain counter. */
	struct ibv_mr *many[64];
	int made = 0, unique = 1, sequential = 1;

	for (; made < 64; made++)
		if (!(many[made] = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE)))
			break;
	for (int i = 0; i < made; i++) {
		for (int j = i + 1; j < made; j++)
			unique &= many[i]->lkey != many[j]->lkey;
		if (i)
			sequential &= many[i]->lkey == many[i - 1]->lkey + 1;
	}
	check("mr_64_unique_keys", made == 64 && unique, "64 regions");
	check("mr_keys_not_sequential", made == 64 && !sequential, "keys");
	for (int i = 0; i < made; i += 2)
		ibv_dereg_mr(many[i]);
	/* The rest are left to the context close. */
	check("mr_close_with_regions", !ibv_close_device(ctx), "ibv_close_device");
	return failed;
}
