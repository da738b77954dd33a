# SPDX-License-Identifier: GPL-2.0
#
# Capture test, both guests: the C rdma_rxe produces every traffic type rdma-core's tools
# generate (RC SEND first/middle/last/only with pad, RDMA WRITE, RDMA READ, both atomics,
# UC, UD) while the harness captures the wire (qemu.sh --pcap). Guest a serves, guest b is
# the client, retried until the server listens. The host then checks every packet with
# rrxe-decode (parse, ICRC, rebuild).
. /usr/local/lib/rrxe/lib.sh
rdma_link rdma_rxe rxe rxe0
gid=$(rrxe_gid_index rxe0) || die "no RoCE v2 GID"

# Each step has its own TCP port and a time limit on both sides, and a failed step does not
# stop the others: the host judges the capture by the opcodes it holds, so one step that
# fails (and its missing opcodes) shows up there, never as a silently shorter run.
# Iteration counts (-n), not durations: perftest's duration mode depends on the guest
# clock, which is noisy under TCG.
PORT=18300
FAILED=0
run() {
	PORT=$((PORT + 1))
	if [ "$RRXE_NAME" = a ]; then
		log "server: $* (port $PORT)"
		timeout 90 "$@" -p $PORT >/tmp/out 2>&1 || { tail -5 /tmp/out; log "$1: server failed"; FAILED=1; }
	else
		log "client: $* (port $PORT)"
		connect_retry 150 /tmp/out timeout 90 "$@" -p $PORT "$RRXE_PEER" ||
			{ tail -5 /tmp/out; log "$1: client failed"; FAILED=1; }
	fi
}
run ibv_rc_pingpong -d rxe0 -g "$gid" -s 4096 -n 4
run ibv_rc_pingpong -d rxe0 -g "$gid" -s 3 -n 4
run ibv_uc_pingpong -d rxe0 -g "$gid" -s 2048 -n 4
run ibv_ud_pingpong -d rxe0 -g "$gid" -s 512 -n 4
run ib_write_bw -d rxe0 -x "$gid" -s 3000 -n 200
run ib_read_bw -d rxe0 -x "$gid" -s 3000 -n 200
run ib_atomic_bw -d rxe0 -x "$gid" -n 200
run ib_atomic_bw -d rxe0 -x "$gid" -n 200 -A CMP_AND_SWAP
run ib_send_bw -d rxe0 -x "$gid" -s 100 -n 200
log "capture done"
exit $FAILED
