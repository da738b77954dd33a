# SPDX-License-Identifier: GPL-2.0
#
# RDMA CM end to end: rping (librdmacm) between the guests. The connection is set up by the
# kernel's connection manager, whose MADs travel over each device's QP1 (a kernel UD QP of
# the MAD layer); then rping's own RC QPs move data with SEND, RDMA READ and RDMA WRITE and
# verify it (-V). RP_A / RP_B pick each guest's driver (rrxe or rxe; default rrxe); guest a
# runs the server and judges.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
if [ "$RRXE_NAME" = a ]; then DRV=${RP_A:-rrxe}; else DRV=${RP_B:-rrxe}; fi
rdma_use "$DRV"
tag="${RP_A:-rrxe}_${RP_B:-rrxe}"
if [ "$RRXE_NAME" = a ]; then
	timeout 120 rping -s -a "$RRXE_IP" -V -C 20 -S 1024 >/tmp/rping 2>&1
	rc=$?
	cat /tmp/rping
	crc=$(hear 4101 150)
	if [ $rc = 0 ] && [ "$crc" = 0 ]; then ok "rping_$tag"; else bad "rping_$tag" "server exit $rc, client exit ${crc:-none}"; fi
else
	rping_client "$RRXE_PEER"
	rc=$?
	cat /tmp/rping
	tell_peer 4101 "$rc" || die "cannot report to guest a"
fi
rdma statistic show link "$DEV/1"
exit $FAILED
