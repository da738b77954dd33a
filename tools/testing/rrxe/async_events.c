// SPDX-License-Identifier: GPL-2.0
/*
 * async_events: the port's asynchronous events through libibverbs. With a context open on
 * DEVICE, takes NETDEV down and up again (ip link) and waits for IBV_EVENT_PORT_ERR, then
 * IBV_EVENT_PORT_ACTIVE, on the context's async fd (10 s each); then sets NETDEV up once
 * more, which changes nothing, and checks that no port event follows (1 s). Prints
 * "RRXE-TEST <name> ok|FAIL: ..." per check and exits non-zero if any failed.
 *
 * Usage: async_events DEVICE NETDEV
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "rrxe_test.h"

/* Waits up to @ms for an async event; returns its type, or -1 if none came. */
static int next_event(struct ibv_context *ctx, int ms, int *port)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int type;

	if (poll(&p, 1, ms) <= 0)
		return -1;
	if (ibv_get_async_event(ctx, &ev))
		return -1;
	type = ev.event_type;
	*port = ev.element.port_num;
	printf("# async event %s (%d), port %d\n", ibv_event_type_str(ev.event_type), type,
	       *port);
	ibv_ack_async_event(&ev);
	return type;
}

/* Runs "ip link set NETDEV STATE". */
static int link_set(const char *netdev, const char *state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "ip link set %s %s", netdev, state);
	return system(cmd);
}

/* Waits (up to 10 s) for event @want on port 1, skipping others (printed). */
static int wait_for(struct ibv_context *ctx, int want)
{
	double end = now_s() + 10;
	int port = 0;

	while (now_s() < end) {
		int type = next_event(ctx, 200, &port);

		if (type == want && port == 1)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	int port = 0, type;

	if (argc != 3) {
		fprintf(stderr, "usage: %s DEVICE NETDEV\n", argv[0]);
		return 2;
	}
	ctx = open_dev(argv[1]);
	if (!ctx) {
		check("async_open", 0, "ibv_open_device");
		return 1;
	}
	/* Nothing pending from before. */
	while (next_event(ctx, 100, &port) >= 0)
		;
	check("async_port_err_on_link_down",
	      !link_set(argv[2], "down") && wait_for(ctx, IBV_EVENT_PORT_ERR),
	      "no IBV_EVENT_PORT_ERR for port 1 within 10 s of the link going down");
	check("async_port_active_on_link_up",
	      !link_set(argv[2], "up") && wait_for(ctx, IBV_EVENT_PORT_ACTIVE),
	      "no IBV_EVENT_PORT_ACTIVE for port 1 within 10 s of the link coming up");
	/*
	 * The port state did not change: no port event (GID changes may still arrive, as the
	 * addresses come back after the link did).
	 */
	link_set(argv[2], "up");
	type = -1;
	for (double end = now_s() + 1; now_s() < end && type < 0;) {
		int t = next_event(ctx, 100, &port);

		if (t == IBV_EVENT_PORT_ACTIVE || t == IBV_EVENT_PORT_ERR)
			type = t;
	}
	check("async_no_event_without_change", type < 0,
	      "a port event came although the port state did not change");
	ibv_close_device(ctx);
	return failed;
}
