/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Hand-made RoCEv2 packets over IPv4, for the tests that talk to rrxe from the wire
 * (roce_inject.c, live_peer.c, roce_fuzz.c): the ICRC, a builder of IPv4 + UDP + BTH +
 * body + ICRC for a raw IP_HDRINCL socket, and a parser of what a raw IPPROTO_UDP socket
 * receives (the IP header included, so that the ICRC of a reply can be checked).
 *
 * Layout of a packet (IBA 5.2, Annex A17): IPv4 (20) | UDP (8, destination port 4791) |
 * BTH (12) | extension headers (RETH 16, AETH 4, AtomicETH 28, AtomicAckETH 8, DETH 8) |
 * payload | pad (0..3) | ICRC (4, little-endian on the wire as computed here).
 */
#ifndef ROCE_PKT_H
#define ROCE_PKT_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ROCE_PORT	4791
#define ROCE_IP_LEN	20
#define ROCE_UDP_LEN	8
#define ROCE_BTH_LEN	12
/* Where the BTH starts in a packet: after the IPv4 and UDP headers. */
#define ROCE_BTH_OFF	(ROCE_IP_LEN + ROCE_UDP_LEN)
#define ROCE_ICRC_LEN	4
#define ROCE_RETH_LEN	16
#define ROCE_AETH_LEN	4
#define ROCE_ATOMIC_ETH_LEN 28
#define ROCE_ATOMIC_ACK_ETH_LEN 8
#define ROCE_DETH_LEN	8

/* RC opcodes (IBA table 38); UD SEND ONLY for the wrong-transport case. */
#define OP_RC_SEND_ONLY		0x04
#define OP_RC_WRITE_ONLY	0x0a
#define OP_RC_READ_REQUEST	0x0c
#define OP_RC_READ_RESP_FIRST	0x0d
#define OP_RC_READ_RESP_MIDDLE	0x0e
#define OP_RC_READ_RESP_LAST	0x0f
#define OP_RC_READ_RESP_ONLY	0x10
#define OP_RC_ACK		0x11
#define OP_RC_ATOMIC_ACK	0x12
#define OP_RC_CMP_SWAP		0x13
#define OP_RC_FETCH_ADD		0x14
#define OP_RC_FLUSH		0x1c
#define OP_UD_SEND_ONLY		0x64

/* AETH syndrome (IBA 9.7.5.2.2): bits 6..5 the kind, bits 4..0 credits, timer or code. */
#define AETH_KIND(s)		(((s) >> 5) & 3)
#define AETH_KIND_ACK		0
#define AETH_KIND_RNR_NAK	1
#define AETH_KIND_NAK		3
#define AETH_NAK_PSN_SEQ	0x60
#define AETH_NAK_INV_REQ	0x61
#define AETH_NAK_REM_ACCESS	0x62
#define AETH_NAK_REM_OP		0x63

#define PSN_MASK 0xffffffu

static inline uint32_t psn_add(uint32_t psn, int32_t n)
{
	return (psn + (uint32_t)n) & PSN_MASK;
}

/* Signed distance a - b of two 24-bit PSNs. */
static inline int32_t psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(((a - b) & PSN_MASK) << 8) >> 8;
}

static inline void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void put_be24(uint8_t *p, uint32_t v)
{
	p[0] = v >> 16;
	p[1] = v >> 8;
	p[2] = v;
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
	put_be16(p, v >> 16);
	put_be16(p + 2, v);
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, v >> 32);
	put_be32(p + 4, v);
}

static inline uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t get_be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)get_be16(p) << 16 | get_be16(p + 2);
}

static inline uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/* Reflected CRC-32 (polynomial 0xEDB88320), a byte at a time from a table built on first
 * use: roce_fuzz computes one per packet, 10^5 of them in a slow TCG guest. */
static inline uint32_t crc32_le(uint32_t crc, const uint8_t *p, size_t n)
{
	static uint32_t table[256];

	if (!table[1]) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;

			for (int k = 0; k < 8; k++)
				c = (c >> 1) ^ (0xEDB88320u & -(c & 1));
			table[i] = c;
		}
	}
	while (n--)
		crc = (crc >> 8) ^ table[(crc ^ *p++) & 0xff];
	return crc;
}

/* RoCEv2 ICRC over an IPv4 packet (IP + UDP + BTH + rest, ICRC excluded). */
static inline uint32_t icrc(const uint8_t *pkt, size_t len)
{
	uint8_t m[40];
	uint32_t crc;

	memcpy(m, pkt, 40);
	m[1] = 0xff;			/* TOS */
	m[8] = 0xff;			/* TTL */
	m[10] = m[11] = 0xff;		/* IP checksum */
	m[26] = m[27] = 0xff;		/* UDP checksum */
	m[32] = 0xff;			/* BTH resv8a (FECN/BECN) */
	crc = crc32_le(0xdebb20e3, m, 40);
	crc = crc32_le(crc, pkt + 40, len - 40);
	return ~crc;
}

/* The BTH fields a test sets (P_Key 0xffff, resv8a 0). */
struct roce_bth {
	uint8_t opcode;
	uint8_t se;		/* solicited event */
	uint8_t pad;		/* pad count 0..3 */
	uint8_t tver;		/* transport version (0) */
	uint32_t qpn;		/* destination QP, 24 bits */
	uint8_t ackreq;
	uint32_t psn;		/* 24 bits */
};

/*
 * Writes IPv4 (id @ip_id, DF, TTL 64) + UDP (@sport to 4791, checksum 0) + BTH + @body_len
 * bytes of @body (extension headers, payload and pad, in wire order) + ICRC at @p, from
 * @src to @dst (network byte order); returns the packet's length. @p must hold
 * ROCE_BTH_OFF + ROCE_BTH_LEN + body_len + ROCE_ICRC_LEN bytes.
 */
static inline size_t roce_build(uint8_t *p, uint32_t src, uint32_t dst, uint16_t sport,
				uint16_t ip_id, const struct roce_bth *bth, const void *body,
				size_t body_len)
{
	size_t len = ROCE_BTH_OFF + ROCE_BTH_LEN + body_len + ROCE_ICRC_LEN;
	uint8_t *b = p + ROCE_BTH_OFF;
	uint32_t c;

	memset(p, 0, len);
	p[0] = 0x45;
	put_be16(p + 2, len);
	put_be16(p + 4, ip_id);		/* set, so the kernel keeps it */
	p[6] = 0x40;			/* DF */
	p[8] = 64;
	p[9] = IPPROTO_UDP;
	memcpy(p + 12, &src, 4);
	memcpy(p + 16, &dst, 4);
	put_be16(p + 20, sport);
	put_be16(p + 22, ROCE_PORT);
	put_be16(p + 24, len - ROCE_IP_LEN);
	b[0] = bth->opcode;
	b[1] = (bth->se ? 0x80 : 0) | (bth->pad & 3) << 4 | (bth->tver & 0xf);
	b[2] = b[3] = 0xff;		/* P_Key */
	put_be24(b + 5, bth->qpn);
	b[8] = bth->ackreq ? 0x80 : 0;
	put_be24(b + 9, bth->psn);
	if (body_len)
		memcpy(b + ROCE_BTH_LEN, body, body_len);
	c = icrc(p, len - ROCE_ICRC_LEN);
	memcpy(p + len - ROCE_ICRC_LEN, &c, 4);	/* little-endian on x86, as on the wire */
	return len;
}

/* Extension headers, written at @p (each returns its length). */
static inline size_t roce_reth(uint8_t *p, uint64_t va, uint32_t rkey, uint32_t len)
{
	put_be64(p, va);
	put_be32(p + 8, rkey);
	put_be32(p + 12, len);
	return ROCE_RETH_LEN;
}

static inline size_t roce_atomic_eth(uint8_t *p, uint64_t va, uint32_t rkey,
				     uint64_t swap_add, uint64_t compare)
{
	put_be64(p, va);
	put_be32(p + 8, rkey);
	put_be64(p + 12, swap_add);
	put_be64(p + 20, compare);
	return ROCE_ATOMIC_ETH_LEN;
}

static inline size_t roce_deth(uint8_t *p, uint32_t qkey, uint32_t src_qpn)
{
	put_be32(p, qkey);
	put_be24(p + 5, src_qpn);
	return ROCE_DETH_LEN;
}

/* A received RoCEv2 IPv4 packet, as roce_parse() found it. */
struct roce_rx {
	uint32_t src, dst;		/* IPv4 addresses, network byte order */
	uint16_t sport, dport;
	uint16_t ip_id;
	struct roce_bth bth;
	const uint8_t *body;		/* after the BTH: extension headers, payload, pad */
	size_t body_len;		/* ICRC excluded */
	uint32_t icrc_got, icrc_want;
};

/*
 * Parses @len bytes at @pkt, an IPv4 packet as a raw socket receives it (IP header
 * included). Returns 0 for a UDP datagram to port 4791 without IP options whose UDP payload
 * holds at least a BTH and an ICRC (@rx filled, the ICRC computed but not judged), 1 for
 * any other packet, -1 for a truncated one.
 */
static inline int roce_parse(const uint8_t *pkt, size_t len, struct roce_rx *rx)
{
	size_t ulen;

	if (len < ROCE_IP_LEN || pkt[0] >> 4 != 4)
		return 1;
	if ((pkt[0] & 0xf) != 5 || pkt[9] != IPPROTO_UDP)
		return 1;
	if (len < ROCE_BTH_OFF || get_be16(pkt + 22) != ROCE_PORT)
		return 1;
	if (get_be16(pkt + 2) < len)
		len = get_be16(pkt + 2);
	ulen = get_be16(pkt + 24);
	if (ulen < ROCE_UDP_LEN + ROCE_BTH_LEN + ROCE_ICRC_LEN || ROCE_IP_LEN + ulen > len)
		return -1;
	len = ROCE_IP_LEN + ulen;
	memcpy(&rx->src, pkt + 12, 4);
	memcpy(&rx->dst, pkt + 16, 4);
	rx->ip_id = get_be16(pkt + 4);
	rx->sport = get_be16(pkt + 20);
	rx->dport = ROCE_PORT;
	rx->bth.opcode = pkt[ROCE_BTH_OFF];
	rx->bth.se = pkt[ROCE_BTH_OFF + 1] >> 7;
	rx->bth.pad = (pkt[ROCE_BTH_OFF + 1] >> 4) & 3;
	rx->bth.tver = pkt[ROCE_BTH_OFF + 1] & 0xf;
	rx->bth.qpn = get_be24(pkt + ROCE_BTH_OFF + 5);
	rx->bth.ackreq = pkt[ROCE_BTH_OFF + 8] >> 7;
	rx->bth.psn = get_be24(pkt + ROCE_BTH_OFF + 9);
	rx->body = pkt + ROCE_BTH_OFF + ROCE_BTH_LEN;
	rx->body_len = len - ROCE_BTH_OFF - ROCE_BTH_LEN - ROCE_ICRC_LEN;
	memcpy(&rx->icrc_got, pkt + len - ROCE_ICRC_LEN, 4);
	rx->icrc_want = icrc(pkt, len - ROCE_ICRC_LEN);
	return 0;
}

#endif
