# SPDX-License-Identifier: GPL-2.0
#
# RDMA CM multicast end to end: mckey (librdmacm) between the guests. Both join the group
# 239.1.2.3 through rdma_cm (for RoCE: the IGMP join, and the device's multicast attach of
# the UD QP, whose Ethernet address the driver adds to the netdevice's filter); guest a
# receives, guest b sends 20 datagrams of 100 bytes to the group (destination QP 0xffffff,
# the group's Q_Key), which guest a's driver delivers to its attached QP; mckey checks that
# every one arrives. MK_A / MK_B pick each guest's driver (rrxe or rxe; default rrxe);
# guest a judges.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
if [ "$RRXE_NAME" = a ]; then DRV=${MK_A:-rrxe}; else DRV=${MK_B:-rrxe}; fi
rdma_use "$DRV"
tag="${MK_A:-rrxe}_${MK_B:-rrxe}"
GROUP=239.1.2.3
# The guests' routes cover their /24 only: multicast goes out of eth0.
ip route add 224.0.0.0/4 dev eth0
if [ "$RRXE_NAME" = a ]; then
	# Line-buffered (stdbuf): mckey's stdout is a file, which stdio would flush only at
	# exit, so the wait below would never see the line and a slow guest's mckey would time
	# out before guest b even started to send.
	timeout 120 stdbuf -oL mckey -m "$GROUP" -b "$RRXE_IP" -C 20 -S 100 >/tmp/mckey 2>&1 &
	pid=$!
	# Joined (and the QP attached to the group) once mckey waits for the datagrams.
	retry 600 0.1 grep -q "receiving data transfers" /tmp/mckey ||
		bad "mckey_$tag" "mckey never reported its join"
	tell_peer 4201 joined || bad "mckey_$tag" "cannot reach guest b"
	wait $pid
	rc=$?
	cat /tmp/mckey
	msg=$(hear 4202 150)
	crc=${msg%% *} sent=${msg#* }
	if [ $rc = 0 ] && [ "$crc" = 0 ] && grep -q "data transfers complete" /tmp/mckey; then
		ok "mckey_$tag"
	else
		bad "mckey_$tag" "receiver exit $rc, sender exit ${crc:-none}"
	fi
	# The Performance Management counters of rrxe's port (ports/1/counters, which the core
	# reads through process_mad) count the 20 datagrams as multicast: received here,
	# sent on guest b (which reports its count), wherever rrxe is.
	rcvd=$(cat "/sys/class/infiniband/$DEV/ports/1/counters/multicast_rcv_packets")
	why=
	[ "$DRV" != rrxe ] || [ "$rcvd" -ge 20 ] 2>/dev/null || why="multicast_rcv_packets $rcvd here"
	[ "${MK_B:-rrxe}" != rrxe ] || [ "$sent" -ge 20 ] 2>/dev/null || why="$why multicast_xmit_packets $sent on guest b"
	if [ -z "$why" ]; then ok "mckey_counters_$tag"; else bad "mckey_counters_$tag" "$why (20 datagrams)"; fi
	ip maddr show dev eth0
else
	[ "$(hear 4201 150)" = joined ] || echo "guest a did not join"
	timeout 60 stdbuf -oL mckey -m "$GROUP" -b "$RRXE_IP" -s -C 20 -S 100 >/tmp/mckey 2>&1
	rc=$?
	cat /tmp/mckey
	tell_peer 4202 "$rc $(cat "/sys/class/infiniband/$DEV/ports/1/counters/multicast_xmit_packets")" ||
		die "cannot report to guest a"
fi
rdma statistic show link "$DEV/1"
exit $FAILED
