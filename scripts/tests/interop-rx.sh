# SPDX-License-Identifier: GPL-2.0
#
# Interop, receive side: guest b (the C rdma_rxe) is the client of servers on guest a's rrxe
# device: rdma-core's ibv_rc_pingpong, then xfer (tools/testing/rrxe: SEND, WRITE with
# immediate and READ, every byte checked both ways, see xfer_pair in lib.sh). Both sides'
# exit status is judged. Then guest a's port counters, compared with their values before the
# traffic: the packets the C driver sent were received (a positive count first, so the
# error counters below cannot pass on a run where nothing arrived), and none was dropped,
# malformed, had a bad ICRC or named an unknown QP.
# Over IPv4 by default; IRX_FAMILY=6 (interop-rx6.sh) uses the IPv6 link-local GIDs, after
# duplicate address detection.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
counter() { cat /sys/class/infiniband/rrxe0/ports/1/hw_counters/"$1"; }
# pick_gid DEV: the RoCE v2 GID to use: the IPv4-mapped one, or with IRX_FAMILY=6 the IPv6
# link-local one.
pick_gid() {
	[ "${IRX_FAMILY:-4}" = 6 ] || { rrxe_gid_index "$1"; return; }
	local d=/sys/class/infiniband/$1/ports/1 f n try=0
	# The GID is listed while the address is still tentative; a QP cannot use it before
	# duplicate address detection is done (each guest waits for its own; the client
	# sends its address only after that, and the server uses it only then).
	wait_ipv6_dad eth0 30 || return 1
	while [ $try -lt 100 ]; do
		for f in "$d"/gids/*; do
			n=${f##*/}
			case "$(cat "$f" 2>/dev/null)" in
			fe80:*) [ "$(cat "$d/gid_attrs/types/$n" 2>/dev/null)" = "RoCE v2" ] && { echo "$n"; return 0; } ;;
			esac
		done
		try=$((try + 1))
		sleep 0.1
	done
	return 1
}

if [ "$RRXE_NAME" = b ]; then
	rdma_link rdma_rxe rxe rxe0
	DEV=rxe0
else
	rdma_link rdma_rrxe rrxe rrxe0
	DEV=rrxe0
	for c in rcvd_pkts rcvd_icrc_err rcvd_malformed rcvd_unknown_qp rcvd_dropped; do
		eval "before_$c=$(counter $c)"
	done
fi
GID=$(pick_gid $DEV) || die "no RoCE v2 GID"
log "$RRXE_NAME: $DEV, GID index $GID"
v=${IRX_FAMILY:-4}

pair_run "pingpong_with_rdma_rxe_ipv$v" 18500 60 \
	ibv_rc_pingpong -d $DEV -g "$GID" -s 64 -n 5 -p 18500 -- \
	ibv_rc_pingpong -d $DEV -g "$GID" -s 64 -n 5 -p 18500 || FAILED=1
xfer_pair "xfer_send_with_rdma_rxe_ipv$v" 18501 -s 65536 -n 5 -S 2 || FAILED=1
xfer_pair "xfer_write_imm_with_rdma_rxe_ipv$v" 18502 -o write_imm -s 65536 -n 5 || FAILED=1
xfer_pair "xfer_read_with_rdma_rxe_ipv$v" 18503 -o read -s 65536 -n 5 -S 3 || FAILED=1
[ "$RRXE_NAME" = a ] || exit 0

rdma statistic show link rrxe0/1
# delta COUNTER: its growth since the start.
delta() { echo $(($(counter "$1") - $(eval echo "\$before_$1"))); }
pk=$(delta rcvd_pkts)
# 4 runs of at least 5 messages each way: well over 20 packets reached the QPs.
if [ "$pk" -ge 20 ]; then ok "rdma_rxe_packets_received_ipv$v"; else bad "rdma_rxe_packets_received_ipv$v" "rcvd_pkts +$pk"; fi
errs=
for c in rcvd_dropped rcvd_icrc_err rcvd_malformed rcvd_unknown_qp; do
	[ "$(delta $c)" = 0 ] || errs="$errs $c +$(delta $c)"
done
if [ "$pk" -lt 20 ]; then
	bad "rdma_rxe_packets_all_taken_ipv$v" "too little traffic to judge (rcvd_pkts +$pk)"
elif [ -z "$errs" ]; then
	ok "rdma_rxe_packets_all_taken_ipv$v"
else
	bad "rdma_rxe_packets_all_taken_ipv$v" "$errs"
fi
exit $FAILED
