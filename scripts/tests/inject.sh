# SPDX-License-Identifier: GPL-2.0
#
# Hostile and valid input from the wire, two guests: guest b sends hand-made RoCEv2 packets
# (tools/testing/rrxe/roce_inject.c) to guest a's rrxe device; guest a checks that each one
# ended in the right port counter and that the kernel stayed clean.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
counter() { cat /sys/class/infiniband/rrxe0/ports/1/hw_counters/"$1"; }
expect_delta() { # NAME COUNTER BEFORE DELTA
	local now
	now=$(counter "$2")
	if [ "$((now - $3))" = "$4" ]; then ok "$1"; else bad "$1" "$2 went from $3 to $now, expected +$4"; fi
}

if [ "$RRXE_NAME" = b ]; then
	# Wait until guest a's device is up, inject, then tell it.
	retry 150 0.2 sh -c "echo ready | nc $RRXE_PEER 4001" || die "guest a not ready"
	roce_inject "$RRXE_IP" "$RRXE_PEER" || die "roce_inject"
	retry 50 0.2 sh -c "echo done | nc $RRXE_PEER 4002" || die "cannot reach guest a"
	exit 0
fi

modprobe rdma_rrxe || die "modprobe"
rdma link add rrxe0 type rrxe netdev eth0 || die "rdma link add"
for c in rcvd_pkts rcvd_icrc_err rcvd_malformed rcvd_unknown_qp rcvd_dropped; do
	eval "before_$c=$(counter $c)"
done
timeout 60 nc -l -p 4001 >/dev/null || die "no word from guest b"
timeout 60 nc -l -p 4002 >/dev/null || die "guest b did not finish"
# The packets may still be on their way: wait (10 s at most) until every counter reached its
# expected value, then judge (an extra count after that shows as a wrong delta too).
arrived() {
	[ $(($(counter rcvd_pkts) - before_rcvd_pkts)) -ge 3 ] &&
		[ $(($(counter rcvd_unknown_qp) - before_rcvd_unknown_qp)) -ge 3 ] &&
		[ $(($(counter rcvd_icrc_err) - before_rcvd_icrc_err)) -ge 2 ] &&
		[ $(($(counter rcvd_malformed) - before_rcvd_malformed)) -ge 3 ]
}
retry 100 0.1 arrived || log "not every counter reached its expected value in 10 s"
expect_delta valid_packets_counted rcvd_pkts "$before_rcvd_pkts" 3
expect_delta unknown_qp_counted rcvd_unknown_qp "$before_rcvd_unknown_qp" 3
expect_delta bad_icrc_counted rcvd_icrc_err "$before_rcvd_icrc_err" 2
expect_delta malformed_counted rcvd_malformed "$before_rcvd_malformed" 3
expect_delta nothing_dropped rcvd_dropped "$before_rcvd_dropped" 0
rdma statistic show link rrxe0/1
if rmmod rdma_rrxe; then ok rmmod_after_injection; else bad rmmod_after_injection rmmod; fi
exit $FAILED
