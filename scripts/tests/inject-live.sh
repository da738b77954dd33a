# SPDX-License-Identifier: GPL-2.0
#
# Hostile input at live RC QPs, two guests: guest a (rrxe) runs live_target, one RC QP per
# phase connected to guest b's IPv4-mapped GID, a 64 KiB region with remote read, write and
# atomic rights; guest b (no RDMA driver: it binds UDP port 4791 itself) runs live_peer,
# which gets the real QP numbers, first PSNs, rkey and address over TCP and aims hand-made
# RoCEv2 packets at them (tools/testing/rrxe/live_peer.c): valid WRITE, READ and FETCH_ADD,
# a duplicate, a PSN ahead, a wrong rkey, a WRITE past the region, a READ of 2^31-1 bytes, a
# misaligned atomic, a UD opcode, and a READ of the whole region across the PSN wrap.
#  - guest b checks each reply against the IBA (opcode, PSN, AETH syndrome, data, ICRC) and
#    that nothing else came back;
#  - guest a checks each QP's state afterwards (RTS, or ERR after a class C NAK, receive WQEs
#    flushed), that only the legitimate bytes of the region changed, that the port
#    counters agree with what guest b sent and received, and that the device still does a
#    loopback SEND.
# Both print every packet and reply; guest a prints the port counters before and after.
. /usr/local/lib/rrxe/lib.sh

PORT=19200
counters() {
	local f
	for f in /sys/class/infiniband/rrxe0/ports/1/hw_counters/*; do
		[ "${f##*/}" = lifespan ] || printf '%s=%s ' "${f##*/}" "$(cat "$f")"
	done
	echo
}

if [ "$RRXE_NAME" = b ]; then
	# live_peer waits (120 s at most) for live_target to listen.
	log "live_peer $RRXE_IP $RRXE_PEER $PORT"
	timeout 250 live_peer "$RRXE_IP" "$RRXE_PEER" "$PORT"
	rc=$?
	[ $rc = 0 ] || log "live_peer exit status $rc$([ $rc = 124 ] && echo ' (timeout)')"
	exit $rc
fi

rdma_use rrxe
log "rrxe0 GID $GID; port counters before: $(counters)"
log "live_target $DEV $GID $PORT"
timeout 250 live_target "$DEV" "$GID" "$PORT"
rc=$?
[ $rc = 0 ] || log "live_target exit status $rc$([ $rc = 124 ] && echo ' (timeout)')"
log "port counters after: $(counters)"
rdma statistic show link rrxe0/1
exit $rc
