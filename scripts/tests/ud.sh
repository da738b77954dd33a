# SPDX-License-Identifier: GPL-2.0
#
# UD and UC end to end: ibv_ud_pingpong (XP=ud, the default) at 64 B and 1000 B (the largest
# a 1024-byte path MTU carries after the 40-byte GRH), or ibv_uc_pingpong (XP=uc) at 64 B,
# 4 KiB and 64 KiB (several packets per message, nothing acknowledged), with data checks
# (-c); guest a the server, guest b the client. XP_A / XP_B pick each guest's driver (rrxe or
# rxe; default rrxe). Guest a judges each run.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
XP=${XP:-ud}
if [ "$RRXE_NAME" = a ]; then DRV=${XP_A:-rrxe}; else DRV=${XP_B:-rrxe}; fi
rdma_use "$DRV"
tag="${XP_A:-rrxe}_${XP_B:-rrxe}"
if [ "$XP" = uc ]; then sizes="64 4096 65536"; base=18960; else sizes="64 1000"; base=18950; fi
for s in $sizes; do
	port=$((base + s % 97))
	if [ "$RRXE_NAME" = a ]; then
		timeout 90 "ibv_${XP}_pingpong" -d "$DEV" -g "$GID" -s $s -n 50 -c -p $port >/tmp/xp 2>&1
		rc=$?
		cat /tmp/xp
		if [ $rc = 0 ] && grep -q "iters in" /tmp/xp && ! grep -q "invalid data" /tmp/xp; then
			ok "${XP}_pingpong_${tag}_$s"
		else
			bad "${XP}_pingpong_${tag}_$s" "server exit $rc"
		fi
	else
		connect_retry 150 /tmp/xp timeout 90 "ibv_${XP}_pingpong" -d "$DEV" -g "$GID" -s $s -n 50 -c \
			-p $port "$RRXE_PEER"
		cat /tmp/xp
	fi
done
rdma statistic show link "$DEV/1"
if dmesg_check; then ok "${XP}_${tag}_dmesg_clean_$RRXE_NAME"; else bad "${XP}_${tag}_dmesg_clean_$RRXE_NAME" dmesg_check; fi
exit $FAILED
