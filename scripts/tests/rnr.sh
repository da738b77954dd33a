# SPDX-License-Identifier: GPL-2.0
#
# Receiver Not Ready over RC, two guests (tools/testing/rrxe/rc_rnr.c): guest a's QP is a
# responder without a receive WQE (min_rnr_timer 1), guest b SENDs to it.
#  - retry_exceeded: rnr_retry 1: the SEND completes with IBV_WC_RNR_RETRY_EXC_ERR on b,
#    and a sees no completion; no_retry: the same with rnr_retry 0 (the first RNR NAK ends it);
#  - recv_late_<size>: rnr_retry 7 (for ever), a posts its receive only once its driver
#    counted an RNR NAK (rc_rnr -W: the SEND was refused at least once, no timing
#    assumed): the SEND completes with success, a receives the right <size> bytes (64 B:
#    one packet; 64 KiB: a multi-packet message whose first packet is NAKed, the rest
#    dropped, all resent).
# a's driver must count the RNR NAKs it sends (send_rnr_err, both drivers):
# rnr_retry + 1 in the negative cases, at least one in the late ones (<name>_nak_count).
# RNR_A / RNR_B (default rrxe) pick each guest's driver: rrxe or rxe (the C rdma_rxe).
# Guest a judges (guest b tells it its exit status) and prints `RRXE-TEST rnr_<A>_<B>_...`
# lines; both guests print their port counters and end with dmesg_clean.
. /usr/local/lib/rrxe/lib.sh

RNR_A=${RNR_A:-rrxe} RNR_B=${RNR_B:-rrxe}
FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
counter() { cat "/sys/class/infiniband/$DEV/ports/1/hw_counters/$1" 2>/dev/null; }
# The counter of RNR NAKs sent by this device.
nak_counter() { echo "/sys/class/infiniband/$DEV/ports/1/hw_counters/send_rnr_err"; }
naks_sent() { cat "$(nak_counter)" 2>/dev/null; }
counters() {
	local d=/sys/class/infiniband/$DEV/ports/1/hw_counters f
	[ -d $d ] || { log "$DEV has no hw_counters"; return 0; }
	log "$RRXE_NAME: $DEV port counters"
	for f in "$d"/*; do [ -f "$f" ] && echo "   $(basename "$f") $(cat "$f")"; done
}

if [ "$RRXE_NAME" = a ]; then rdma_use "$RNR_A"; else rdma_use "$RNR_B"; fi
log "$RRXE_NAME: $DEV, GID index $GID"
DRV=${RNR_A}_${RNR_B}
PORT=18700

# rnr NAME NAKS SERVER_OPTS... -- CLIENT_OPTS...: rc_rnr server on a, client on b (see
# pair_run in lib.sh); both must exit 0, each checks its own side. NAKS: the number of RNR
# NAKs a must have sent (+: at least one).
rnr() {
	local name=rnr_${DRV}_$1 naks=$2 sopts=() n0 n1
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sopts+=("$1"); shift; done
	shift
	n0=$(naks_sent)
	pair_run "$name" $PORT 60 rc_rnr server -d "$DEV" -g "$GID" -p $PORT "${sopts[@]}" -- \
		rc_rnr client -d "$DEV" -g "$GID" -p $PORT "$@" || FAILED=1
	PORT=$((PORT + 1))
	[ "$RRXE_NAME" = a ] || return 0
	n1=$(naks_sent)
	if [ -z "$n0" ] || [ -z "$n1" ]; then
		bad "${name}_nak_count" "$DEV does not count the RNR NAKs it sends ($(nak_counter))"
		return 0
	fi
	log "RNR NAKs sent: $((n1 - n0))"
	if [ $((n1 - n0)) = "$naks" ] || { [ "$naks" = + ] && [ $((n1 - n0)) -ge 1 ]; }; then
		ok "${name}_nak_count"
	else
		bad "${name}_nak_count" "sent $((n1 - n0)) RNR NAKs, expected $naks"
	fi
}

rnr retry_exceeded 2 -- -r 1
rnr no_retry 1 -- -r 0
rnr recv_late_64 + -P -W "$(nak_counter)" -- -P -r 7
rnr recv_late_65536 + -P -W "$(nak_counter)" -s 65536 -- -P -r 7 -s 65536
counters

exit $FAILED
