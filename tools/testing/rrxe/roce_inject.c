// SPDX-License-Identifier: GPL-2.0
/*
 * roce_inject: sends hand-made RoCEv2 packets (IPv4, UDP port 4791) through a raw socket,
 * to exercise a receiver with valid and hostile input:
 *   3 well-formed RC SEND ONLY packets to QP 0x123456 (a QP that does not exist),
 *   2 with a corrupted ICRC, 1 truncated, 1 with transport version 1, 1 with a reserved
 *   opcode (the last two with a correct ICRC).
 * Prints what it sent. Usage: roce_inject SRC_IPV4 DST_IPV4
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static uint32_t crc32_le(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xEDB88320u & -(crc & 1));
	}
	return crc;
}

/* RoCEv2 ICRC over an IPv4 packet (IP + UDP + BTH + rest, ICRC excluded). */
static uint32_t icrc(const uint8_t *pkt, size_t len)
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

/* Builds IP + UDP + BTH (opcode, tver, qpn) + 16-byte payload + ICRC; returns its length. */
static size_t build(uint8_t *p, uint32_t src, uint32_t dst, uint8_t opcode, uint8_t tver,
		    uint32_t qpn, uint32_t psn, int payload)
{
	size_t len = 20 + 8 + 12 + payload + 4;
	uint32_t c;

	memset(p, 0, len);
	p[0] = 0x45;
	p[2] = len >> 8;
	p[3] = len;
	p[4] = 0x12;
	p[5] = 0x34;			/* IP id: set, so the kernel keeps it */
	p[6] = 0x40;			/* DF */
	p[8] = 64;
	p[9] = IPPROTO_UDP;
	memcpy(p + 12, &src, 4);
	memcpy(p + 16, &dst, 4);
	p[20] = 0xc0;
	p[21] = 0x00;			/* source port 49152 */
	p[22] = 4791 >> 8;
	p[23] = 4791 & 0xff;
	p[24] = (len - 20) >> 8;
	p[25] = len - 20;
	p[40 - 12] = opcode;
	p[29] = tver & 0xf;
	p[30] = p[31] = 0xff;		/* P_Key */
	p[33] = qpn >> 16;
	p[34] = qpn >> 8;
	p[35] = qpn;
	p[36] = 0x80;			/* AckReq */
	p[37] = psn >> 16;
	p[38] = psn >> 8;
	p[39] = psn;
	for (int i = 0; i < payload; i++)
		p[40 + i] = i;
	c = icrc(p, len - 4);
	memcpy(p + len - 4, &c, 4);	/* little-endian on x86, as on the wire */
	return len;
}

int main(int argc, char **argv)
{
	struct sockaddr_in to = { .sin_family = AF_INET };
	uint8_t p[128];
	uint32_t src, dst;
	int one = 1, fd;
	size_t n;

	if (argc != 3 || inet_pton(AF_INET, argv[1], &src) != 1 ||
	    inet_pton(AF_INET, argv[2], &dst) != 1) {
		fprintf(stderr, "usage: %s SRC_IPV4 DST_IPV4\n", argv[0]);
		return 2;
	}
	fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &one, sizeof(one))) {
		perror("raw socket");
		return 1;
	}
	to.sin_addr.s_addr = dst;
#define SEND(buf, len) \
	do { \
		if (sendto(fd, buf, len, 0, (struct sockaddr *)&to, sizeof(to)) != (ssize_t)(len)) { \
			perror("sendto"); \
			return 1; \
		} \
		usleep(20000); \
	} while (0)
	for (int i = 0; i < 3; i++) {
		n = build(p, src, dst, 0x04, 0, 0x123456, i, 16);
		SEND(p, n);
	}
	printf("sent 3 valid packets to unknown QP 0x123456\n");
	for (int i = 0; i < 2; i++) {
		n = build(p, src, dst, 0x04, 0, 0x123456, 10 + i, 16);
		p[45] ^= 0x10;		/* a payload bit: the ICRC no longer matches */
		SEND(p, n);
	}
	printf("sent 2 packets with a bad ICRC\n");
	/* A UDP payload of 8 bytes: shorter than a BTH. */
	n = build(p, src, dst, 0x04, 0, 0x123456, 20, 16);
	p[2] = 0;
	p[3] = 36;
	p[24] = 0;
	p[25] = 16;
	SEND(p, 36);
	printf("sent 1 truncated packet\n");
	n = build(p, src, dst, 0x04, 1, 0x123456, 21, 16);
	SEND(p, n);
	printf("sent 1 packet with transport version 1\n");
	n = build(p, src, dst, 0x1f, 0, 0x123456, 22, 16);
	SEND(p, n);
	printf("sent 1 packet with reserved opcode 0x1f\n");
	close(fd);
	return 0;
}
