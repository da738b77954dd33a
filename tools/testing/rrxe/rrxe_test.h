/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the libibverbs test programs: one "RRXE-TEST <name> ok|FAIL: ..." line per
 * check (read by scripts/check.sh), opening a device by name, connecting a loopback RC QP,
 * the TCP rendezvous of the
 * two-guest tests and whole reads and writes on the socket they exchange QP details over.
 */
#ifndef RRXE_TEST_H
#define RRXE_TEST_H

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

/* check() with a formatted reason (errno cleared: the reasons are not system calls). */
static inline void checkf(const char *name, int ok, const char *fmt, ...)
{
	char why[512] = "";
	va_list ap;

	if (!ok) {
		va_start(ap, fmt);
		vsnprintf(why, sizeof(why), fmt, ap);
		va_end(ap);
	}
	errno = 0;
	check(name, ok, why);
}

/*
 * Connects RC QP @qp (RESET) to QP @dqpn through GID @gid (this device's own for loopback)
 * and source GID @gid_index, granting the peer @access; both PSNs 0x100, MTU 1024, one READ
 * or atomic outstanding each way, retries 7. Returns 0, or non-zero with errno set.
 */
static inline int rc_connect(struct ibv_qp *qp, uint32_t dqpn, const union ibv_gid *gid,
			     int gid_index, unsigned int access)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				 .qp_access_flags = access };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		return -1;
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = dqpn,
		.rq_psn = 0x100, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *gid, .sgid_index = gid_index, .hop_limit = 64 } },
	};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				  .rnr_retry = 7, .sq_psn = 0x100, .max_rd_atomic = 1 };
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* Connects RC QPs @a and @b (both RESET, either may be NULL: then -1) to each other through
 * GID @gid (this device's own: loopback), each granting the other @access (rc_connect()).
 * Returns 0, or -1 with errno set. */
static inline int rc_connect_pair(struct ibv_qp *a, struct ibv_qp *b, const union ibv_gid *gid,
				  int gid_index, unsigned int access)
{
	if (!a || !b)
		return -1;
	if (rc_connect(a, b->qp_num, gid, gid_index, access) ||
	    rc_connect(b, a->qp_num, gid, gid_index, access))
		return -1;
	return 0;
}

/* MemFree of /proc/meminfo, in KiB (-1 if unreadable). */
static inline long mem_free_kib(void)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemFree: %ld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

static inline struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * MemFree once it has settled: memory that earlier work freed late (RCU callbacks, deferred
 * frees, another driver's teardown) still coming back would be counted against what is
 * measured next. Reads every 0.5 s until two readings 1 s apart differ by less than
 * 256 KiB, for at most 15 s; -1 if /proc/meminfo cannot be read.
 */
static inline long mem_free_settled_kib(void)
{
	long prev = mem_free_kib(), cur = prev;

	for (int i = 0; i < 30 && prev >= 0; i++) {
		usleep(500000);
		if (i % 2 == 0)
			continue;
		cur = mem_free_kib();
		if (cur < 0 || labs(cur - prev) < 256)
			return cur;
		prev = cur;
	}
	return cur;
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

/*
 * The two sides of a test meet over TCP: the server (@is_server) listens on @port and accepts
 * one connection, the client connects to @server:@port. Returns the connected socket, or -1
 * after printing ibv_rc_pingpong's wording ("Couldn't connect to ..."), on which the guest
 * scripts retry the client.
 */
static inline int tcp_rendezvous(int is_server, const char *server, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = is_server ? AI_PASSIVE : 0 };
	struct addrinfo *res, *t;
	int sock = -1, one = 1;

	if (getaddrinfo(server, port, &hints, &res)) {
		fprintf(stderr, "getaddrinfo %s:%s failed\n", server ? server : "*", port);
		return -1;
	}
	for (t = res; t; t = t->ai_next) {
		sock = socket(t->ai_family, t->ai_socktype, t->ai_protocol);
		if (sock < 0)
			continue;
		if (is_server) {
			setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (!bind(sock, t->ai_addr, t->ai_addrlen) && !listen(sock, 1))
				break;
		} else if (!connect(sock, t->ai_addr, t->ai_addrlen)) {
			break;
		}
		close(sock);
		sock = -1;
	}
	freeaddrinfo(res);
	if (sock < 0) {
		if (is_server)
			fprintf(stderr, "Couldn't listen to port %s\n", port);
		else
			fprintf(stderr, "Couldn't connect to %s:%s\n", server, port);
		return -1;
	}
	if (is_server) {
		int c = accept(sock, NULL, NULL);

		close(sock);
		sock = c;
		if (sock < 0)
			perror("accept");
	}
	return sock;
}

/* A GID as ibv_rc_pingpong writes it: 32 hex digits, 8 per 32-bit word (33 bytes at @out). */
static inline void gid_to_hex(const union ibv_gid *gid, char *out)
{
	uint32_t w[4];

	memcpy(w, gid->raw, sizeof(w));
	for (int i = 0; i < 4; i++)
		snprintf(out + 8 * i, 9, "%08x", htonl(w[i]));
}

/* The reverse of gid_to_hex(): 0, or -1 if @hex is not 32 hex digits. */
static inline int gid_from_hex(const char *hex, union ibv_gid *gid)
{
	char tmp[9];
	uint32_t w[4];

	if (strlen(hex) != 32 || strspn(hex, "0123456789abcdefABCDEF") != 32)
		return -1;
	for (int i = 0; i < 4; i++) {
		memcpy(tmp, hex + i * 8, 8);
		tmp[8] = 0;
		w[i] = ntohl(strtoul(tmp, NULL, 16));
	}
	memcpy(gid->raw, w, sizeof(w));
	return 0;
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
