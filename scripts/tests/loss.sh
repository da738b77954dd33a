# SPDX-License-Identifier: GPL-2.0
#
# RC retransmission, two guests: guest b drops 5% of what it sends (netem on eth0: the
# client's SEND packets and its ACKs/NAKs of the server's SENDs) while ibv_rc_pingpong -c
# exchanges 64 KiB and 1 MiB messages (server on guest a, client on guest b, see
# rc_pingpong in scripts/guest/lib.sh): every transfer must complete, with correct data.
# LOSS_A / LOSS_B (default rrxe) pick each guest's driver: rrxe or rxe (the C rdma_rxe).
# LOSS_RATE (default 5%) is netem's loss.
#
# Guest a prints RRXE-TEST loss_netem (guest b could add the qdisc), loss_<size> per run,
# loss_packets_dropped (netem did drop some) and dmesg_clean; guest b dmesg_clean. Both
# print their port counters (hw_counters; rdma_rxe's count retransmissions and sequence
# errors) without judging them.
. /usr/local/lib/rrxe/lib.sh

LOSS_A=${LOSS_A:-rrxe} LOSS_B=${LOSS_B:-rrxe} LOSS_RATE=${LOSS_RATE:-5%}
FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
counters() {
	local d=/sys/class/infiniband/$DEV/ports/1/hw_counters f
	[ -d $d ] || { log "$DEV has no hw_counters"; return 0; }
	log "$RRXE_NAME: $DEV port counters"
	for f in "$d"/*; do [ -f "$f" ] && echo "   $(basename "$f") $(cat "$f")"; done
}
CTL=18590

if [ "$RRXE_NAME" = b ]; then
	# The loss applies to everything b sends (the TCP exchanges too, which TCP repairs).
	if tc qdisc add dev eth0 root netem loss "$LOSS_RATE" 2>/tmp/tc.err; then
		tc qdisc show dev eth0
		tell_peer $CTL netem ok || die "cannot reach guest a"
	else
		cat /tmp/tc.err
		tell_peer $CTL "netem failed: $(head -1 /tmp/tc.err)"
		die "tc qdisc add dev eth0 root netem loss $LOSS_RATE failed (no CONFIG_NET_SCH_NETEM?)"
	fi
	rdma_use "$LOSS_B"
else
	rdma_use "$LOSS_A"
	netem=$(hear $CTL 120)
	if [ "$netem" = "netem ok" ]; then
		ok loss_netem
	else
		bad loss_netem "guest b: ${netem:-no word}"
		exit 1
	fi
fi
log "$RRXE_NAME: $DEV, GID index $GID"

PP_TIMEOUT=${LOSS_TIMEOUT:-120}
rc_pingpong loss_65536 65536 10 || FAILED=1
rc_pingpong loss_1048576 1048576 3 || FAILED=1
counters

if [ "$RRXE_NAME" = b ]; then
	tc -s qdisc show dev eth0
	dropped=$(tc -s qdisc show dev eth0 | sed -n 's/.*dropped \([0-9]*\).*/\1/p' | head -1)
	tell_peer $((CTL + 1)) "${dropped:-0}" || die "cannot reach guest a"
else
	dropped=$(hear $((CTL + 1)) 60)
	if [ "${dropped:-0}" -gt 0 ]; then
		ok loss_packets_dropped
	else
		bad loss_packets_dropped "netem on guest b dropped '${dropped}' packets"
	fi
fi
if dmesg_check; then ok dmesg_clean; else bad dmesg_clean dmesg_check; fi
exit $FAILED
