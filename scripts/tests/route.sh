# SPDX-License-Identifier: GPL-2.0
#
# The route a QP keeps (engine/xmit.rs RouteCache) follows the routing tables. Guests a and
# b exchange 512 SENDs of 64 KiB each way (xfer -o send, every byte checked; guest a sends
# its messages or acknowledges b's all along); once the traffic flows, guest a puts a
# blackhole route to guest b in place for 0.2 s and removes it:
#  - route_blackhole_stops_sends: meanwhile guest a's packets do not go out: its port counts
#    failed sends (send_err) and eth0 sends next to nothing. A kept route that were not
#    checked against the tables would still be used, and the packets would still leave;
#  - route_send_after_blackhole: the transfer then completes (the route is looked up again
#    once the blackhole is gone; what was lost meanwhile is retried within retry_cnt).
. /usr/local/lib/rrxe/lib.sh

rdma_use rrxe
log "$RRXE_NAME: $DEV, GID index $GID"
CNT=/sys/class/infiniband/$DEV/ports/1/hw_counters
TXP=/sys/class/net/eth0/statistics/tx_packets

if [ "$RRXE_NAME" = a ]; then
	(
		# Wait for the traffic to flow (2,000 packets sent), for at most 90 s.
		s0=$(cat $CNT/sent_pkts) i=0
		while [ $(($(cat $CNT/sent_pkts) - s0)) -lt 2000 ] && [ $i -lt 900 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		[ $i -lt 900 ] || { echo "none" >/tmp/route.win; exit 0; }
		e0=$(cat $CNT/send_err) t0=$(cat $TXP) s0=$(cat $CNT/sent_pkts)
		ip route add blackhole "$RRXE_PEER/32"
		sleep 0.2
		e1=$(cat $CNT/send_err) t1=$(cat $TXP) s1=$(cat $CNT/sent_pkts)
		ip route del blackhole "$RRXE_PEER/32"
		echo "$((e1 - e0)) $((t1 - t0)) $((s1 - s0))" >/tmp/route.win
	) &
	win=$!
fi

XFER_TIMEOUT=150
xfer_pair route_send_after_blackhole 18701 -o send -s 65536 -n 512 -q

if [ "$RRXE_NAME" = a ]; then
	wait $win
	read -r errs txp sent </tmp/route.win
	log "in the 0.2 s of the blackhole: send_err +$errs, eth0 tx_packets +$txp, sent_pkts +${sent:-?}"
	if [ "$errs" = none ]; then
		echo "RRXE-TEST route_blackhole_stops_sends FAIL: the traffic never flowed"
	elif [ "$errs" -gt 0 ] && [ "$txp" -le 20 ]; then
		echo "RRXE-TEST route_blackhole_stops_sends ok ($errs sends failed, $txp packets left eth0)"
	else
		echo "RRXE-TEST route_blackhole_stops_sends FAIL: $errs sends failed, $txp packets left eth0"
	fi
fi
