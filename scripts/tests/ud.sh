# SPDX-License-Identifier: GPL-2.0
#
# UD end to end: ibv_ud_pingpong with data checks (-c) at 64 B and 1000 B (the largest a
# 1024-byte path MTU carries after the 40-byte GRH), guest a the server, guest b the client.
# UD_A / UD_B pick each guest's driver (rrxe or rxe; default rrxe). Guest a judges each run.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
if [ "$RRXE_NAME" = a ]; then DRV=${UD_A:-rrxe}; else DRV=${UD_B:-rrxe}; fi
rdma_use "$DRV"
tag="${UD_A:-rrxe}_${UD_B:-rrxe}"
for s in 64 1000; do
	port=$((18950 + s % 100))
	if [ "$RRXE_NAME" = a ]; then
		timeout 90 ibv_ud_pingpong -d "$DEV" -g "$GID" -s $s -n 50 -c -p $port >/tmp/ud 2>&1
		rc=$?
		cat /tmp/ud
		if [ $rc = 0 ] && grep -q "iters in" /tmp/ud && ! grep -q "invalid data" /tmp/ud; then
			ok "ud_pingpong_${tag}_$s"
		else
			bad "ud_pingpong_${tag}_$s" "server exit $rc"
		fi
	else
		connect_retry 150 /tmp/ud timeout 90 ibv_ud_pingpong -d "$DEV" -g "$GID" -s $s -n 50 -c \
			-p $port "$RRXE_PEER"
		cat /tmp/ud
	fi
done
rdma statistic show link "$DEV/1"
if dmesg_check; then ok "ud_${tag}_dmesg_clean_$RRXE_NAME"; else bad "ud_${tag}_dmesg_clean_$RRXE_NAME" dmesg_check; fi
exit $FAILED
