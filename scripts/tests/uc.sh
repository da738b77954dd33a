# SPDX-License-Identifier: GPL-2.0
#
# UC end to end: ibv_uc_pingpong with data checks (-c) at 64 B, 4 KiB and 64 KiB (several
# packets per message, nothing acknowledged), guest a the server, guest b the client.
# UC_A / UC_B pick each guest's driver (rrxe or rxe; default rrxe). Guest a judges each run.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
if [ "$RRXE_NAME" = a ]; then DRV=${UC_A:-rrxe}; else DRV=${UC_B:-rrxe}; fi
rdma_use "$DRV"
tag="${UC_A:-rrxe}_${UC_B:-rrxe}"
for s in 64 4096 65536; do
	port=$((18960 + s % 97))
	if [ "$RRXE_NAME" = a ]; then
		timeout 90 ibv_uc_pingpong -d "$DEV" -g "$GID" -s $s -n 50 -c -p $port >/tmp/ud 2>&1
		rc=$?
		cat /tmp/ud
		if [ $rc = 0 ] && grep -q "iters in" /tmp/ud && ! grep -q "invalid data" /tmp/ud; then
			ok "uc_pingpong_${tag}_$s"
		else
			bad "uc_pingpong_${tag}_$s" "server exit $rc"
		fi
	else
		connect_retry 150 /tmp/ud timeout 90 ibv_uc_pingpong -d "$DEV" -g "$GID" -s $s -n 50 -c \
			-p $port "$RRXE_PEER"
		cat /tmp/ud
	fi
done
rdma statistic show link "$DEV/1"
if dmesg_check; then ok "uc_${tag}_dmesg_clean_$RRXE_NAME"; else bad "uc_${tag}_dmesg_clean_$RRXE_NAME" dmesg_check; fi
exit $FAILED
