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

#include "roce_pkt.h"

/* Builds IP + UDP + BTH (opcode, tver, qpn, AckReq) + payload bytes 0, 1, ... + ICRC. */
static size_t build(uint8_t *p, uint32_t src, uint32_t dst, uint8_t opcode, uint8_t tver,
		    uint32_t qpn, uint32_t psn, int payload)
{
	struct roce_bth bth = { .opcode = opcode, .tver = tver, .qpn = qpn, .ackreq = 1,
				.psn = psn };
	uint8_t body[64];

	for (int i = 0; i < payload; i++)
		body[i] = i;
	return roce_build(p, src, dst, 0xc000, 0x1234, &bth, body, payload);
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
