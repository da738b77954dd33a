# SPDX-License-Identifier: GPL-2.0
#
# The Performance Management agent over the wire: guest a (PMA_A: rrxe or rxe, default rrxe;
# rdma_rxe never gets a response, see scripts/check.sh) sends PerfMgmt MADs from its QP1 through the user MAD interface (pma_query) to QP1 of
# guest b, on rrxe, whose MAD layer hands them to rrxe's process_mad; the replies must come
# back as GetResps the sender's MAD layer matches (see tools/testing/rrxe/pma_query.c).
# rdma_rxe is no responder here: its process_mad replies with a zeroed MAD header, which no
# requester matches (every query times out). Over the IPv6 link-local GIDs: ib_core's MAD
# layer cannot match a response that came over IPv4 (see pma_query.c). Guest a judges.
. /usr/local/lib/rrxe/lib.sh

# ll_gid DEV: prints the index and the GID of DEV's RoCE v2 GID of eth0's link-local address.
ll_gid() {
	local d=/sys/class/infiniband/$1/ports/1 f n
	for f in "$d"/gids/*; do
		n=${f##*/}
		case "$(cat "$f")" in fe80:*) ;; *) continue ;; esac
		[ "$(cat "$d/gid_attrs/types/$n" 2>/dev/null)" = "RoCE v2" ] || continue
		echo "$n $(cat "$f")"
		return 0
	done
	return 1
}
wait_ipv6_dad || die "IPv6 DAD"
if [ "$RRXE_NAME" = a ]; then
	rdma_use "${PMA_A:-rrxe}"
	set -- $(retry 50 0.1 ll_gid "$DEV") || die "no link-local RoCE v2 GID on $DEV"
	index=$1
	set -- $(hear 4301 150)
	[ "$1" = ready ] || die "guest b is not ready"
	ping -6 -c 1 -W 5 "$(echo "$2" | sed 's/^fe80:0000:0000:0000:/fe80::/')%eth0" >/dev/null || echo "ping -6 failed"
	timeout 120 pma_query "$DEV" "$index" "$2"
	rc=$?
	rdma statistic show link "$DEV/1"
	(exit $rc)
	rc=$?
	tell_peer 4302 done
	exit $rc
else
	rdma_use rrxe
	set -- $(retry 50 0.1 ll_gid rrxe0) || die "no link-local RoCE v2 GID on rrxe0"
	tell_peer 4301 ready "$2" || die "cannot reach guest a"
	hear 4302 150 >/dev/null
	cat /sys/class/infiniband/rrxe0/ports/1/counters/port_rcv_packets
	rdma statistic show link rrxe0/1
fi
