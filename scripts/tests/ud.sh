# SPDX-License-Identifier: GPL-2.0
#
# UD and UC end to end, two guests, guest a the server and guest b the client; XP=ud (the
# default) or XP=uc, XP_A / XP_B pick each guest's driver (rrxe or rxe; default rrxe).
#  - xfer (tools/testing/rrxe, see xfer_pair in lib.sh): every byte of every message both
#    ways checked against a pattern of its side, sequence number and offset: UD at 64 B and
#    1024 B (a full 1024-byte path MTU; the receive buffer holds the 40-byte GRH first),
#    into a 3-entry scatter list too; UC SENDs at 64 B, 4 KiB and 64 KiB (several packets a
#    message, nothing acknowledged) and UC WRITE with immediate at 64 KiB;
#  - rdma-core's stock ibv_ud_pingpong / ibv_uc_pingpong, for the rxe provider's view of
#    the device (no data claim: their -c compares one byte a page).
# Guest a judges each run from both sides' exit status and prints
# `RRXE-TEST <xp>_<what>_<A>_<B>_<size>` lines.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
XP=${XP:-ud}
if [ "$RRXE_NAME" = a ]; then DRV=${XP_A:-rrxe}; else DRV=${XP_B:-rrxe}; fi
rdma_use "$DRV"
tag="${XP_A:-rrxe}_${XP_B:-rrxe}"
port=18950
if [ "$XP" = uc ]; then
	port=18970
	for s in 64 4096 65536; do
		xfer_pair "uc_xfer_send_${tag}_$s" $((port += 1)) -t uc -s $s -n 30 || FAILED=1
	done
	xfer_pair "uc_xfer_send_sges_${tag}_65536" $((port += 1)) -t uc -s 65536 -n 10 -S 3 || FAILED=1
	xfer_pair "uc_xfer_write_imm_${tag}_65536" $((port += 1)) -t uc -o write_imm -s 65536 -n 10 -S 2 || FAILED=1
	sizes="64 4096"
else
	for s in 64 1024; do
		xfer_pair "ud_xfer_send_${tag}_$s" $((port += 1)) -t ud -s $s -n 30 || FAILED=1
	done
	xfer_pair "ud_xfer_send_sges_${tag}_1024" $((port += 1)) -t ud -s 1024 -n 10 -S 3 || FAILED=1
	sizes="64 1000"
fi
for s in $sizes; do
	pair_run "${XP}_pingpong_${tag}_$s" $((port += 1)) 90 \
		"ibv_${XP}_pingpong" -d "$DEV" -g "$GID" -s $s -n 20 -p $port -- \
		"ibv_${XP}_pingpong" -d "$DEV" -g "$GID" -s $s -n 20 -p $port || FAILED=1
done
rdma statistic show link "$DEV/1"
exit $FAILED
