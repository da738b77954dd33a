# SPDX-License-Identifier: GPL-2.0
#
# RC retransmission, two guests: guest b drops 5% of what it sends (netem on eth0: the
# client's requests and its ACKs/NAKs of the server's) while xfer (tools/testing/rrxe, see
# xfer_pair in scripts/guest/lib.sh) moves 64 KiB and 1 MiB SENDs, WRITEs with immediate and
# READs both ways, into and out of scatter/gather lists: every transfer must complete, with
# every byte checked on arrival, and both sides must end cleanly (xfer keeps its QP until
# the peer has all its completions: a lost last ACK is retried, not met by a destroyed QP).
# LOSS_A / LOSS_B (default rrxe) pick each guest's driver: rrxe or rxe (the C rdma_rxe).
# LOSS_RATE (default 5%) is netem's loss.
#
# Guest a prints RRXE-TEST loss_netem (guest b could add the qdisc), loss_<op>_<size> per run,
# loss_packets_dropped (netem did drop some). Both
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

XFER_TIMEOUT=${LOSS_TIMEOUT:-150}
xfer_pair loss_send_65536 18601 -s 65536 -n 10 -S 3 || FAILED=1
xfer_pair loss_send_1048576 18602 -s 1048576 -n 3 || FAILED=1
xfer_pair loss_write_imm_262144 18603 -o write_imm -s 262144 -n 4 -S 2 || FAILED=1
xfer_pair loss_read_262144 18604 -o read -s 262144 -n 4 -S 3 || FAILED=1
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
exit $FAILED
