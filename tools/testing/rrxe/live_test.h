/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What live_target.c (guest a, a real rrxe RC QP per phase) and live_peer.c (guest b,
 * hand-made packets) agree on: one target QP per phase, the PSN each one expects first, the
 * layout of the 64 KiB target region (which ranges the peer writes legitimately, which
 * ones it attacks), the byte patterns, and the final content the region must have.
 *
 * The TCP conversation (text lines, each printed by both sides):
 *   target -> peer  "TARGET nqp=N rkey=0x.. va=0x.. len=65536 mtu=1024"
 *                   N x "QP i qpn=0x.. psn=0x.."      (psn: the QP's rq_psn, expected first)
 *   peer -> target  "PEER ip=a.b.c.d"
 *                   N x "QP i qpn=0x.. psn=0x.."      (the QP number replies go to, and the
 *                                                     PSN the target's own requests would use)
 *   target -> peer  "READY" once every QP is in RTS with the peer's address (or "FAIL ...")
 *   peer -> target  "DONE sent=S replies=R wrong_transport=dropped|nak|other" after the
 *                   last phase: S packets sent, R RoCE replies received
 */
#ifndef LIVE_TEST_H
#define LIVE_TEST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

/* One target QP per phase; the peer's QP numbers are LIVE_PEER_QPN + index. */
enum live_qp {
	QP_SEQ,			/* a-d: WRITE, READ, duplicate WRITE, PSN ahead (+ recovery) */
	QP_BAD_RKEY,		/* e: WRITE with a wrong rkey (then a WRITE to the QP in ERR) */
	QP_PAST_MR,		/* f: WRITE running past the end of the region */
	QP_HUGE_READ,		/* g: READ of 2^31-1 bytes */
	QP_READ_64K,		/* h: READ of the whole region, 64 responses, PSNs wrapping */
	QP_ATOMIC,		/* i: aligned FETCH_ADD, then a misaligned one */
	QP_WRONG_TRANSPORT,	/* j: a UD opcode to the RC QP, then a WRITE */
	QP_FLUSH,		/* k: FLUSH global visibility, its duplicate, FLUSH persistence */
	LIVE_NQP
};

static const char *const live_qp_name[LIVE_NQP] = {
	"seq", "bad_rkey", "past_mr", "huge_read", "read_64k", "atomic", "wrong_transport",
	"flush",
};

/* The PSN each target QP expects first (its rq_psn): QP_SEQ and QP_READ_64K cross the 24-bit
 * wrap (0xffffff -> 0) during their phases. */
static const uint32_t live_rq_psn[LIVE_NQP] = {
	0xfffffe, 0x123456, 0x234567, 0x345678, 0xffffe0, 0x456789, 0x56789a, 0x6789ab,
};

#define LIVE_PEER_QPN	0x0a0000u
#define LIVE_MR_LEN	65536u
#define LIVE_MTU	1024u
#define LIVE_NRECV	2	/* receive WQEs posted on each target QP */

/* Offsets in the region. */
#define OFF_WRITE_A	0x1000u	/* a: 64 bytes, tag TAG_A (c sends TAG_C there again) */
#define LEN_WRITE_A	64u
#define OFF_READ_B	0x2000u	/* b: READ 256 bytes */
#define LEN_READ_B	256u
#define OFF_WRITE_D	0x3000u	/* d: the recovery WRITE at the expected PSN, 32 bytes */
#define LEN_WRITE_D	32u
#define OFF_AHEAD_D	0x3800u	/* d: the out-of-sequence WRITEs (must not land) */
#define OFF_BAD_RKEY	0x4000u	/* e: wrong rkey (must not land) */
#define OFF_ERR_QP	0x7000u	/* e: WRITE to the QP in ERR (must not land) */
#define OFF_ATOMIC	0x5000u	/* i: aligned FETCH_ADD of LIVE_ADD */
#define OFF_MISALIGNED	0x5004u	/* i: misaligned FETCH_ADD (must not happen) */
#define OFF_WRITE_J	0x6000u	/* j: 64 bytes, tag TAG_J */
#define LEN_WRITE_J	64u
#define OFF_FLUSH	0x8000u	/* k: FLUSH of 4096 bytes (changes nothing) */
#define LEN_FLUSH	4096u
#define LIVE_ADD	0x0102030405060708ull

/* IB_ACCESS_FLUSH_GLOBAL (IBA 1.5 annex A19): rdma-core v44's verbs.h has no name for it. */
#define LIVE_ACCESS_FLUSH_GLOBAL	0x100

#define TAG_A	0xa1
#define TAG_C	0xc1	/* the duplicate of a carries other bytes: it must not be executed */
#define TAG_D	0xd1
#define TAG_BAD	0xee	/* payload of every WRITE that must not land */
#define TAG_J	0xf1

/* The region's initial content. */
static inline uint8_t live_pattern(size_t off)
{
	return (uint8_t)(off * 31 + (off >> 8) * 7 + 0x5a);
}

/* The bytes of a WRITE with tag @tag. */
static inline uint8_t live_payload(uint8_t tag, size_t i)
{
	return (uint8_t)(tag ^ (i * 37 + 11));
}

static inline void live_fill(uint8_t *p, uint8_t tag, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = live_payload(tag, i);
}

/* The 8 bytes at OFF_ATOMIC as a little-endian u64 (the guests are x86). */
static inline uint64_t live_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline void live_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

/*
 * The region's content once every phase ran as the IBA says (LIVE_MR_LEN bytes at @mr):
 * the pattern, with the legitimate WRITEs of a, d (recovery) and j (@j_landed: unless the
 * wrong-transport packet of j was NAKed, which ends the QP before j's WRITE), and the
 * aligned FETCH_ADD of i. Nothing else.
 */
static inline void live_expected(uint8_t *mr, int j_landed)
{
	for (size_t i = 0; i < LIVE_MR_LEN; i++)
		mr[i] = live_pattern(i);
	live_fill(mr + OFF_WRITE_A, TAG_A, LEN_WRITE_A);
	live_fill(mr + OFF_WRITE_D, TAG_D, LEN_WRITE_D);
	if (j_landed)
		live_fill(mr + OFF_WRITE_J, TAG_J, LEN_WRITE_J);
	live_put_le64(mr + OFF_ATOMIC, live_le64(mr + OFF_ATOMIC) + LIVE_ADD);
}

/* The text-line exchange over TCP between the two sides (each line is logged). */

/* Reads one line (without its newline) from @fd into @buf; -1 on EOF or error. */
static inline int tcp_line(int fd, char *buf, size_t size)
{
	size_t n = 0;

	while (n + 1 < size) {
		char c;
		ssize_t r = read(fd, &c, 1);

		if (r <= 0)
			return -1;
		if (c == '\n')
			break;
		buf[n++] = c;
	}
	buf[n] = 0;
	printf("tcp< %s\n", buf);
	return 0;
}

/* Writes one formatted line to @fd. */
static inline int tcp_say(int fd, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	printf("tcp> %s\n", buf);
	buf[n++] = '\n';
	return write_full(fd, buf, n);
}

#endif
