// SPDX-License-Identifier: GPL-2.0
/*
 * rc_rnr: Receiver Not Ready over RC, between two hosts (or guests).
 *
 * The server creates an RC QP, moves it to RTR with a small min_rnr_timer and posts NO
 * receive WQE; the client moves its QP to RTS (timeout 14, retry_cnt 7, rnr_retry -r) and
 * posts one signaled SEND of -s bytes (default 64).
 *
 *  - Default (negative) mode: every try of the SEND is answered with an RNR NAK, so the
 *    client must complete it with IBV_WC_RNR_RETRY_EXC_ERR (with the default rnr_retry 1:
 *    the first try and one retry); the server must see no completion at all.
 *  - -P (positive): the server posts its receive ~200 ms (-w) after the connection is set
 *    up, or, with -W COUNTER_FILE, once the number in that file (its driver's count of RNR
 *    NAKs sent, in sysfs) has grown, i.e. once the SEND was refused at least once (30 s at
 *    most); the client (use -r 7: retry for ever) must complete its SEND with
 *    IBV_WC_SUCCESS, and the server must get one receive completion of -s bytes with the
 *    sent data (every byte checked).
 *  - -H SECS: each side keeps its QP (in the error state, for the client of the negative
 *    mode) for SECS seconds once the outcome is known, before destroying anything, and says
 *    so ("holding QP 0x..."), so that what the device reports about it (`rdma resource show
 *    qp`, `rdma statistic qp show`) can be read.
 *
 * QP numbers, PSNs and GIDs are exchanged over TCP as ibv_rc_pingpong does ("LID:QPN:PSN:
 * GID" text, the client connects to the server's port -p, default 18520); the connection
 * stays open and the client writes its result ("done <status>") when its SEND completed,
 * then the server checks its side. Each side polls its CQ for at most 30 s of wall clock.
 * Exit status 0 only if the outcome is the expected one.
 *
 * Usage: rc_rnr server|client -d DEV -g GIDIDX [-p PORT] [-r RNR_RETRY] [-t MIN_RNR_TIMER]
 *               [-s SIZE] [-w MSEC] [-W COUNTER_FILE] [-P] [-H SECS] [SERVER_ADDRESS (client)]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "rrxe_test.h"

#define POLL_LIMIT_S 30

struct dest {
	unsigned int lid, qpn, psn;
	union ibv_gid gid;
};

/* "LID:QPN:PSN:GID", as ibv_rc_pingpong sends it (GID as 32 hex digits, 4 bytes a word). */
#define MSG_SIZE (sizeof("0000:000000:000000:00000000000000000000000000000000"))

static void dest_to_msg(const struct dest *d, char *msg)
{
	char gid[33];

	gid_to_hex(&d->gid, gid);
	snprintf(msg, MSG_SIZE, "%04x:%06x:%06x:%s", d->lid, d->qpn, d->psn, gid);
}

static int msg_to_dest(const char *msg, struct dest *d)
{
	char gid[33];

	if (sscanf(msg, "%x:%x:%x:%32s", &d->lid, &d->qpn, &d->psn, gid) != 4)
		return -1;
	return gid_from_hex(gid, &d->gid);
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 7 + 13 + (i >> 8));
}

/* The number in a sysfs counter file, or -1. */
static long long read_counter(const char *path)
{
	FILE *f = fopen(path, "r");
	long long v = -1;

	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s server|client -d DEV -g GIDIDX [-p PORT] [-r RNR_RETRY] [-t MIN_RNR_TIMER]\n"
		"          [-s SIZE] [-w MSEC] [-W COUNTER_FILE] [-P] [-H SECS] [SERVER_ADDRESS (client)]\n",
		argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *devname = NULL, *server = NULL, *port = "18520", *counter = NULL;
	int gid_index = -1, rnr_retry = 1, min_rnr_timer = 1, positive = 0, is_server, opt;
	unsigned int size = 64, wait_ms = 200, hold_s = 0;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct dest me = { 0 }, peer;
	struct ibv_port_attr pa;
	char msg[MSG_SIZE], gidstr[INET6_ADDRSTRLEN];
	struct ibv_wc wc;
	uint8_t *buf;
	int sock = -1, ok = 0, n;

	if (argc < 2)
		usage(argv[0]);
	if (!strcmp(argv[1], "server"))
		is_server = 1;
	else if (!strcmp(argv[1], "client"))
		is_server = 0;
	else
		usage(argv[0]);
	optind = 2;
	while ((opt = getopt(argc, argv, "d:g:p:r:t:s:w:W:PH:")) != -1) {
		switch (opt) {
		case 'd': devname = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 'p': port = optarg; break;
		case 'r': rnr_retry = atoi(optarg); break;
		case 't': min_rnr_timer = atoi(optarg); break;
		case 's': size = strtoul(optarg, NULL, 0); break;
		case 'w': wait_ms = strtoul(optarg, NULL, 0); break;
		case 'P': positive = 1; break;
		case 'W': counter = optarg; break;
		case 'H': hold_s = strtoul(optarg, NULL, 0); break;
		default: usage(argv[0]);
		}
	}
	if (!is_server) {
		if (optind != argc - 1)
			usage(argv[0]);
		server = argv[optind];
	} else if (optind != argc) {
		usage(argv[0]);
	}
	if (!devname || gid_index < 0 || !size || rnr_retry < 0 || rnr_retry > 7 ||
	    min_rnr_timer < 0 || min_rnr_timer > 31)
		usage(argv[0]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand48(getpid() ^ time(NULL));

	/* --- verbs objects ---------------------------------------------------------- */
	ctx = open_dev(devname);
	if (!ctx) {
		fprintf(stderr, "cannot open %s\n", devname);
		return 1;
	}
	buf = calloc(1, size);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
	mr = cq && buf ? ibv_reg_mr(pd, buf, size, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr) {
		perror("pd/cq/mr");
		return 1;
	}
	{
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

		qp = ibv_create_qp(pd, &ia);
		if (!qp || ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						 IBV_QP_ACCESS_FLAGS)) {
			perror("create QP / INIT");
			return 1;
		}
	}
	if (ibv_query_port(ctx, 1, &pa) || ibv_query_gid(ctx, 1, gid_index, &me.gid)) {
		perror("query port / gid");
		return 1;
	}
	me.lid = pa.lid;
	me.qpn = qp->qp_num;
	me.psn = lrand48() & 0xffffff;
	inet_ntop(AF_INET6, &me.gid, gidstr, sizeof(gidstr));
	printf("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n",
	       me.lid, me.qpn, me.psn, gidstr);

	/* --- TCP exchange ------------------------------------------------------------ */
	sock = tcp_rendezvous(is_server, server, port);
	if (sock < 0)
		return 1;
	dest_to_msg(&me, msg);
	if (is_server) {
		if (read_full(sock, msg, sizeof(msg)) || msg_to_dest(msg, &peer)) {
			fprintf(stderr, "Couldn't read remote address\n");
			return 1;
		}
		dest_to_msg(&me, msg);
	} else {
		if (write_full(sock, msg, sizeof(msg)) || read_full(sock, msg, sizeof(msg)) ||
		    msg_to_dest(msg, &peer)) {
			fprintf(stderr, "Couldn't exchange addresses\n");
			return 1;
		}
	}
	inet_ntop(AF_INET6, &peer.gid, gidstr, sizeof(gidstr));
	printf("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n",
	       peer.lid, peer.qpn, peer.psn, gidstr);

	/* --- connect the QP (the server to RTR only: a responder) --------------------- */
	{
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = peer.qpn,
			.rq_psn = peer.psn, .max_dest_rd_atomic = 1,
			.min_rnr_timer = is_server ? min_rnr_timer : 12,
			.ah_attr = { .is_global = 1, .port_num = 1, .dlid = peer.lid,
				     .grh = { .dgid = peer.gid, .sgid_index = gid_index,
					      .hop_limit = 64 } },
		};

		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
			perror("modify QP to RTR");
			return 1;
		}
		if (!is_server) {
			a.qp_state = IBV_QPS_RTS;
			a.timeout = 14;
			a.retry_cnt = 7;
			a.rnr_retry = rnr_retry;
			a.sq_psn = me.psn;
			a.max_rd_atomic = 1;
			if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
						  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
						  IBV_QP_MAX_QP_RD_ATOMIC)) {
				perror("modify QP to RTS");
				return 1;
			}
		}
	}

	if (is_server) {
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = size, .lkey = mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 }, *bad;
		char done[64] = "";

		printf("server: RTR, min_rnr_timer %d, no receive posted\n", min_rnr_timer);
		/* The QP is ready: let the client go. */
		if (write_full(sock, msg, sizeof(msg))) {
			fprintf(stderr, "Couldn't send local address\n");
			return 1;
		}
		if (positive && counter) {
			long long c0 = read_counter(counter), c = c0;
			double t0 = now_s();

			while (c0 >= 0 && c == c0 && now_s() - t0 < POLL_LIMIT_S) {
				usleep(1000);
				c = read_counter(counter);
			}
			if (c0 < 0 || c <= c0) {
				printf("server: %s did not grow in %d s (%lld -> %lld): no RNR NAK sent\n",
				       counter, POLL_LIMIT_S, c0, c);
				positive = -1;
			} else {
				printf("server: RNR NAK counted after %.3f s (%s: %lld -> %lld)\n",
				       now_s() - t0, counter, c0, c);
			}
		} else if (positive) {
			usleep(wait_ms * 1000);
		}
		if (positive > 0) {
			if (ibv_post_recv(qp, &rwr, &bad)) {
				perror("ibv_post_recv");
				return 1;
			}
			printf("server: receive of %u bytes posted after %u ms\n", size, wait_ms);
			n = poll_one(cq, &wc, POLL_LIMIT_S);
			if (n <= 0) {
				printf("server: no receive completion in %d s\n", POLL_LIMIT_S);
			} else {
				size_t bad_at = size;

				for (size_t i = 0; i < size; i++)
					if (buf[i] != pattern(i)) {
						bad_at = i;
						break;
					}
				printf("server: receive completion: %s (%d), opcode %d, byte_len %u, qp_num 0x%06x\n",
				       ibv_wc_status_str(wc.status), wc.status, wc.opcode, wc.byte_len,
				       wc.qp_num);
				if (bad_at < size)
					printf("server: data differs at byte %zu: 0x%02x, expected 0x%02x\n",
					       bad_at, buf[bad_at], pattern(bad_at));
				ok = wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
				     wc.byte_len == size && wc.wr_id == 2 && bad_at == size &&
				     wc.qp_num == me.qpn;
				if (ok)
					printf("server: %u bytes received, data correct\n", size);
			}
		}
		/* The client's word once its SEND completed (it polls for 30 s at most). */
		n = read(sock, done, sizeof(done) - 1);
		if (n <= 0) {
			printf("server: no word from the client\n");
			ok = 0;
		} else {
			done[n] = 0;
			printf("server: client says: %s\n", done);
		}
		if (!positive) {
			/* No receive WQE, so nothing may have completed. */
			n = ibv_poll_cq(cq, 1, &wc);
			if (n)
				printf("server: unexpected completion: %s (%d), opcode %d\n",
				       n > 0 ? ibv_wc_status_str(wc.status) : "poll error",
				       n > 0 ? (int)wc.status : n, n > 0 ? (int)wc.opcode : -1);
			else
				printf("server: no completion, as expected\n");
			ok = n == 0 && done[0];
		}
	} else {
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = size, .lkey = mr->lkey };
		struct ibv_send_wr swr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
					   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
		struct ibv_send_wr *bad;
		enum ibv_wc_status want = positive ? IBV_WC_SUCCESS : IBV_WC_RNR_RETRY_EXC_ERR;
		char done[64];
		double t0;

		for (size_t i = 0; i < size; i++)
			buf[i] = pattern(i);
		printf("client: RTS, rnr_retry %d: SEND of %u bytes\n", rnr_retry, size);
		t0 = now_s();
		if (ibv_post_send(qp, &swr, &bad)) {
			perror("ibv_post_send");
			return 1;
		}
		n = poll_one(cq, &wc, POLL_LIMIT_S);
		if (n <= 0) {
			printf("client: no send completion in %d s\n", POLL_LIMIT_S);
			snprintf(done, sizeof(done), "done none");
		} else {
			printf("client: send completion after %.3f s: %s (%d), opcode %d, vendor_err 0x%x\n",
			       now_s() - t0, ibv_wc_status_str(wc.status), wc.status, wc.opcode,
			       wc.vendor_err);
			ok = wc.status == want && wc.wr_id == 1 &&
			     (wc.status != IBV_WC_SUCCESS || wc.opcode == IBV_WC_SEND);
			if (!ok)
				printf("client: expected %s\n", ibv_wc_status_str(want));
			snprintf(done, sizeof(done), "done %s", ibv_wc_status_str(wc.status));
		}
		if (write_full(sock, done, strlen(done)))
			fprintf(stderr, "Couldn't tell the server\n");
	}
	close(sock);
	if (hold_s) {
		printf("%s: holding QP 0x%06x for %u s\n", is_server ? "server" : "client", me.qpn,
		       hold_s);
		fflush(stdout);
		sleep(hold_s);
	}

	if (ibv_destroy_qp(qp) || ibv_destroy_cq(cq) || ibv_dereg_mr(mr) || ibv_dealloc_pd(pd) ||
	    ibv_close_device(ctx)) {
		perror("destroy");
		ok = 0;
	}
	free(buf);
	printf("%s: %s\n", is_server ? "server" : "client", ok ? "PASS" : "FAIL");
	return ok ? 0 : 1;
}
