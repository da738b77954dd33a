// SPDX-License-Identifier: GPL-2.0
/*
 * roce_fuzz: a structure-aware RoCEv2 wire fuzzer. It sends COUNT hand-made packets through
 * a raw IPv4 socket (IP_HDRINCL) at live QPs of a receiver, every one a well-formed IPv4/UDP
 * datagram to port 4791 with a correct ICRC (roce_pkt.h), so that each one passes the ICRC
 * check and reaches the parser, the QP lookup and the QP's state machines:
 *
 *  - opcodes: every RC, UC and UD opcode of the IBA table (IBA 9.2, table 38, with the RC
 *    FLUSH and ATOMIC WRITE of IBA 1.5), RD and CNP, and reserved or undefined ones;
 *  - BTH: SE, MigReq, pad count 0..3, transport version mostly 0, P_Key mostly 0xffff
 *    (sometimes 0x7fff, 0 or random), AckReq, now and then reserved bits set; the QPN one of
 *    the targets (97%) or another one (never QP0 or QP1: the kernel's MAD layer is not
 *    the target); the PSN the target's expected PSN plus an offset: 0
 *    (-e, default 1 per mille), mostly within +-16 or +-256, sometimes up to +-4096 or
 *    anywhere in the 2^24 space;
 *  - the extended headers the opcode needs, in wire order: RDETH, DETH (random Q_Key, or
 *    xfer's, the GSI one, 0), FETH, RETH (VA near 0, random, near 2^64, in user space, or
 *    near a VA seen on the wire; an rkey: one given as is, one given with another key byte
 *    (right index, wrong key), random, 0 or ~0; DMA length 0, small, around the MTU,
 *    random, huge up to 2^32-1), AtomicETH (aligned or misaligned VA), AETH (ACK, RNR NAK,
 *    NAK codes, reserved syndromes; random MSN), AtomicAckETH, ImmDt, IETH, CNP padding;
 *  - payload: 0..MTU bytes, exactly the MTU, around it, longer than the MTU (oversized, up
 *    to the 1500-byte Ethernet frame), or a datagram of up to 8000 bytes sent as IPv4
 *    fragments (the receiver reassembles it); payload on opcodes that carry none;
 *  - 4% truncated: the extended headers cut short (the IP and UDP lengths agree with what
 *    is sent, and the ICRC is right for it), and a few runts shorter than BTH + ICRC.
 *
 * Every fuzz packet has IPv4 TOS FUZZ_TOS (the ICRC masks the TOS): it marks them apart
 * from the traffic of the RDMA stack on the same host.
 *
 * -f IFACE (follow): an AF_PACKET socket on IFACE watches the RoCE requests this host's own
 * RDMA stack sends to DST_IPV4 (not ours, by the TOS mark). Each one moves its destination
 * QP's expected PSN to the request's PSN plus the PSNs it takes (a READ of N MTUs takes N),
 * and a destination QPN not yet known becomes a new target and the preferred one (85% of
 * the packets; a QP pair set up again is followed). rkeys and VAs seen in RETHs and
 * AtomicETHs are learned as live: a learned rkey is only ever sent with another key byte,
 * never as is. Without -f the targets and their PSNs are the ones given.
 *
 * RKEYs: a plain key is sent as is and with other key bytes; a key written !KEY is live and
 * is only ever sent with another key byte (an rkey that grants access would let this
 * hostile peer legitimately write into, or read from, the traffic's buffers).
 *
 * Pacing: batches of BATCH packets, each batch started when the elapsed time says so for -r
 * packets a second (default 1100: 10^5 packets in about 90 s). Progress every 10^4
 * packets; at the end the count of each opcode sent, and
 *   # roce_fuzz: N packets sent (...class counts...; ...other counts...) in T s
 *   # roce_fuzz: sent=N sure_malformed=M send_errors=E targets=T
 * sure_malformed counts the packets a receiver that carries out RC, UC, UD and CNP (not RD)
 * must reject before the QP lookup: reserved, undefined or RD opcode, transport
 * version not 0, truncated, payload or pad where the opcode has none, payload and pad not
 * a multiple of 4, an ATOMIC WRITE payload other than 8 bytes. On the host it matches
 * rrxe's own parser (tools/rrxe, rrxe-decode over a capture) packet for packet.
 *
 * The random choices come from an xorshift64* generator seeded from SEED: without -f a
 * run is replayed exactly from the same arguments; with -f the targets, PSNs and learned
 * keys follow the live traffic, so only the sequence of random choices is the same.
 *
 * Usage: roce_fuzz [-f IFACE] [-m MTU] [-r PPS] [-e PERMILLE] [-v]
 *                  SRC_IPV4 DST_IPV4 COUNT SEED QPN:PSN[,QPN:PSN...] [RKEY[,RKEY...]]
 * Exit status 0 if all COUNT packets were sent.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "roce_pkt.h"

#define FUZZ_TOS	0x14	/* DSCP 5: marks the fuzzer's packets (masked by the ICRC) */
#define ETH_MTU		1500	/* largest IPv4 packet sent unfragmented */
#define JUMBO_MAX	8000	/* largest datagram sent as fragments */
#define FRAG_CHUNK	1480	/* bytes of UDP datagram per fragment (a multiple of 8) */
#define BATCH		25
#define MAX_TARGETS	32
#define MAX_KEYS	64
#define MAX_VAS		16
#define PROGRESS	10000

/* Extended headers, in the wire order they are written in. */
enum {
	H_RDETH = 1 << 0,	/* 4 */
	H_DETH = 1 << 1,	/* 8 */
	H_FETH = 1 << 2,	/* 4 */
	H_RETH = 1 << 3,	/* 16 */
	H_ATOMIC = 1 << 4,	/* 28 */
	H_AETH = 1 << 5,	/* 4 */
	H_ATOMIC_ACK = 1 << 6,	/* 8 */
	H_IMM = 1 << 7,		/* 4 */
	H_IETH = 1 << 8,	/* 4 */
	H_CNP = 1 << 9,		/* 16 reserved bytes */
};

static const struct {
	int bit, len;
} hdr_len[] = {
	{ H_RDETH, 4 }, { H_DETH, 8 }, { H_FETH, 4 }, { H_RETH, 16 }, { H_ATOMIC, 28 },
	{ H_AETH, 4 }, { H_ATOMIC_ACK, 8 }, { H_IMM, 4 }, { H_IETH, 4 }, { H_CNP, 16 },
};

enum payload { P_NONE, P_ANY, P_8 };

/* Opcode classes, for the choice of an opcode and the counts. */
enum cls { C_RC_REQ, C_RC_RESP, C_UC, C_UD, C_RD_CNP, C_RESERVED, NCLS };
static const char *const cls_name[NCLS] = { "rc_req", "rc_resp", "uc", "ud", "rd_cnp",
					    "reserved" };
/* Per mille of the packets in each class. */
static const unsigned int cls_weight[NCLS] = { 480, 150, 130, 90, 50, 100 };

struct opdef {
	uint8_t code;
	uint8_t cls;
	uint8_t payload;
	uint16_t hdrs;
	const char *name;
};

/* IBA 9.2 table 38 (and IBA 1.5's FLUSH and ATOMIC WRITE), as rrxe's proto/opcode.rs. */
static const struct opdef ops[] = {
	{ 0x00, C_RC_REQ, P_ANY, 0, "RC_SEND_FIRST" },
	{ 0x01, C_RC_REQ, P_ANY, 0, "RC_SEND_MIDDLE" },
	{ 0x02, C_RC_REQ, P_ANY, 0, "RC_SEND_LAST" },
	{ 0x03, C_RC_REQ, P_ANY, H_IMM, "RC_SEND_LAST_WITH_IMMEDIATE" },
	{ 0x04, C_RC_REQ, P_ANY, 0, "RC_SEND_ONLY" },
	{ 0x05, C_RC_REQ, P_ANY, H_IMM, "RC_SEND_ONLY_WITH_IMMEDIATE" },
	{ 0x06, C_RC_REQ, P_ANY, H_RETH, "RC_RDMA_WRITE_FIRST" },
	{ 0x07, C_RC_REQ, P_ANY, 0, "RC_RDMA_WRITE_MIDDLE" },
	{ 0x08, C_RC_REQ, P_ANY, 0, "RC_RDMA_WRITE_LAST" },
	{ 0x09, C_RC_REQ, P_ANY, H_IMM, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE" },
	{ 0x0a, C_RC_REQ, P_ANY, H_RETH, "RC_RDMA_WRITE_ONLY" },
	{ 0x0b, C_RC_REQ, P_ANY, H_RETH | H_IMM, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE" },
	{ 0x0c, C_RC_REQ, P_NONE, H_RETH, "RC_RDMA_READ_REQUEST" },
	{ 0x0d, C_RC_RESP, P_ANY, H_AETH, "RC_RDMA_READ_RESPONSE_FIRST" },
	{ 0x0e, C_RC_RESP, P_ANY, 0, "RC_RDMA_READ_RESPONSE_MIDDLE" },
	{ 0x0f, C_RC_RESP, P_ANY, H_AETH, "RC_RDMA_READ_RESPONSE_LAST" },
	{ 0x10, C_RC_RESP, P_ANY, H_AETH, "RC_RDMA_READ_RESPONSE_ONLY" },
	{ 0x11, C_RC_RESP, P_NONE, H_AETH, "RC_ACKNOWLEDGE" },
	{ 0x12, C_RC_RESP, P_NONE, H_AETH | H_ATOMIC_ACK, "RC_ATOMIC_ACKNOWLEDGE" },
	{ 0x13, C_RC_REQ, P_NONE, H_ATOMIC, "RC_COMPARE_SWAP" },
	{ 0x14, C_RC_REQ, P_NONE, H_ATOMIC, "RC_FETCH_ADD" },
	{ 0x16, C_RC_REQ, P_ANY, H_IETH, "RC_SEND_LAST_WITH_INVALIDATE" },
	{ 0x17, C_RC_REQ, P_ANY, H_IETH, "RC_SEND_ONLY_WITH_INVALIDATE" },
	{ 0x1c, C_RC_REQ, P_NONE, H_FETH | H_RETH, "RC_FLUSH" },
	{ 0x1d, C_RC_REQ, P_8, H_RETH, "RC_ATOMIC_WRITE" },
	{ 0x20, C_UC, P_ANY, 0, "UC_SEND_FIRST" },
	{ 0x21, C_UC, P_ANY, 0, "UC_SEND_MIDDLE" },
	{ 0x22, C_UC, P_ANY, 0, "UC_SEND_LAST" },
	{ 0x23, C_UC, P_ANY, H_IMM, "UC_SEND_LAST_WITH_IMMEDIATE" },
	{ 0x24, C_UC, P_ANY, 0, "UC_SEND_ONLY" },
	{ 0x25, C_UC, P_ANY, H_IMM, "UC_SEND_ONLY_WITH_IMMEDIATE" },
	{ 0x26, C_UC, P_ANY, H_RETH, "UC_RDMA_WRITE_FIRST" },
	{ 0x27, C_UC, P_ANY, 0, "UC_RDMA_WRITE_MIDDLE" },
	{ 0x28, C_UC, P_ANY, 0, "UC_RDMA_WRITE_LAST" },
	{ 0x29, C_UC, P_ANY, H_IMM, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE" },
	{ 0x2a, C_UC, P_ANY, H_RETH, "UC_RDMA_WRITE_ONLY" },
	{ 0x2b, C_UC, P_ANY, H_RETH | H_IMM, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE" },
	{ 0x40, C_RD_CNP, P_ANY, H_RDETH | H_DETH, "RD_SEND_FIRST" },
	{ 0x41, C_RD_CNP, P_ANY, H_RDETH | H_DETH, "RD_SEND_MIDDLE" },
	{ 0x42, C_RD_CNP, P_ANY, H_RDETH | H_DETH, "RD_SEND_LAST" },
	{ 0x43, C_RD_CNP, P_ANY, H_RDETH | H_DETH | H_IMM, "RD_SEND_LAST_WITH_IMMEDIATE" },
	{ 0x44, C_RD_CNP, P_ANY, H_RDETH | H_DETH, "RD_SEND_ONLY" },
	{ 0x45, C_RD_CNP, P_ANY, H_RDETH | H_DETH | H_IMM, "RD_SEND_ONLY_WITH_IMMEDIATE" },
	{ 0x46, C_RD_CNP, P_ANY, H_RDETH | H_DETH | H_RETH, "RD_RDMA_WRITE_FIRST" },
	{ 0x47, C_RD_CNP, P_ANY, H_RDETH | H_DETH, "RD_RDMA_WRITE_MIDDLE" },
	{ 0x48, C_RD_CNP, P_ANY, H_RDETH | H_DETH, "RD_RDMA_WRITE_LAST" },
	{ 0x49, C_RD_CNP, P_ANY, H_RDETH | H_DETH | H_IMM, "RD_RDMA_WRITE_LAST_WITH_IMMEDIATE" },
	{ 0x4a, C_RD_CNP, P_ANY, H_RDETH | H_DETH | H_RETH, "RD_RDMA_WRITE_ONLY" },
	{ 0x4b, C_RD_CNP, P_ANY, H_RDETH | H_DETH | H_RETH | H_IMM,
	  "RD_RDMA_WRITE_ONLY_WITH_IMMEDIATE" },
	{ 0x4c, C_RD_CNP, P_NONE, H_RDETH | H_DETH | H_RETH, "RD_RDMA_READ_REQUEST" },
	{ 0x4d, C_RD_CNP, P_ANY, H_RDETH | H_AETH, "RD_RDMA_READ_RESPONSE_FIRST" },
	{ 0x4e, C_RD_CNP, P_ANY, H_RDETH, "RD_RDMA_READ_RESPONSE_MIDDLE" },
	{ 0x4f, C_RD_CNP, P_ANY, H_RDETH | H_AETH, "RD_RDMA_READ_RESPONSE_LAST" },
	{ 0x50, C_RD_CNP, P_ANY, H_RDETH | H_AETH, "RD_RDMA_READ_RESPONSE_ONLY" },
	{ 0x51, C_RD_CNP, P_NONE, H_RDETH | H_AETH, "RD_ACKNOWLEDGE" },
	{ 0x52, C_RD_CNP, P_NONE, H_RDETH | H_AETH | H_ATOMIC_ACK, "RD_ATOMIC_ACKNOWLEDGE" },
	{ 0x53, C_RD_CNP, P_NONE, H_RDETH | H_DETH | H_ATOMIC, "RD_COMPARE_SWAP" },
	{ 0x54, C_RD_CNP, P_NONE, H_RDETH | H_DETH | H_ATOMIC, "RD_FETCH_ADD" },
	{ 0x5c, C_RD_CNP, P_NONE, H_RDETH | H_DETH | H_FETH | H_RETH, "RD_FLUSH" },
	{ 0x64, C_UD, P_ANY, H_DETH, "UD_SEND_ONLY" },
	{ 0x65, C_UD, P_ANY, H_DETH | H_IMM, "UD_SEND_ONLY_WITH_IMMEDIATE" },
	{ 0x81, C_RD_CNP, P_NONE, H_CNP, "CNP" },
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

/* Opcode values of each class (the reserved class: every value not in ops[]). */
static struct {
	uint8_t code[256];
	int n;
} by_cls[NCLS];
static const struct opdef *op_of[256];

struct target {
	uint32_t qpn, psn;
	double seen;		/* when a request to it was last seen (-f), or added */
	int tracked;		/* its PSN comes from the wire */
};

struct key {
	uint32_t key;
	int live;		/* never sent as is */
};

static struct {
	int tx, sniff;
	uint32_t src, dst;	/* network byte order */
	uint32_t mtu, pps, exact_pm;
	int verbose;
	uint16_t ip_id;
	struct target t[MAX_TARGETS];
	int nt, cur;
	struct key k[MAX_KEYS];
	int nk;
	uint64_t va[MAX_VAS];
	int nva;
	double t0;
	/* counts */
	uint64_t sent, by_class[NCLS], by_op[256], truncated, runt, oversized, fragmented,
		 frags, tver, pkey, psn_exact, other_qpn, sure_malformed, send_errors,
		 retries, seen_reqs;
} G = { .tx = -1, .sniff = -1, .mtu = 1024, .pps = 1100, .exact_pm = 1 };

/* --- random numbers: xorshift64* ---------------------------------------------------------- */

static uint64_t rs;

static uint64_t rnd(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return rs * 0x2545F4914F6CDD1Dull;
}

/* Uniform in 0 .. n - 1 (n > 0). */
static uint32_t below(uint32_t n)
{
	return (uint32_t)(((rnd() >> 32) * (uint64_t)n) >> 32);
}

/* Uniform in lo .. hi. */
static uint32_t range(uint32_t lo, uint32_t hi)
{
	return lo + below(hi - lo + 1);
}

static void seed(uint64_t s)
{
	/* splitmix64, so that nearby seeds give unrelated streams; never 0 */
	s += 0x9E3779B97F4A7C15ull;
	s = (s ^ (s >> 30)) * 0xBF58476D1CE4E5B9ull;
	s = (s ^ (s >> 27)) * 0x94D049BB133111EBull;
	rs = (s ^ (s >> 31)) | 1;
}

static void fill(uint8_t *p, size_t n)
{
	while (n >= 8) {
		uint64_t v = rnd();

		memcpy(p, &v, 8);
		p += 8;
		n -= 8;
	}
	if (n) {
		uint64_t v = rnd();

		memcpy(p, &v, n);
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --- targets, keys and addresses -------------------------------------------------------- */

static int find_target(uint32_t qpn)
{
	for (int i = 0; i < G.nt; i++)
		if (G.t[i].qpn == qpn)
			return i;
	return -1;
}

/* Adds a target (replacing the one seen longest ago if full); returns its index. */
static int add_target(uint32_t qpn, uint32_t psn, int tracked)
{
	int i = G.nt;

	if (G.nt == MAX_TARGETS) {
		i = 0;
		for (int j = 1; j < G.nt; j++)
			if (G.t[j].seen < G.t[i].seen)
				i = j;
	} else {
		G.nt++;
	}
	G.t[i] = (struct target){ .qpn = qpn & PSN_MASK, .psn = psn & PSN_MASK,
				  .seen = now_s(), .tracked = tracked };
	return i;
}

static int is_live_key(uint32_t key)
{
	for (int i = 0; i < G.nk; i++)
		if (G.k[i].live && G.k[i].key == key)
			return 1;
	return 0;
}

static void add_key(uint32_t key, int live)
{
	for (int i = 0; i < G.nk; i++) {
		if (G.k[i].key == key) {
			G.k[i].live |= live;
			return;
		}
	}
	if (G.nk < MAX_KEYS)
		G.k[G.nk++] = (struct key){ .key = key, .live = live };
	else if (live)
		G.k[below(MAX_KEYS)] = (struct key){ .key = key, .live = 1 };
}

static void add_va(uint64_t va)
{
	for (int i = 0; i < G.nva; i++)
		if (G.va[i] == va)
			return;
	if (G.nva < MAX_VAS)
		G.va[G.nva++] = va;
	else
		G.va[below(MAX_VAS)] = va;
}

/* --- following the traffic (-f) ----------------------------------------------------------- */

static int sniff_open(const char *ifname)
{
	/* Offsets from the IP header (a SOCK_DGRAM packet socket sees no link header): only
	 * outgoing IPv4 without options, not ours (TOS), UDP to port 4791; 128 bytes of it. */
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SKF_AD_OFF + SKF_AD_PKTTYPE),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACKET_OUTGOING, 0, 8),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x45, 0, 6),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 1),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FUZZ_TOS, 4, 0),
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 9),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, 0, 2),
		BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 22),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ROCE_PORT, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, 0),
		BPF_STMT(BPF_RET | BPF_K, 128),
	};
	struct sock_fprog prog = { .len = sizeof(code) / sizeof(code[0]), .filter = code };
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	int fd;

	sll.sll_ifindex = if_nametoindex(ifname);
	if (!sll.sll_ifindex) {
		fprintf(stderr, "roce_fuzz: no interface %s\n", ifname);
		return -1;
	}
	fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK, htons(ETH_P_ALL));
	if (fd < 0) {
		perror("roce_fuzz: AF_PACKET socket");
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) ||
	    bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		perror("roce_fuzz: packet socket filter/bind");
		close(fd);
		return -1;
	}
	return fd;
}

/* A request our own RDMA stack sent to DST: it tells the QPN, next PSN and live keys. */
static void sniffed(const uint8_t *p, size_t n)
{
	uint32_t src, dst, qpn, psn, span = 1, len;
	const uint8_t *b = p + ROCE_BTH_OFF;
	const struct opdef *op;
	int i;

	if (n < ROCE_BTH_OFF + ROCE_BTH_LEN)
		return;
	memcpy(&src, p + 12, 4);
	memcpy(&dst, p + 16, 4);
	if (src != G.src || dst != G.dst)
		return;
	op = op_of[b[0]];
	if (!op || (op->cls != C_RC_REQ && op->cls != C_UC))
		return;
	qpn = get_be24(b + 5);
	psn = get_be24(b + 9);
	if (op->hdrs & (H_RETH | H_ATOMIC) && !(op->hdrs & H_FETH) &&
	    n >= ROCE_BTH_OFF + ROCE_BTH_LEN + ROCE_RETH_LEN) {
		const uint8_t *r = b + ROCE_BTH_LEN;

		add_va(get_be64(r));
		add_key(get_be32(r + 8), 1);
		len = get_be32(r + 12);
		if (b[0] == OP_RC_READ_REQUEST && len)
			span = (uint32_t)(((uint64_t)len + G.mtu - 1) / G.mtu);
	}
	G.seen_reqs++;
	psn = psn_add(psn, (int32_t)(span & PSN_MASK));
	i = find_target(qpn);
	if (i < 0) {
		i = add_target(qpn, psn, 1);
		printf("# roce_fuzz: [%7.2f] following QPN 0x%06x, next PSN 0x%06x\n",
		       now_s() - G.t0, qpn, psn);
	} else if (!G.t[i].tracked || psn_diff(psn, G.t[i].psn) > 0) {
		/* forward only: a retransmission says nothing new */
		G.t[i].psn = psn;
		G.t[i].tracked = 1;
	}
	G.t[i].seen = now_s();
	G.cur = i;
}

static void sniff_drain(void)
{
	uint8_t buf[256];
	ssize_t n;

	if (G.sniff < 0)
		return;
	while ((n = recv(G.sniff, buf, sizeof(buf), MSG_TRUNC)) > 0)
		sniffed(buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf));
}

/* --- field choices -------------------------------------------------------------------------- */

static uint32_t pick_rkey(void)
{
	uint32_t r = below(1000), k;

	if (G.nk && r < 550) {
		const struct key *e = &G.k[below(G.nk)];

		if (!e->live && r < 250)
			return e->key;
		/* the right index, another key byte: never equal to any live key */
		for (;;) {
			k = (e->key & ~0xffu) | ((e->key + range(1, 255)) & 0xff);
			if (!is_live_key(k))
				return k;
		}
	}
	if (r < 920) {
		do
			k = (uint32_t)rnd();
		while (is_live_key(k));
		return k;
	}
	return r < 960 ? 0 : 0xffffffffu;
}

static uint64_t pick_va(void)
{
	uint32_t r = below(1000);

	if (r < 250)
		return below(8192);
	if (r < 450)
		return rnd();
	if (r < 600)
		return 0xfffffffffffff000ull | below(4096);	/* VA + length wraps */
	if (r < 750)
		return 0x7f0000000000ull + ((rnd() & 0xffffffffffull) & ~0xfffull);
	if (G.nva)
		return G.va[below(G.nva)] + (r < 900 ? below(4096) : range(60000, 140000));
	return rnd();
}

static uint32_t pick_dma_len(void)
{
	static const uint32_t huge[] = { 0x7fffffffu, 0x80000000u, 0x80000001u, 0xfffffffeu,
					 0xffffffffu };
	uint32_t r = below(1000);

	if (r < 150)
		return 0;
	if (r < 400)
		return range(1, 64);
	if (r < 600) {
		const uint32_t near[] = { G.mtu - 1, G.mtu, G.mtu + 1, 2 * G.mtu, 65536 };

		return near[below(5)];
	}
	if (r < 800)
		return below(65537);
	if (r < 900)
		return huge[below(5)];
	return (uint32_t)rnd();
}

static uint8_t pick_syndrome(void)
{
	uint32_t r = below(1000);

	if (r < 300)
		return below(32);		/* ACK, credit code */
	if (r < 450)
		return 0x20 | below(32);	/* RNR NAK, timer */
	if (r < 700)
		return 0x60 | below(5);		/* NAK: PSN seq, inv req, access, op, inv RD */
	if (r < 850)
		return 0x60 | below(32);	/* NAK with reserved codes */
	return below(256);			/* anything, reserved kinds included */
}

/* PSN offset from the target's expected PSN. */
static int32_t pick_psn_offset(void)
{
	uint32_t r = below(1000);
	int32_t sign = below(2) ? 1 : -1;

	if (r < G.exact_pm)
		return 0;
	if (r < 500)
		return sign * (int32_t)range(1, 16);
	if (r < 850)
		return sign * (int32_t)range(1, 256);
	if (r < 930)
		return sign * (int32_t)range(257, 4096);
	return (int32_t)below(1u << 24) - (1 << 23);	/* anywhere */
}

static uint32_t pick_qpn(const struct target *t)
{
	uint32_t r = below(1000), q;

	if (r >= 30)
		return t->qpn;
	G.other_qpn++;
	if (r < 10)
		return t->qpn ^ 0x800000;
	if (r < 13)
		return 0xffffff;	/* the multicast QPN */
	/* Anything but QP0/QP1 (the kernel's MAD layer is not this test's target) and the
	 * targets. */
	do
		q = below(1u << 24);
	while (q < 2 || find_target(q) >= 0);
	return q;
}

/* --- building and sending --------------------------------------------------------------------- */

static uint8_t pkt[JUMBO_MAX + 256];
static uint8_t body[JUMBO_MAX + 256];

static int send_raw(const uint8_t *p, size_t len)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = G.dst };

	for (int tries = 0; tries < 200; tries++) {
		if (sendto(G.tx, p, len, 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)len)
			return 0;
		if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR)
			break;
		G.retries++;
		usleep(1000);
	}
	if (G.send_errors++ < 10)
		fprintf(stderr, "roce_fuzz: sendto %zu bytes: %s\n", len, strerror(errno));
	return -1;
}

/* Sends the datagram of @len bytes at @p (IP header without DF) as IPv4 fragments. */
static int send_fragments(const uint8_t *p, size_t len)
{
	static uint8_t f[ROCE_IP_LEN + FRAG_CHUNK];
	size_t ulen = len - ROCE_IP_LEN, off, n, cnt = (ulen + FRAG_CHUNK - 1) / FRAG_CHUNK;
	int reverse = below(4) == 0;	/* the receiver reassembles in any order */

	for (size_t i = 0; i < cnt; i++) {
		size_t k = reverse ? cnt - 1 - i : i;

		off = k * FRAG_CHUNK;
		n = ulen - off < FRAG_CHUNK ? ulen - off : FRAG_CHUNK;
		memcpy(f, p, ROCE_IP_LEN);
		put_be16(f + 2, ROCE_IP_LEN + n);
		put_be16(f + 6, (k + 1 < cnt ? 0x2000 : 0) | (off / 8));
		memcpy(f + ROCE_IP_LEN, p + ROCE_IP_LEN + off, n);
		if (send_raw(f, ROCE_IP_LEN + n))
			return -1;
		G.frags++;
	}
	return 0;
}

static uint16_t next_ip_id(void)
{
	if (!++G.ip_id)
		G.ip_id = 1;
	return G.ip_id;
}

/* Rewrites the ICRC of the packet of @len bytes at @p (after header changes). */
static void set_icrc(uint8_t *p, size_t len)
{
	uint32_t c = icrc(p, len - ROCE_ICRC_LEN);

	memcpy(p + len - ROCE_ICRC_LEN, &c, 4);
}

static const struct opdef *pick_op(uint8_t *code)
{
	uint32_t r = below(1000), acc = 0;
	int c;

	for (c = 0; c < NCLS - 1; c++) {
		acc += cls_weight[c];
		if (r < acc)
			break;
	}
	*code = by_cls[c].code[below(by_cls[c].n)];
	return op_of[*code];
}

/* Builds and sends one fuzz packet. */
static void fuzz_one(void)
{
	const struct target *t = &G.t[G.nt > 1 && below(100) >= 85 ? (int)below(G.nt) : G.cur];
	struct roce_bth bth = { 0 };
	const struct opdef *op;
	size_t hl = 0, plen = 0, blen, len, maxp;
	uint8_t code, *b = body, *bt;
	int sure_bad = 0, frag = 0, cut = 0, cls, pad_ok = below(100) < 85;
	int32_t off;
	uint16_t pkey = 0xffff;
	uint32_t r;

	op = pick_op(&code);
	cls = op ? op->cls : C_RESERVED;
	if (!op || (op->cls == C_RD_CNP && code != 0x81))
		sure_bad = 1;	/* undefined, reserved or unsupported (RD) opcode */

	/* BTH */
	bth.opcode = code;
	bth.se = below(2);
	bth.ackreq = below(2);
	bth.qpn = pick_qpn(t);
	off = pick_psn_offset();
	if (!off)
		G.psn_exact++;
	bth.psn = psn_add(t->psn, off);
	if (below(1000) < 30) {
		bth.tver = range(1, 15);
		G.tver++;
		sure_bad = 1;
	}
	r = below(1000);
	if (r >= 930) {
		static const uint16_t pk[] = { 0x7fff, 0x0000, 0x8000 };

		pkey = r < 960 ? pk[below(3)] : (uint16_t)rnd();
		G.pkey++;
	}

	/* extended headers, in wire order */
	if (op) {
		for (size_t i = 0; i < sizeof(hdr_len) / sizeof(hdr_len[0]); i++) {
			uint8_t *h = b + hl;

			if (!(op->hdrs & hdr_len[i].bit))
				continue;
			switch (hdr_len[i].bit) {
			case H_RDETH:
				put_be32(h, below(10) ? below(1u << 24) : (uint32_t)rnd());
				break;
			case H_DETH: {
				static const uint32_t qk[] = { 0x11111111, 0x80010000, 0 };

				r = below(1000);
				roce_deth(h, r < 400 ? (uint32_t)rnd() : qk[below(3)],
					  below(1u << 24));
				if (below(20) == 0)
					h[4] = (uint8_t)rnd();	/* reserved byte */
				break;
			}
			case H_FETH:
				put_be32(h, (uint32_t)rnd());
				break;
			case H_RETH:
				roce_reth(h, pick_va(), pick_rkey(), pick_dma_len());
				break;
			case H_ATOMIC: {
				uint64_t va = pick_va();

				va = below(100) < 60 ? va & ~7ull : (va & ~7ull) | range(1, 7);
				roce_atomic_eth(h, va, pick_rkey(), rnd(), rnd());
				break;
			}
			case H_AETH:
				h[0] = pick_syndrome();
				put_be24(h + 1, below(2) ? below(1u << 24) : below(64));
				break;
			case H_ATOMIC_ACK:
				put_be64(h, rnd());
				break;
			case H_IMM:
				put_be32(h, (uint32_t)rnd());
				break;
			case H_IETH:
				put_be32(h, pick_rkey());
				break;
			case H_CNP:
				memset(h, 0, 16);
				if (below(5) == 0)
					fill(h, 16);
				break;
			}
			hl += hdr_len[i].len;
		}
	}

	/* payload length */
	maxp = ETH_MTU - ROCE_BTH_OFF - ROCE_BTH_LEN - hl - ROCE_ICRC_LEN - 3;
	r = below(1000);
	if (!op || op->payload == P_ANY) {
		if (r < 100)
			plen = 0;
		else if (r < 450)
			plen = range(1, G.mtu);
		else if (r < 650)
			plen = G.mtu;
		else if (r < 750)
			plen = range(G.mtu - 3, G.mtu + 3);
		else if (r < 850)
			plen = range(1, 64);
		else if (r < 970)
			plen = range(G.mtu + 1, maxp > G.mtu + 1 ? maxp : G.mtu + 1);
		else {
			plen = range(ETH_MTU, JUMBO_MAX - 128);
			frag = 1;
		}
	} else if (op->payload == P_8) {
		plen = r < 850 ? 8 : below(17);
		if (plen != 8)
			sure_bad = 1;
	} else if (r < 80) {
		plen = range(1, 64);	/* payload where the opcode has none */
		sure_bad = 1;
	}
	if (!frag && plen > maxp)
		plen = maxp;
	/* pad: usually what aligns the payload, else any count */
	if (pad_ok) {
		bth.pad = (4 - plen % 4) % 4;
		if (op && op->payload == P_NONE && plen == 0)
			bth.pad = 0;
	} else {
		bth.pad = below(4);
	}
	blen = hl + plen + bth.pad;
	fill(b + hl, plen);
	memset(b + hl + plen, 0, bth.pad);
	if (op && op->payload != P_ANY && (plen || bth.pad) && !(op->payload == P_8 && plen == 8))
		sure_bad = 1;	/* payload or pad where none may be */
	if ((plen + bth.pad) % 4)
		sure_bad = 1;	/* unaligned */

	/* truncation: the headers cut short, or a runt */
	r = below(1000);
	if (r < 40 && hl)
		cut = 1;
	else if (r >= 40 && r < 45)
		cut = 2;
	if (cut) {
		blen = cut == 1 ? below(hl) : 0;
		frag = 0;
		sure_bad = 1;
		if (cut == 1)
			G.truncated++;
		else
			G.runt++;
	}

	if (!cut && plen > G.mtu && (!op || op->payload == P_ANY))
		G.oversized++;
	len = roce_build(pkt, G.src, G.dst, 0xc000 | below(0x4000), next_ip_id(), &bth, b, blen);
	bt = pkt + ROCE_BTH_OFF;
	if (below(10) == 0)
		bt[1] |= 0x40;				/* MigReq */
	put_be16(bt + 2, pkey);
	if (below(50) == 0)
		bt[4] = (uint8_t)rnd();			/* FECN, BECN, resv8a (masked) */
	if (below(50) == 0)
		bt[8] |= (uint8_t)range(1, 0x7f);	/* resv7 */
	if (cut == 2) {
		/* A runt: fewer UDP payload bytes than a BTH and an ICRC, whatever they hold. */
		size_t n = below(ROCE_BTH_LEN + ROCE_ICRC_LEN);

		len = ROCE_BTH_OFF + n;
		put_be16(pkt + 2, len);
		put_be16(pkt + 24, ROCE_UDP_LEN + n);
	} else if (frag) {
		pkt[6] = pkt[7] = 0;	/* no DF: as the receiver sees it once reassembled */
		set_icrc(pkt, len);
	} else {
		set_icrc(pkt, len);
	}
	pkt[1] = FUZZ_TOS;		/* masked by the ICRC */

	if (G.verbose)
		printf("%6" PRIu64 " op 0x%02x %-34s qpn 0x%06x psn 0x%06x (%+d) pkey 0x%04x "
		       "tver %u pad %u hdrs %zu payload %zu%s%s%s\n", G.sent, code,
		       op ? op->name : "(reserved)", bth.qpn, bth.psn, off, pkey, bth.tver,
		       bth.pad, hl, plen, frag ? " fragmented" : "",
		       cut == 1 ? " truncated" : "", cut == 2 ? " runt" : "");
	if (frag ? send_fragments(pkt, len) : send_raw(pkt, len))
		return;
	if (frag)
		G.fragmented++;
	G.sent++;
	G.by_class[cls]++;
	G.by_op[code]++;
	G.sure_malformed += sure_bad;
}

/* --- arguments ------------------------------------------------------------------------------ */

static __attribute__((noreturn)) void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [-f IFACE] [-m MTU] [-r PPS] [-e PERMILLE] [-v]\n"
		"          SRC_IPV4 DST_IPV4 COUNT SEED QPN:PSN[,QPN:PSN...] [RKEY[,RKEY...]]\n"
		"  a RKEY written !RKEY is live: only sent with another key byte\n", argv0);
	exit(2);
}

static int parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static void parse_targets(char *s, const char *argv0)
{
	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		char *colon = strchr(tok, ':');
		uint32_t qpn, psn;

		if (!colon)
			usage(argv0);
		*colon = 0;
		if (parse_u32(tok, PSN_MASK, &qpn) || parse_u32(colon + 1, PSN_MASK, &psn) ||
		    G.nt == MAX_TARGETS)
			usage(argv0);
		add_target(qpn, psn, 0);
	}
	if (!G.nt)
		usage(argv0);
}

static void parse_keys(char *s, const char *argv0)
{
	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		int live = *tok == '!';
		uint32_t key;

		if (parse_u32(tok + live, 0xffffffffu, &key))
			usage(argv0);
		add_key(key, live);
	}
}

int main(int argc, char **argv)
{
	const char *follow = NULL;
	uint32_t count, mtu = 1024;
	unsigned long long seed_arg;
	double next_report;
	char *end;
	int opt, one = 1;

	while ((opt = getopt(argc, argv, "f:m:r:e:v")) != -1) {
		switch (opt) {
		case 'f': follow = optarg; break;
		case 'm':
			if (parse_u32(optarg, 4096, &mtu) || mtu < 256 || (mtu & (mtu - 1)))
				usage(argv[0]);
			break;
		case 'r':
			if (parse_u32(optarg, 1000000, &G.pps) || !G.pps)
				usage(argv[0]);
			break;
		case 'e':
			if (parse_u32(optarg, 1000, &G.exact_pm))
				usage(argv[0]);
			break;
		case 'v': G.verbose = 1; break;
		default: usage(argv[0]);
		}
	}
	if (argc - optind < 5 || argc - optind > 6 ||
	    inet_pton(AF_INET, argv[optind], &G.src) != 1 ||
	    inet_pton(AF_INET, argv[optind + 1], &G.dst) != 1 ||
	    parse_u32(argv[optind + 2], 100000000, &count))
		usage(argv[0]);
	errno = 0;
	seed_arg = strtoull(argv[optind + 3], &end, 0);
	if (errno || end == argv[optind + 3] || *end)
		usage(argv[0]);
	G.mtu = mtu;
	seed(seed_arg);
	G.t0 = now_s();
	parse_targets(argv[optind + 4], argv[0]);
	if (argc - optind == 6)
		parse_keys(argv[optind + 5], argv[0]);
	G.cur = 0;
	G.ip_id = (uint16_t)rnd();

	for (size_t i = 0; i < NOPS; i++)
		op_of[ops[i].code] = &ops[i];
	for (unsigned int c = 0; c < 256; c++) {
		int k = op_of[c] ? op_of[c]->cls : C_RESERVED;

		by_cls[k].code[by_cls[k].n++] = (uint8_t)c;
	}

	setvbuf(stdout, NULL, _IOLBF, 0);
	G.tx = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (G.tx < 0 || setsockopt(G.tx, IPPROTO_IP, IP_HDRINCL, &one, sizeof(one))) {
		perror("roce_fuzz: raw socket");
		return 1;
	}
	if (follow) {
		G.sniff = sniff_open(follow);
		if (G.sniff < 0)
			return 1;
	}
	printf("# roce_fuzz: %s -> %s, %u packets, seed %llu, MTU %u, %u packets/s, "
	       "exact PSN %u/1000, %s\n", argv[optind], argv[optind + 1], count, seed_arg,
	       G.mtu, G.pps, G.exact_pm, follow ? "following the traffic" : "fixed targets");
	for (int i = 0; i < G.nt; i++)
		printf("# roce_fuzz: target QPN 0x%06x, expected PSN 0x%06x\n", G.t[i].qpn,
		       G.t[i].psn);
	for (int i = 0; i < G.nk; i++)
		printf("# roce_fuzz: rkey 0x%08x%s\n", G.k[i].key,
		       G.k[i].live ? " (live: only with another key byte)" : "");

	next_report = PROGRESS;
	while (G.sent < count) {
		double due = G.t0 + (double)G.sent / G.pps, now;
		uint64_t before = G.sent;

		sniff_drain();
		now = now_s();
		if (due > now)
			usleep((useconds_t)((due - now) * 1e6));
		for (int i = 0; i < BATCH && G.sent < count; i++)
			fuzz_one();
		if (G.sent == before && G.send_errors > 1000) {
			fprintf(stderr, "roce_fuzz: too many send errors, giving up\n");
			break;
		}
		if (G.sent >= next_report || G.sent == count) {
			const struct target *t = &G.t[G.cur];

			now = now_s() - G.t0;
			printf("# roce_fuzz: %" PRIu64 "/%u packets, %.1f s, %.0f/s; target QPN "
			       "0x%06x PSN 0x%06x%s, %d targets, %d rkeys, %" PRIu64
			       " requests seen\n", G.sent, count, now, G.sent / (now > 0 ? now : 1),
			       t->qpn, t->psn, t->tracked ? " (tracked)" : "", G.nt, G.nk,
			       G.seen_reqs);
			while (next_report <= G.sent)
				next_report += PROGRESS;
		}
	}

	printf("# roce_fuzz: opcodes sent:");
	for (int c = 0, n = 0; c < 256; c++) {
		if (!G.by_op[c])
			continue;
		printf("%s 0x%02x:%" PRIu64, n++ % 10 ? "" : "\n#  ", c, G.by_op[c]);
	}
	printf("\n# roce_fuzz: %" PRIu64 " packets sent (", G.sent);
	for (int c = 0; c < NCLS; c++)
		printf("%s %" PRIu64 "%s", cls_name[c], G.by_class[c], c + 1 < NCLS ? ", " : "; ");
	printf("truncated %" PRIu64 ", runt %" PRIu64 ", oversized %" PRIu64 ", fragmented %"
	       PRIu64 " in %" PRIu64 " fragments, tver %" PRIu64 ", pkey %" PRIu64
	       ", psn_exact %" PRIu64 ", other_qpn %" PRIu64 "; %" PRIu64
	       " sendto retries) in %.1f s\n", G.truncated, G.runt, G.oversized, G.fragmented,
	       G.frags, G.tver, G.pkey, G.psn_exact, G.other_qpn, G.retries, now_s() - G.t0);
	printf("# roce_fuzz: sent=%" PRIu64 " sure_malformed=%" PRIu64 " send_errors=%" PRIu64
	       " targets=%d requests_seen=%" PRIu64 "\n", G.sent, G.sure_malformed,
	       G.send_errors, G.nt, G.seen_reqs);
	return G.sent == count ? 0 : 1;
}
