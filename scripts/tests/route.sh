# SPDX-License-Identifier: GPL-2.0
#
# The route a QP keeps (engine/xmit.rs RouteCache) follows the routing tables. Guests a and
# b exchange 512 SENDs of 64 KiB each way (xfer -o send, every byte checked; guest a sends
# its messages or acknowledges b's all along); once the traffic flows, guest a routes guest
# b's address through a gateway that does not exist for 0.3 s, and removes the route:
#  - route_change_is_followed: guest a's next packets go to the gateway, whose address never
#    resolves: the neighbour table gains its entry, and from then on eth0 sends at most one
#    ARP request. A kept route that were not checked against the tables (dst_check) would
#    still lead straight to guest b: no packet would go to the gateway, and every packet
#    would leave eth0 (the driver sends few meanwhile, its retransmission timer backing off,
#    so their number is only reported);
#  - route_send_after_change: the transfer then completes (the route is looked up again
#    once the detour is gone; what was lost meanwhile is retried within retry_cnt).
# A blackhole route would not do: a lookup bound to an output interface that the tables
# refuse falls back to an on-link route (ip_route_output_key_hash_rcu), as in rdma_rxe.
. /usr/local/lib/rrxe/lib.sh

rdma_use rrxe
log "$RRXE_NAME: $DEV, GID index $GID"
CNT=/sys/class/infiniband/$DEV/ports/1/hw_counters
TXP=/sys/class/net/eth0/statistics/tx_packets
# An address on guest b's subnet that no guest has.
GW=${RRXE_PEER%.*}.254

if [ "$RRXE_NAME" = a ]; then
	(
		# Wait for the traffic to flow (2,000 packets sent), for at most 90 s.
		s0=$(cat $CNT/sent_pkts) i=0
		while [ $(($(cat $CNT/sent_pkts) - s0)) -lt 2000 ] && [ $i -lt 900 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		[ $i -lt 900 ] || { echo "none" >/tmp/route.win; exit 0; }
		# The counters are read with the detour in place, by the shell itself (no fork
		# between them and the route changes).
		ip route add "$RRXE_PEER/32" via "$GW" dev eth0
		read -r t0 <$TXP
		read -r s0 <$CNT/sent_pkts
		sleep 0.3
		read -r t1 <$TXP
		read -r s1 <$CNT/sent_pkts
		ip route del "$RRXE_PEER/32" via "$GW" dev eth0
		n=$(ip neigh show "$GW" dev eth0 | wc -l)
		echo "$n $((t1 - t0)) $((s1 - s0))" >/tmp/route.win
	) &
	win=$!
fi

XFER_TIMEOUT=150
xfer_pair route_send_after_change 18701 -o send -s 65536 -n 512 -q

if [ "$RRXE_NAME" = a ]; then
	wait $win
	read -r neigh txp sent </tmp/route.win
	log "in the 0.3 s of the detour: neighbour entries of $GW: $neigh, eth0 tx_packets +${txp:-?}, sent_pkts +${sent:-?}"
	if [ "$neigh" = none ]; then
		echo "RRXE-TEST route_change_is_followed FAIL: the traffic never flowed"
	elif [ "$neigh" -gt 0 ] && [ "$txp" -le 1 ]; then
		echo "RRXE-TEST route_change_is_followed ok (packets routed to $GW; meanwhile $sent sent, $txp left eth0)"
	else
		echo "RRXE-TEST route_change_is_followed FAIL: $sent packets sent, $txp left eth0, $neigh neighbour entries for $GW"
	fi
fi
