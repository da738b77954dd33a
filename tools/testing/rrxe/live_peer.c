// SPDX-License-Identifier: GPL-2.0
/*
 * live_peer: the hostile side of the live-QP wire test (guest b, no RDMA driver). It gets
 * the QP numbers, first PSNs, rkey and region address of live_target's RC QPs (guest a,
 * rrxe) over TCP, and aims hand-made RoCEv2 packets at them through a raw IP_HDRINCL socket:
 * real QPN, expected PSN, real rkey and VA, correct ICRC. Every reply comes back to UDP port
 * 4791 of this host: a UDP socket bound there keeps the port open (no ICMP port
 * unreachable), and a raw IPPROTO_UDP socket reads each reply with its IP header, so that
 * its ICRC is checked too. Every packet sent and every reply is printed.
 *
 * One target QP per phase (live_test.h), so that a NAK that ends a QP ends only its phase:
 *   a  WRITE ONLY (AckReq) of 64 bytes               -> ACK with its PSN
 *   b  READ REQUEST of 256 bytes                     -> READ RESPONSE ONLY, its PSN, the bytes
 *   c  a again (same PSN, other bytes)               -> ACK again (C9-105), nothing executed
 *   d  a WRITE 1000 PSNs ahead                       -> NAK PSN sequence error with the
 *                                                      expected PSN; a second one -> nothing
 *                                                      (one NAK per sequence error); then a
 *                                                      WRITE at the expected PSN -> ACK
 *   e  WRITE with a wrong rkey                       -> NAK remote access error; QP in ERR:
 *                                                      a valid WRITE after it -> nothing
 *   f  WRITE running past the end of the region      -> NAK remote access error
 *   g  READ of 2^31-1 bytes                          -> NAK remote access error, and not one
 *                                                      response
 *   i  aligned FETCH_ADD                             -> ATOMIC ACK with the original value;
 *      FETCH_ADD at VA % 8 == 4                      -> NAK invalid request (C9-120; as
 *                                                      rdma_rxe: RESPST_ERR_MISALIGNED_ATOMIC)
 *   j  UD SEND ONLY (0x64) to the RC QP              -> dropped (or NAK invalid request);
 *                                                      then a WRITE at the same PSN -> ACK
 *                                                      (or nothing if the QP was ended)
 *   k  FLUSH (global visibility, range) of 4 KiB     -> empty READ RESPONSE ONLY with its
 *                                                      PSN (as rdma_rxe answers it);
 *      the same FLUSH again (duplicate)              -> the same answer again;
 *      FLUSH for persistence (not granted)           -> NAK invalid request (oA19-10)
 *   h  READ of the whole 64 KiB region at MTU 1024   -> 64 responses FIRST, MIDDLE x 62,
 *      (last, so that it reads what a-j left)         LAST with consecutive PSNs (crossing
 *                                                      0xffffff -> 0) and the bytes
 * and at the end: no reply the phases did not ask for, every reply's ICRC valid.
 *
 * Usage: live_peer SRC_IPV4 TARGET_IPV4 TCP_PORT
 * Exit status 0 only if every check passed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "rrxe_test.h"
#include "roce_pkt.h"
#include "live_test.h"

#define REPLY_WAIT	3.0	/* seconds for an expected reply (the guests are slow) */
#define SILENCE		1.5	/* seconds of silence that say "dropped" */
#define READ_DEADLINE	15.0	/* seconds for the 64 responses of h */
#define CONNECT_SECS	120

static struct {
	int tx, rx, udp, tcp;
	uint32_t src, dst;		/* network byte order */
	char src_s[INET_ADDRSTRLEN], dst_s[INET_ADDRSTRLEN];
	uint16_t ip_id;
	uint32_t tqpn[LIVE_NQP], tpsn[LIVE_NQP];
	uint32_t rkey, mr_len, mtu;
	uint64_t va;
	double t0;
	int sent, send_errors, replies, bad_replies, unexpected, udp_copies;
} G = { .tx = -1, .rx = -1, .udp = -1, .tcp = -1, .ip_id = 0x4000 };

static double t_rel(void)
{
	return now_s() - G.t0;
}

static const char *op_name(uint8_t op)
{
	switch (op) {
	case OP_RC_SEND_ONLY: return "RC_SEND_ONLY";
	case OP_RC_WRITE_ONLY: return "RC_WRITE_ONLY";
	case OP_RC_READ_REQUEST: return "RC_READ_REQUEST";
	case OP_RC_READ_RESP_FIRST: return "RC_READ_RESPONSE_FIRST";
	case OP_RC_READ_RESP_MIDDLE: return "RC_READ_RESPONSE_MIDDLE";
	case OP_RC_READ_RESP_LAST: return "RC_READ_RESPONSE_LAST";
	case OP_RC_READ_RESP_ONLY: return "RC_READ_RESPONSE_ONLY";
	case OP_RC_ACK: return "RC_ACKNOWLEDGE";
	case OP_RC_ATOMIC_ACK: return "RC_ATOMIC_ACKNOWLEDGE";
	case OP_RC_CMP_SWAP: return "RC_COMPARE_SWAP";
	case OP_RC_FETCH_ADD: return "RC_FETCH_ADD";
	case OP_RC_FLUSH: return "RC_FLUSH";
	case OP_UD_SEND_ONLY: return "UD_SEND_ONLY";
	default: return "?";
	}
}

/* "ACK", "RNR NAK", "NAK PSN sequence error", ... for an AETH syndrome. */
static const char *syn_name(uint8_t s)
{
	static char buf[48];

	switch (AETH_KIND(s)) {
	case AETH_KIND_ACK:
		snprintf(buf, sizeof(buf), "ACK, credits %u", s & 0x1f);
		return buf;
	case AETH_KIND_RNR_NAK:
		snprintf(buf, sizeof(buf), "RNR NAK, timer %u", s & 0x1f);
		return buf;
	case AETH_KIND_NAK:
		switch (s) {
		case AETH_NAK_PSN_SEQ: return "NAK PSN sequence error";
		case AETH_NAK_INV_REQ: return "NAK invalid request";
		case AETH_NAK_REM_ACCESS: return "NAK remote access error";
		case AETH_NAK_REM_OP: return "NAK remote operational error";
		}
		snprintf(buf, sizeof(buf), "NAK code %u", s & 0x1f);
		return buf;
	}
	return "reserved syndrome";
}

static int qp_of(uint32_t peer_qpn)
{
	uint32_t i = peer_qpn - LIVE_PEER_QPN;

	return i < LIVE_NQP ? (int)i : -1;
}

/* ---- sending ------------------------------------------------------------------------ */

/* Sends a request to target QP @qp: BTH (@opcode, @psn, AckReq) + @body; prints it. */
static void send_pkt(int qp, uint8_t opcode, uint32_t psn, const uint8_t *body,
		     size_t body_len, const char *what)
{
	struct roce_bth bth = { .opcode = opcode, .qpn = G.tqpn[qp], .ackreq = 1, .psn = psn };
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = G.dst };
	static uint8_t p[2048];
	size_t n;

	n = roce_build(p, G.src, G.dst, 0xc000 + qp, G.ip_id++, &bth, body, body_len);
	printf("-> [%7.3f] %-15s qpn 0x%06x %-16s psn 0x%06x %4zu bytes: %s\n", t_rel(),
	       live_qp_name[qp], G.tqpn[qp], op_name(opcode), psn, n, what);
	if (sendto(G.tx, p, n, 0, (struct sockaddr *)&to, sizeof(to)) != (ssize_t)n) {
		printf("   sendto: %s\n", strerror(errno));
		G.send_errors++;
		return;
	}
	G.sent++;
}

static void send_write(int qp, uint32_t psn, uint32_t off, uint32_t rkey, uint8_t tag,
		       uint32_t len, const char *what)
{
	uint8_t body[ROCE_RETH_LEN + 256];
	char line[160];
	size_t n = roce_reth(body, G.va + off, rkey, len);

	live_fill(body + n, tag, len);
	snprintf(line, sizeof(line), "va +0x%x rkey 0x%x len %u tag 0x%02x; %s", off, rkey,
		 len, tag, what);
	send_pkt(qp, OP_RC_WRITE_ONLY, psn, body, n + len, line);
}

static void send_read(int qp, uint32_t psn, uint32_t off, uint32_t len, const char *what)
{
	uint8_t body[ROCE_RETH_LEN];
	char line[160];

	roce_reth(body, G.va + off, G.rkey, len);
	snprintf(line, sizeof(line), "va +0x%x rkey 0x%x len %u; %s", off, G.rkey, len, what);
	send_pkt(qp, OP_RC_READ_REQUEST, psn, body, sizeof(body), line);
}

static void send_fetch_add(int qp, uint32_t psn, uint32_t off, uint64_t add, const char *what)
{
	uint8_t body[ROCE_ATOMIC_ETH_LEN];
	char line[160];

	roce_atomic_eth(body, G.va + off, G.rkey, add, 0);
	snprintf(line, sizeof(line), "va +0x%x rkey 0x%x add 0x%" PRIx64 "; %s", off, G.rkey,
		 add, what);
	send_pkt(qp, OP_RC_FETCH_ADD, psn, body, sizeof(body), line);
}

/* ---- receiving ---------------------------------------------------------------------- */

struct reply {
	uint8_t buf[2048];
	struct roce_rx rx;
	int qp;				/* phase of the BTH destination QPN, -1 if none */
	int has_aeth;
	uint8_t syn;
	uint32_t msn;
	int has_orig;
	uint64_t orig;
	const uint8_t *payload;
	size_t payload_len;
	int ok;				/* well-formed, ICRC valid */
};

/* Splits the body of a reply by its opcode; prints it. */
static void decode(struct reply *r)
{
	const uint8_t *b = r->rx.body;
	size_t n = r->rx.body_len, need = 0;
	uint8_t op = r->rx.bth.opcode;

	r->syn = 0;
	r->msn = 0;
	r->orig = 0;
	r->payload = b;
	r->payload_len = 0;
	r->qp = qp_of(r->rx.bth.qpn);
	r->has_aeth = op == OP_RC_ACK || op == OP_RC_ATOMIC_ACK || op == OP_RC_READ_RESP_FIRST ||
		      op == OP_RC_READ_RESP_LAST || op == OP_RC_READ_RESP_ONLY;
	r->has_orig = op == OP_RC_ATOMIC_ACK;
	need = (r->has_aeth ? ROCE_AETH_LEN : 0) + (r->has_orig ? ROCE_ATOMIC_ACK_ETH_LEN : 0);
	r->ok = r->rx.icrc_got == r->rx.icrc_want && n >= need + r->rx.bth.pad &&
		r->rx.bth.tver == 0 && n % 4 == 0;
	if (n >= need) {
		if (r->has_aeth) {
			r->syn = b[0];
			r->msn = get_be24(b + 1);
		}
		if (r->has_orig)
			r->orig = get_be64(b + ROCE_AETH_LEN);
		r->payload = b + need;
		r->payload_len = n - need >= r->rx.bth.pad ? n - need - r->rx.bth.pad : 0;
	}
	if ((op == OP_RC_ACK || op == OP_RC_ATOMIC_ACK) && r->payload_len)
		r->ok = 0;
	printf("<- [%7.3f] %-15s qpn 0x%06x %-23s psn 0x%06x", t_rel(),
	       r->qp >= 0 ? live_qp_name[r->qp] : "?", r->rx.bth.qpn, op_name(op), r->rx.bth.psn);
	if (r->has_aeth)
		printf(" syndrome 0x%02x (%s) msn %u", r->syn, syn_name(r->syn), r->msn);
	if (r->has_orig)
		printf(" orig 0x%016" PRIx64, r->orig);
	if (r->payload_len)
		printf(" payload %zu", r->payload_len);
	printf(" sport %u ip_id 0x%04x", r->rx.sport, r->rx.ip_id);
	if (r->rx.icrc_got != r->rx.icrc_want)
		printf(" BAD ICRC 0x%08x, expected 0x%08x", r->rx.icrc_got, r->rx.icrc_want);
	if (!r->ok)
		printf(" MALFORMED/INVALID");
	printf("\n");
}

/* Empties the bound UDP socket (its copies are only counted). */
static void drain_udp(void)
{
	uint8_t b[2048];

	while (recv(G.udp, b, sizeof(b), MSG_DONTWAIT) > 0)
		G.udp_copies++;
}

/*
 * Waits until @deadline (now_s() time) for the next RoCE reply from the target addressed to
 * the peer QP of phase @qp (-1: any). Every reply that arrives is printed; one for another
 * phase counts as unexpected. Returns 1 with @r filled, 0 at the deadline.
 */
static int next_reply(int qp, double deadline, struct reply *r)
{
	for (;;) {
		struct pollfd pfd[2] = { { .fd = G.rx, .events = POLLIN },
					 { .fd = G.udp, .events = POLLIN } };
		double left = deadline - now_s();
		ssize_t n;

		if (left <= 0)
			return 0;
		if (poll(pfd, 2, (int)(left * 1000) + 1) < 0 && errno != EINTR) {
			perror("poll");
			return 0;
		}
		if (pfd[1].revents)
			drain_udp();
		if (!(pfd[0].revents & POLLIN))
			continue;
		n = recv(G.rx, r->buf, sizeof(r->buf), MSG_DONTWAIT);
		if (n <= 0)
			continue;
		if (roce_parse(r->buf, n, &r->rx) != 0 || r->rx.src != G.dst)
			continue;	/* other UDP traffic */
		G.replies++;
		decode(r);
		if (!r->ok)
			G.bad_replies++;
		if (qp < 0 || r->qp == qp)
			return 1;
		printf("   (unexpected now: waiting for a reply to %s)\n", live_qp_name[qp]);
		G.unexpected++;
	}
}

/* Returns the number of replies to phase @qp in the next @secs seconds (each printed). */
static int replies_within(int qp, double secs)
{
	double end = now_s() + secs;
	struct reply r;
	int n = 0;

	while (next_reply(qp, end, &r))
		n++;
	return n;
}

/*
 * Waits for the reply to phase @qp and checks that it is an @opcode with AETH syndrome
 * @syn (-1: any ACK syndrome, 0x00-0x1f) and a PSN from @lo to @hi. Prints check @name.
 * Returns 1 if a reply arrived (in @r), whatever it was.
 */
static int expect_ack(const char *name, int qp, uint8_t opcode, int syn, uint32_t lo,
		      uint32_t hi, struct reply *r)
{
	char want[96];
	int got, ok;

	snprintf(want, sizeof(want), "%s, %s, psn 0x%06x", op_name(opcode),
		 syn < 0 ? "ACK" : syn_name(syn), lo);
	if (hi != lo)
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "..0x%06x", hi);
	got = next_reply(qp, now_s() + REPLY_WAIT, r);
	if (!got) {
		checkf(name, 0, "no reply in %.0f s, expected %s", REPLY_WAIT, want);
		return 0;
	}
	ok = r->ok && r->rx.bth.opcode == opcode && r->has_aeth &&
	     (syn < 0 ? AETH_KIND(r->syn) == AETH_KIND_ACK : r->syn == syn) &&
	     psn_diff(r->rx.bth.psn, lo) >= 0 && psn_diff(hi, r->rx.bth.psn) >= 0;
	checkf(name, ok, "got %s psn 0x%06x syndrome 0x%02x (%s)%s, expected %s",
	       op_name(r->rx.bth.opcode), r->rx.bth.psn, r->syn,
	       r->has_aeth ? syn_name(r->syn) : "no AETH", r->ok ? "" : " (malformed/bad ICRC)",
	       want);
	return 1;
}

/* Checks that phase @qp gets no reply for @secs seconds (check @name). */
static void expect_silence(const char *name, int qp, double secs, const char *why)
{
	int n = replies_within(qp, secs);

	checkf(name, n == 0, "%d replies in %.1f s, expected none (%s)", n, secs, why);
}

/* ---- TCP ---------------------------------------------------------------------------- */

/* Connects to the target, retrying while it is not listening yet (guest a boots). */
static int tcp_connect(const char *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = G.dst,
				  .sin_port = htons(atoi(port)) };
	double end = now_s() + CONNECT_SECS;
	struct timeval tv = { .tv_sec = 60 };

	for (;;) {
		int s = socket(AF_INET, SOCK_STREAM, 0);

		if (s < 0)
			return -1;
		if (!connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
			setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			return s;
		}
		close(s);
		if (now_s() > end) {
			fprintf(stderr, "Couldn't connect to %s:%s\n", G.dst_s, port);
			return -1;
		}
		usleep(200000);
	}
}

/* Opens the three sockets and gets the target's details; prints check peer_setup. */
static int setup(const char *port)
{
	int one = 1, big = 4 << 20;
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = htons(ROCE_PORT) };
	char line[256];
	unsigned long long va;
	unsigned int nqp, len, mtu, rkey;

	G.tx = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (G.tx < 0 || setsockopt(G.tx, IPPROTO_IP, IP_HDRINCL, &one, sizeof(one))) {
		check("peer_setup", 0, "raw IPPROTO_RAW socket with IP_HDRINCL");
		return -1;
	}
	G.rx = socket(AF_INET, SOCK_RAW, IPPROTO_UDP);
	if (G.rx < 0) {
		check("peer_setup", 0, "raw IPPROTO_UDP socket");
		return -1;
	}
	if (setsockopt(G.rx, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)))
		setsockopt(G.rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	G.udp = socket(AF_INET, SOCK_DGRAM, 0);
	if (G.udp < 0 || bind(G.udp, (struct sockaddr *)&any, sizeof(any))) {
		check("peer_setup", 0, "UDP socket bound to port 4791 (is an RDMA driver loaded here?)");
		return -1;
	}
	G.tcp = tcp_connect(port);
	if (G.tcp < 0) {
		check("peer_setup", 0, "cannot connect to live_target");
		return -1;
	}
	if (tcp_line(G.tcp, line, sizeof(line)) ||
	    sscanf(line, "TARGET nqp=%u rkey=0x%x va=0x%llx len=%u mtu=%u", &nqp, &rkey, &va,
		   &len, &mtu) != 5 || nqp != LIVE_NQP || len != LIVE_MR_LEN || mtu != LIVE_MTU) {
		checkf("peer_setup", 0, "bad TARGET line from live_target: '%s'", line);
		return -1;
	}
	G.rkey = rkey;
	G.va = va;
	G.mr_len = len;
	G.mtu = mtu;
	for (int i = 0; i < LIVE_NQP; i++) {
		unsigned int idx, qpn, psn;

		if (tcp_line(G.tcp, line, sizeof(line)) ||
		    sscanf(line, "QP %u qpn=0x%x psn=0x%x", &idx, &qpn, &psn) != 3 ||
		    idx != (unsigned int)i) {
			checkf("peer_setup", 0, "bad QP line from live_target: '%s'", line);
			return -1;
		}
		G.tqpn[i] = qpn;
		G.tpsn[i] = psn & PSN_MASK;
	}
	if (tcp_say(G.tcp, "PEER ip=%s", G.src_s))
		goto lost;
	for (int i = 0; i < LIVE_NQP; i++)
		if (tcp_say(G.tcp, "QP %d qpn=0x%x psn=0x%x", i, LIVE_PEER_QPN + i, 0x100000 + i))
			goto lost;
	if (tcp_line(G.tcp, line, sizeof(line)))
		goto lost;
	if (strcmp(line, "READY")) {
		checkf("peer_setup", 0, "live_target is not ready: '%s'", line);
		return -1;
	}
	check("peer_setup", 1, "");
	return 0;
lost:
	check("peer_setup", 0, "connection to live_target lost");
	return -1;
}

/* ---- the phases --------------------------------------------------------------------- */

/* a-d on QP_SEQ, whose first PSN is 0xfffffe: the PSNs wrap after b. */
static void phases_seq(void)
{
	const int q = QP_SEQ;
	uint32_t p = G.tpsn[q], ahead;
	uint8_t want[LEN_READ_B];
	struct reply r;

	printf("== a: RDMA WRITE ONLY of %u bytes at the expected PSN -> ACK\n", LEN_WRITE_A);
	send_write(q, p, OFF_WRITE_A, G.rkey, TAG_A, LEN_WRITE_A, "valid");
	expect_ack("write_acked", q, OP_RC_ACK, -1, p, p, &r);

	printf("== b: RDMA READ REQUEST of %u bytes -> READ RESPONSE ONLY with the bytes\n",
	       LEN_READ_B);
	send_read(q, psn_add(p, 1), OFF_READ_B, LEN_READ_B, "valid");
	if (!next_reply(q, now_s() + REPLY_WAIT, &r)) {
		checkf("read_response_only", 0, "no reply in %.0f s", REPLY_WAIT);
		checkf("read_response_data", 0, "no response");
	} else {
		int hdr_ok = r.ok && r.rx.bth.opcode == OP_RC_READ_RESP_ONLY &&
			     r.rx.bth.psn == psn_add(p, 1) && r.has_aeth &&
			     AETH_KIND(r.syn) == AETH_KIND_ACK && r.payload_len == LEN_READ_B;

		checkf("read_response_only", hdr_ok,
		       "got %s psn 0x%06x syndrome 0x%02x payload %zu, expected %s psn 0x%06x (ACK) payload %u",
		       op_name(r.rx.bth.opcode), r.rx.bth.psn, r.syn, r.payload_len,
		       op_name(OP_RC_READ_RESP_ONLY), psn_add(p, 1), LEN_READ_B);
		for (uint32_t i = 0; i < LEN_READ_B; i++)
			want[i] = live_pattern(OFF_READ_B + i);
		if (r.payload_len == LEN_READ_B && !memcmp(r.payload, want, LEN_READ_B)) {
			check("read_response_data", 1, "");
		} else {
			uint32_t i = 0;

			while (i < r.payload_len && i < LEN_READ_B && r.payload[i] == want[i])
				i++;
			checkf("read_response_data", 0,
			       "%zu bytes, first difference at byte %u (0x%02x, expected 0x%02x)",
			       r.payload_len, i, i < r.payload_len ? r.payload[i] : 0,
			       i < LEN_READ_B ? want[i] : 0);
		}
	}

	/*
	 * C9-105: a duplicate WRITE is acknowledged again, not executed. The ACK's PSN is the
	 * duplicate's own or that of the last request executed (b's: rrxe), or between.
	 */
	printf("== c: a's WRITE again (duplicate PSN 0x%06x, other bytes) -> ACK again, not executed\n",
	       p);
	send_write(q, p, OFF_WRITE_A, G.rkey, TAG_C, LEN_WRITE_A, "duplicate of a");
	expect_ack("dup_write_acked", q, OP_RC_ACK, -1, p, psn_add(p, 1), &r);

	/* Expected now: p + 2 (0x000000 for p = 0xfffffe). */
	ahead = psn_add(p, 2 + 1000);
	printf("== d: WRITE at PSN 0x%06x, 1000 ahead of the expected 0x%06x -> NAK PSN sequence error\n",
	       ahead, psn_add(p, 2));
	send_write(q, ahead, OFF_AHEAD_D, G.rkey, TAG_BAD, 32, "out of sequence");
	expect_ack("psn_ahead_nak_seq_err", q, OP_RC_ACK, AETH_NAK_PSN_SEQ, psn_add(p, 2),
		   psn_add(p, 2), &r);
	send_write(q, psn_add(ahead, 1), OFF_AHEAD_D, G.rkey, TAG_BAD, 32,
		   "out of sequence again");
	expect_silence("psn_ahead_nak_once", q, SILENCE,
		       "one NAK per sequence error until the expected PSN arrives");
	send_write(q, psn_add(p, 2), OFF_WRITE_D, G.rkey, TAG_D, LEN_WRITE_D,
		   "at the expected PSN: the QP goes on");
	expect_ack("psn_recovered_write_acked", q, OP_RC_ACK, -1, psn_add(p, 2), psn_add(p, 2), &r);
}

static void phase_bad_rkey(void)
{
	const int q = QP_BAD_RKEY;
	uint32_t p = G.tpsn[q], bad = G.rkey ^ 0x00ffff00;
	struct reply r;

	printf("== e: WRITE with rkey 0x%x instead of 0x%x -> NAK remote access error, QP in ERR\n",
	       bad, G.rkey);
	send_write(q, p, OFF_BAD_RKEY, bad, TAG_BAD, 64, "wrong rkey");
	expect_ack("bad_rkey_nak_rem_access", q, OP_RC_ACK, AETH_NAK_REM_ACCESS, p, p, &r);
	send_write(q, psn_add(p, 1), OFF_ERR_QP, G.rkey, TAG_BAD, 64,
		   "valid, to the QP now in ERR");
	expect_silence("err_qp_ignores_write", q, SILENCE, "a QP in ERR drops what it receives");
}

static void phase_past_mr(void)
{
	const int q = QP_PAST_MR;
	uint32_t p = G.tpsn[q];
	struct reply r;

	printf("== f: WRITE of 64 bytes at the last 32 bytes of the region -> NAK remote access error\n");
	send_write(q, p, LIVE_MR_LEN - 32, G.rkey, TAG_BAD, 64, "runs 32 bytes past the end");
	expect_ack("write_past_mr_nak_rem_access", q, OP_RC_ACK, AETH_NAK_REM_ACCESS, p, p, &r);
}

static void phase_huge_read(void)
{
	const int q = QP_HUGE_READ;
	uint32_t p = G.tpsn[q];
	struct reply r;
	int n;

	printf("== g: READ of 2^31-1 bytes from a 64 KiB region -> NAK remote access error, no response\n");
	send_read(q, p, 0, 0x7fffffff, "length past the region");
	expect_ack("huge_read_nak_rem_access", q, OP_RC_ACK, AETH_NAK_REM_ACCESS, p, p, &r);
	n = replies_within(q, 2 * SILENCE);
	checkf("huge_read_no_responses", n == 0, "%d more replies in %.1f s after the first", n,
	       2 * SILENCE);
}

static void phase_atomic(void)
{
	const int q = QP_ATOMIC;
	uint32_t p = G.tpsn[q];
	uint8_t qw[8];
	uint64_t orig;
	struct reply r;

	for (int i = 0; i < 8; i++)
		qw[i] = live_pattern(OFF_ATOMIC + i);
	orig = live_le64(qw);
	printf("== i: FETCH_ADD at an aligned VA -> ATOMIC ACK with the original 0x%016" PRIx64 "\n",
	       orig);
	send_fetch_add(q, p, OFF_ATOMIC, LIVE_ADD, "aligned");
	if (expect_ack("fetch_add_atomic_ack", q, OP_RC_ATOMIC_ACK, -1, p, p, &r))
		checkf("fetch_add_orig_value", r.has_orig && r.orig == orig,
		       "orig 0x%016" PRIx64 ", expected 0x%016" PRIx64, r.orig, orig);
	else
		checkf("fetch_add_orig_value", 0, "no ATOMIC ACK");

	/* C9-120 (o9-37): misaligned atomics are an invalid request; rdma_rxe's atomic_reply()
	 * returns RESPST_ERR_MISALIGNED_ATOMIC -> AETH_NAK_INVALID_REQ, class C (QP to ERR). */
	printf("== i: FETCH_ADD at VA %% 8 == 4 -> NAK invalid request, QP in ERR\n");
	send_fetch_add(q, psn_add(p, 1), OFF_MISALIGNED, LIVE_ADD, "misaligned");
	expect_ack("misaligned_atomic_nak_inv_req", q, OP_RC_ACK, AETH_NAK_INV_REQ,
		   psn_add(p, 1), psn_add(p, 1), &r);
}

/* Sends a FLUSH of placement type @type, selectivity level @level (FETH), over LEN_FLUSH
 * bytes at OFF_FLUSH (RETH). */
static void send_flush(int qp, uint32_t psn, uint8_t type, uint8_t level, const char *what)
{
	uint8_t body[4 + ROCE_RETH_LEN] = { 0, 0, 0, (uint8_t)(type | level << 4) };
	char line[160];

	roce_reth(body + 4, G.va + OFF_FLUSH, G.rkey, LEN_FLUSH);
	snprintf(line, sizeof(line), "type %u level %u va +0x%x len %u; %s", type, level,
		 OFF_FLUSH, LEN_FLUSH, what);
	send_pkt(qp, OP_RC_FLUSH, psn, body, sizeof(body), line);
}

static void phase_flush(void)
{
	const int q = QP_FLUSH;
	uint32_t p = G.tpsn[q];
	struct reply r;

	printf("== k: FLUSH (global, range) -> empty READ RESPONSE ONLY with its PSN\n");
	send_flush(q, p, 1, 0, "global visibility, granted");
	if (expect_ack("flush_global_acked", q, OP_RC_READ_RESP_ONLY, -1, p, p, &r))
		checkf("flush_ack_empty", r.payload_len == 0, "%zu payload bytes", r.payload_len);
	else
		checkf("flush_ack_empty", 0, "no answer");
	printf("== k: the same FLUSH again -> answered again\n");
	send_flush(q, p, 1, 0, "duplicate");
	expect_ack("flush_duplicate_reanswered", q, OP_RC_READ_RESP_ONLY, -1, p, p, &r);
	printf("== k: FLUSH for persistence, not granted -> NAK invalid request, QP in ERR\n");
	send_flush(q, psn_add(p, 1), 2, 0, "persistence, not granted");
	expect_ack("flush_persistent_nak_inv_req", q, OP_RC_ACK, AETH_NAK_INV_REQ, psn_add(p, 1),
		   psn_add(p, 1), &r);
}

/* Returns "dropped", "nak" or "other": what the RC QP did with a UD opcode. */
static const char *phase_wrong_transport(void)
{
	const int q = QP_WRONG_TRANSPORT;
	uint32_t p = G.tpsn[q];
	uint8_t body[ROCE_DETH_LEN + 64];
	const char *outcome;
	struct reply r;
	size_t n;

	printf("== j: UD SEND ONLY (0x64) to the RC QP -> dropped (or NAK invalid request)\n");
	n = roce_deth(body, 0x11111111, LIVE_PEER_QPN + q);
	live_fill(body + n, TAG_BAD, 64);
	send_pkt(q, OP_UD_SEND_ONLY, p, body, n + 64, "qkey 0x11111111, 64 bytes: UD opcode");
	if (!next_reply(q, now_s() + SILENCE, &r)) {
		outcome = "dropped";
		check("wrong_transport_opcode_refused", 1, "");
	} else if (r.ok && r.rx.bth.opcode == OP_RC_ACK && r.syn == AETH_NAK_INV_REQ &&
		   r.rx.bth.psn == p) {
		outcome = "nak";
		check("wrong_transport_opcode_refused", 1, "");
	} else {
		outcome = "other";
		checkf("wrong_transport_opcode_refused", 0,
		       "got %s psn 0x%06x syndrome 0x%02x, expected nothing or a NAK invalid request",
		       op_name(r.rx.bth.opcode), r.rx.bth.psn, r.syn);
		replies_within(q, SILENCE);
	}
	printf("   the RC QP %s the UD opcode\n",
	       !strcmp(outcome, "dropped") ? "dropped" :
	       !strcmp(outcome, "nak") ? "NAKed (invalid request)" : "did something else with");
	send_write(q, p, OFF_WRITE_J, G.rkey, TAG_J, LEN_WRITE_J, "valid, same PSN");
	if (!strcmp(outcome, "nak"))
		expect_silence("wrong_transport_then_write", q, SILENCE,
			       "the NAK ended the QP: a QP in ERR drops what it receives");
	else
		expect_ack("wrong_transport_then_write", q, OP_RC_ACK, -1, p, p, &r);
	return outcome;
}

/* h: the whole region, 64 responses crossing the PSN wrap; compared with @expected. */
static void phase_read_64k(const uint8_t *expected)
{
	const int q = QP_READ_64K;
	const uint32_t npkt = LIVE_MR_LEN / LIVE_MTU;
	uint32_t p = G.tpsn[q], got = 0, bad_data = 0, first_bad = 0;
	double start = now_s(), end = start + READ_DEADLINE, took = 0;
	char why[256] = "";
	struct reply r;
	int32_t idx;
	int extra;

	printf("== h: READ of the whole %u-byte region at MTU %u -> %u responses, PSN 0x%06x..0x%06x\n",
	       LIVE_MR_LEN, LIVE_MTU, npkt, p, psn_add(p, npkt - 1));
	send_read(q, p, 0, LIVE_MR_LEN, "valid, whole region");
	while (got < npkt && next_reply(q, end, &r)) {
		uint8_t op = got == 0 ? OP_RC_READ_RESP_FIRST :
			     got == npkt - 1 ? OP_RC_READ_RESP_LAST : OP_RC_READ_RESP_MIDDLE;
		int aeth = op != OP_RC_READ_RESP_MIDDLE;

		if (!*why && (!r.ok || r.rx.bth.opcode != op || r.rx.bth.psn != psn_add(p, got) ||
			      r.payload_len != LIVE_MTU || r.has_aeth != aeth ||
			      (aeth && AETH_KIND(r.syn) != AETH_KIND_ACK)))
			snprintf(why, sizeof(why),
				 "response %u: %s psn 0x%06x payload %zu syndrome 0x%02x, expected %s psn 0x%06x payload %u%s",
				 got, op_name(r.rx.bth.opcode), r.rx.bth.psn, r.payload_len,
				 r.syn, op_name(op), psn_add(p, got), LIVE_MTU,
				 r.ok ? "" : " (malformed/bad ICRC)");
		/* The bytes are compared where the response's PSN puts them. */
		idx = psn_diff(r.rx.bth.psn, p);
		if (idx < 0 || idx >= (int32_t)npkt || r.payload_len != LIVE_MTU ||
		    memcmp(r.payload, expected + idx * LIVE_MTU, LIVE_MTU)) {
			if (!bad_data++)
				first_bad = got;
		}
		got++;
		if (r.rx.bth.opcode != OP_RC_READ_RESP_FIRST &&
		    r.rx.bth.opcode != OP_RC_READ_RESP_MIDDLE &&
		    r.rx.bth.opcode != OP_RC_READ_RESP_LAST)
			break;		/* a NAK or anything else ends the READ */
	}
	took = now_s() - start;
	extra = replies_within(q, SILENCE);
	printf("   %u responses in %.3f s, %d more after them\n", got, took, extra);
	if (!*why && got < npkt)
		snprintf(why, sizeof(why), "%u of %u responses in %.0f s", got, npkt, READ_DEADLINE);
	if (!*why && extra)
		snprintf(why, sizeof(why), "%d replies after the last response", extra);
	checkf("read_64k_responses", !*why, "%s", why);
	if (got == npkt && !bad_data) {
		check("read_64k_data", 1, "");
	} else if (bad_data) {
		const uint8_t *w = expected + first_bad * LIVE_MTU;

		checkf("read_64k_data", 0,
		       "%u of %u responses differ from the region's expected bytes at their PSN's offset, the first: response %u (offset 0x%x if in order; want %02x %02x %02x %02x)",
		       bad_data, got, first_bad, first_bad * LIVE_MTU, w[0], w[1], w[2], w[3]);
	} else {
		checkf("read_64k_data", 0, "only %u of %u responses", got, npkt);
	}
}

int main(int argc, char **argv)
{
	static uint8_t expected[LIVE_MR_LEN];
	const char *wt;
	struct reply r;
	int late;

	if (argc != 4 || inet_pton(AF_INET, argv[1], &G.src) != 1 ||
	    inet_pton(AF_INET, argv[2], &G.dst) != 1) {
		fprintf(stderr, "usage: %s SRC_IPV4 TARGET_IPV4 TCP_PORT\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(G.src_s, sizeof(G.src_s), "%s", argv[1]);
	snprintf(G.dst_s, sizeof(G.dst_s), "%s", argv[2]);
	G.t0 = now_s();
	if (setup(argv[3]))
		return 1;
	printf("target region va 0x%" PRIx64 " rkey 0x%x len %u mtu %u\n", G.va, G.rkey,
	       G.mr_len, G.mtu);
	for (int i = 0; i < LIVE_NQP; i++)
		printf("target QP %-15s qpn 0x%06x first PSN 0x%06x; replies to our qpn 0x%06x\n",
		       live_qp_name[i], G.tqpn[i], G.tpsn[i], LIVE_PEER_QPN + i);

	phases_seq();
	phase_bad_rkey();
	phase_past_mr();
	phase_huge_read();
	phase_atomic();
	phase_flush();
	wt = phase_wrong_transport();
	live_expected(expected, !strcmp(wt, "dropped") || !strcmp(wt, "other"));
	phase_read_64k(expected);

	printf("== end: anything late?\n");
	late = 0;
	while (next_reply(-1, now_s() + SILENCE, &r))
		late++;
	drain_udp();
	printf("sent %d packets (%d send errors), %d replies (%d copies on the UDP socket), %d unexpected, %d late, %d malformed or with a bad ICRC\n",
	       G.sent, G.send_errors, G.replies, G.udp_copies, G.unexpected, late,
	       G.bad_replies);
	checkf("no_unexpected_replies", !G.unexpected && !late,
	       "%d replies arrived while another phase's were awaited, %d after the last phase",
	       G.unexpected, late);
	checkf("replies_well_formed", G.replies > 0 && !G.bad_replies,
	       "%d of %d replies malformed or with a bad ICRC", G.bad_replies, G.replies);
	if (tcp_say(G.tcp, "DONE sent=%d replies=%d wrong_transport=%s", G.sent, G.replies, wt)) {
		fprintf(stderr, "connection to live_target lost before DONE\n");
		failed = 1;
	}
	close(G.tcp);
	return failed ? 1 : 0;
}
