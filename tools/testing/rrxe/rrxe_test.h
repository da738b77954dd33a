/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the libibverbs test programs: one "RRXE-TEST <name> ok|FAIL: ..." line per
 * check (read by scripts/check.sh), opening a device by name, and whole reads and writes
 * on the TCP socket the two-guest tests exchange their QP details over.
 */
#ifndef RRXE_TEST_H
#define RRXE_TEST_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
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

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Polls @cq for one completion for at most @limit_s seconds: 1 got, 0 none, -1 error. */
static inline int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, double limit_s)
{
	double end = now_s() + limit_s;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n < 0 ? -1 : 1;
		if (now_s() > end)
			return 0;
		usleep(500);
	}
}

static inline int read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n <= 0)
			return -1;
		got += n;
	}
	return 0;
}

static inline int write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		if (n <= 0)
			return -1;
		done += n;
	}
	return 0;
}

#endif
