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

# perftest's statistics refuse to report when the guest clock is too noisy under TCG ("Can't
# produce a report", r^2 < 0.9), after the traffic ran: that is no failure for a capture,
# which the host checks for every expected opcode anyway.
report_only() { grep -q "Can't produce a report" /tmp/out && log "$1: traffic done, no report (noisy clock)"; }
run() {
	if [ "$RRXE_NAME" = a ]; then
		log "server: $*"
		"$@" >/tmp/out 2>&1 || report_only "$1" || { cat /tmp/out; die "$1 failed"; }
	else
		log "client: $*"
		retry 40 0.5 sh -c '"$@" "$RRXE_PEER" >/tmp/out 2>&1 ||
			grep -q "Can'"'"'t produce a report" /tmp/out || { tail -3 /tmp/out; exit 1; }' sh "$@" ||
			die "$1 failed"
		sleep 0.5
	fi
}
run ibv_rc_pingpong -d rxe0 -g "$gid" -s 4096 -n 4
run ibv_rc_pingpong -d rxe0 -g "$gid" -s 3 -n 4
run ibv_uc_pingpong -d rxe0 -g "$gid" -s 2048 -n 4
run ibv_ud_pingpong -d rxe0 -g "$gid" -s 512 -n 4
run ib_write_bw -d rxe0 -x "$gid" -s 3000 -D 1
run ib_read_bw -d rxe0 -x "$gid" -s 3000 -D 1
run ib_atomic_bw -d rxe0 -x "$gid" -D 1
run ib_atomic_bw -d rxe0 -x "$gid" -D 1 -A CMP_AND_SWAP
run ib_send_bw -d rxe0 -x "$gid" -s 100 -D 1
dmesg_check || die "kernel log"
log "capture done"
