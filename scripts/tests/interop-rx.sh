# SPDX-License-Identifier: GPL-2.0
#
# Interop, receive side: guest b (the C rdma_rxe) runs an ibv_rc_pingpong client against
# an ibv_rc_pingpong server on guest a's rrxe device; the pingpong must complete, and every
# packet the C driver sent must have reached guest a's QP through attribution, parsing and
# the ICRC and been taken by it: counted as rcvd_pkts, none dropped, malformed, with a bad
# ICRC or for an unknown QP.
# Over IPv4 by default; IRX_FAMILY=6 (interop-rx6.sh) uses the IPv6 link-local GIDs.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
counter() { cat /sys/class/infiniband/rrxe0/ports/1/hw_counters/"$1"; }
# pick_gid DEV: the RoCE v2 GID to use: the IPv4-mapped one, or with IRX_FAMILY=6 the IPv6
# link-local one (which appears once duplicate address detection is done).
pick_gid() {
	[ "${IRX_FAMILY:-4}" = 6 ] || { rrxe_gid_index "$1"; return; }
	local d=/sys/class/infiniband/$1/ports/1 f n try=0
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
	gid=$(pick_gid rxe0) || die "no RoCE v2 GID"
	i=0
	while :; do
		timeout 60 ibv_rc_pingpong -d rxe0 -g "$gid" -s 64 -n 5 -c "$RRXE_PEER" >/tmp/out 2>&1
		grep -q "Couldn't connect" /tmp/out || break
		i=$((i + 1))
		[ $i -lt 100 ] || die "client never reached the server"
		sleep 0.3
	done
	cat /tmp/out
	retry 50 0.2 sh -c "echo done | nc $RRXE_PEER 4002" || die "cannot reach guest a"
	exit 0
fi

modprobe rdma_rrxe || die "modprobe"
rdma link add rrxe0 type rrxe netdev eth0 || die "rdma link add"
gid=$(pick_gid rrxe0) || die "no RoCE v2 GID"
timeout 100 ibv_rc_pingpong -d rrxe0 -g "$gid" -s 64 -n 5 -c >/tmp/server 2>&1 &
server=$!
timeout 120 nc -l -p 4002 >/dev/null || die "guest b did not finish"
wait "$server"
rc=$?
cat /tmp/server
if [ $rc = 0 ] && grep -q "iters in" /tmp/server; then ok pingpong_with_rdma_rxe; else bad pingpong_with_rdma_rxe "server exit $rc"; fi
rdma statistic show link rrxe0/1
pk=$(counter rcvd_pkts)
if [ "$pk" -gt 0 ]; then ok rdma_rxe_packets_received; else bad rdma_rxe_packets_received "rcvd_pkts $pk"; fi
if [ "$(counter rcvd_dropped)" = 0 ]; then ok rdma_rxe_packets_taken_by_the_qp; else bad rdma_rxe_packets_taken_by_the_qp "rcvd_dropped $(counter rcvd_dropped)"; fi
if [ "$(counter rcvd_icrc_err)" = 0 ]; then ok rdma_rxe_icrc_verifies; else bad rdma_rxe_icrc_verifies "rcvd_icrc_err $(counter rcvd_icrc_err)"; fi
if [ "$(counter rcvd_malformed)" = 0 ]; then ok rdma_rxe_packets_parse; else bad rdma_rxe_packets_parse "rcvd_malformed $(counter rcvd_malformed)"; fi
if [ "$(counter rcvd_unknown_qp)" = 0 ]; then ok rdma_rxe_qpn_matches; else bad rdma_rxe_qpn_matches "rcvd_unknown_qp $(counter rcvd_unknown_qp)"; fi
if dmesg_check; then ok dmesg_clean; else bad dmesg_clean dmesg_check; fi
exit $FAILED
