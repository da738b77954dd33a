/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the libibverbs test programs: one "RRXE-TEST <name> ok|FAIL: ..." line per
 * check (read by scripts/check.sh), and opening a device by name.
 */
#ifndef RRXE_TEST_H
#define RRXE_TEST_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

static int failed;

static inline void check(const char *name, int ok, const char *what)
{
	if (ok) {
		printf("RRXE-TEST %s ok\n", name);
	} else {
		printf("RRXE-TEST %s FAIL: %s (errno %d)\n", name, what, errno);
		failed = 1;
	}
}

static inline struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

#endif
