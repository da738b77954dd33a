// SPDX-License-Identifier: GPL-2.0
/*
 * verbs_objects: exercises the verbs objects of an RDMA device through stock libibverbs
 * (and so through rdma-core's rxe provider for rrxe): protection domains and completion
 * queues, including the shared CQ ring the provider maps, resize, completion channels and
 * the error answers to bad requests. Prints "RRXE-TEST <name> ok|FAIL: ..." per check and
 * exits non-zero if any failed.
 *
 * Address handles are created towards the device's own RoCE v2 GID (GIDIDX) and a
 * destination address (PEER_IPV4; the device's own address works, the core resolves its MAC).
 *
 * Usage: verbs_objects DEVICE [GIDIDX PEER_IPV4]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "rrxe_test.h"

int main(int argc, char **argv)
{
	struct ibv_device_attr attr;
	struct ibv_context *ctx;
	struct ibv_pd *pds[64];
	struct ibv_wc wc[4];
	int sizes[] = { 1, 15, 16, 100, 1000, 4096 };

	if (argc != 2 && argc != 4) {
		fprintf(stderr, "usage: %s DEVICE [GIDIDX PEER_IPV4]\n", argv[0]);
		return 2;
	}
	ctx = open_dev(argv[1]);
	check("verbs_open_device", ctx != NULL, "ibv_open_device");
	if (!ctx)
		return 1;
	check("verbs_query_device", !ibv_query_device(ctx, &attr), "ibv_query_device");

	/* Protection domains. */
	int n = 0;
	for (; n < 64; n++)
		if (!(pds[n] = ibv_alloc_pd(ctx)))
			break;
	check("verbs_alloc_64_pds", n == 64, "ibv_alloc_pd");
	int dealloc_ok = 1;
	while (n--)
		dealloc_ok &= !ibv_dealloc_pd(pds[n]);
	check("verbs_dealloc_pds", dealloc_ok, "ibv_dealloc_pd");

	/* Completion queues: the reported size covers the request; an empty ring polls empty. */
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char name[64];
		struct ibv_cq *cq = ibv_create_cq(ctx, sizes[i], NULL, NULL, 0);

		snprintf(name, sizeof(name), "verbs_cq_%d", sizes[i]);
		check(name, cq && cq->cqe >= sizes[i] && ibv_poll_cq(cq, 4, wc) == 0 &&
			      !ibv_destroy_cq(cq), "create/poll/destroy");
	}
	struct ibv_cq *cq = ibv_create_cq(ctx, attr.max_cqe, NULL, NULL, 0);
	check("verbs_cq_max_cqe", cq && cq->cqe >= attr.max_cqe, "ibv_create_cq(max_cqe)");
	if (cq)
		ibv_destroy_cq(cq);
	errno = 0;
	cq = ibv_create_cq(ctx, attr.max_cqe + 1, NULL, NULL, 0);
	check("verbs_cq_over_max_rejected", !cq && errno == EINVAL, "ibv_create_cq(max_cqe + 1)");
	if (cq)
		ibv_destroy_cq(cq);

	/* Resize up and down. */
	cq = ibv_create_cq(ctx, 10, NULL, NULL, 0);
	check("verbs_resize_up", cq && !ibv_resize_cq(cq, 2000) && cq->cqe >= 2000 &&
			  ibv_poll_cq(cq, 4, wc) == 0, "ibv_resize_cq(2000)");
	check("verbs_resize_down", cq && !ibv_resize_cq(cq, 20) && cq->cqe >= 20 &&
			    ibv_poll_cq(cq, 4, wc) == 0, "ibv_resize_cq(20)");
	errno = 0;
	check("verbs_resize_over_max_rejected", cq && ibv_resize_cq(cq, attr.max_cqe + 1),
	      "ibv_resize_cq(max_cqe + 1)");
	check("verbs_destroy_resized", cq && !ibv_destroy_cq(cq), "ibv_destroy_cq");

	/* Completion channel: arming works, and no event arrives without completions. */
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	check("verbs_comp_channel", ch != NULL, "ibv_create_comp_channel");
	cq = ch ? ibv_create_cq(ctx, 16, NULL, ch, 0) : NULL;
	check("verbs_cq_with_channel", cq != NULL, "ibv_create_cq(channel)");
	check("verbs_req_notify", cq && !ibv_req_notify_cq(cq, 0) && !ibv_req_notify_cq(cq, 1),
	      "ibv_req_notify_cq");
	if (ch) {
		struct pollfd p = { .fd = ch->fd, .events = POLLIN };

		check("verbs_no_spurious_event", poll(&p, 1, 100) == 0, "poll(channel)");
	}
	check("verbs_destroy_cq_with_channel", cq && !ibv_destroy_cq(cq), "ibv_destroy_cq");
	check("verbs_destroy_channel", ch && !ibv_destroy_comp_channel(ch), "ibv_destroy_comp_channel");

	if (argc == 4) {
		/* Address handles: a user AH gets a number from the driver (rxe_create_ah_resp). */
		struct ibv_pd *pd = ibv_alloc_pd(ctx);
		struct ibv_ah_attr ah = { .is_global = 1, .port_num = 1 };
		struct ibv_ah *ahs[16];
		int made = 0;

		ah.grh.sgid_index = atoi(argv[2]);
		ah.grh.hop_limit = 64;
		ah.grh.dgid.raw[10] = ah.grh.dgid.raw[11] = 0xff;
		check("env_verbs_ah_peer_address", inet_pton(AF_INET, argv[3], &ah.grh.dgid.raw[12]) == 1,
		      "inet_pton");
		for (int i = 0; i < 16; i++) {
			ahs[i] = pd ? ibv_create_ah(pd, &ah) : NULL;
			made += ahs[i] != NULL;
		}
		check("verbs_create_16_ahs", made == 16, "ibv_create_ah");
		for (int i = 0; i < 16; i++)
			if (ahs[i] && ibv_destroy_ah(ahs[i]))
				made = -1;
		check("verbs_destroy_ahs", made == 16, "ibv_destroy_ah");
		ah.port_num = 2;
		errno = 0;
		check("core_ah_bad_port_rejected", pd && !ibv_create_ah(pd, &ah), "ibv_create_ah(port 2)");
		ah.port_num = 1;
		ah.is_global = 0;
		check("core_ah_without_grh_rejected", pd && !ibv_create_ah(pd, &ah),
		      "ibv_create_ah(no GRH)");
		/* One left for the kernel to clean up. */
		ah.is_global = 1;
		check("verbs_ah_left_open", pd && ibv_create_ah(pd, &ah) != NULL, "ibv_create_ah");
	}

	/* Objects left for the kernel to clean up when the context closes. */
	for (int i = 0; i < 8; i++) {
		ibv_alloc_pd(ctx);
		ibv_create_cq(ctx, 64, NULL, NULL, 0);
	}
	check("verbs_close_with_objects", !ibv_close_device(ctx), "ibv_close_device");
	return failed;
}
