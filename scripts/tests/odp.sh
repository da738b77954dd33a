# SPDX-License-Identifier: GPL-2.0
#
# On-demand paging memory regions (IBV_ACCESS_ON_DEMAND), two guests, guest a the server;
# ODP_A / ODP_B pick each guest's driver (rrxe or rxe, the C rdma_rxe; default rrxe). The
# memory of every ODP run is mapped fresh and registered before it is touched: nothing is
# present for the device until it faults it in (rrxe: RNR NAKs from the responder, waiting
# requests and READ responses, resolved in process context; see Documentation).
#  - xfer -O (see xfer_pair in lib.sh; ODP on the rrxe sides, pinned memory on an rdma_rxe
#    side): every byte of every message both ways checked: RC SEND of 4 KiB and 64 KiB
#    into 3-entry scatter lists, RC WRITE with immediate and RC READ of 256 KiB, UD SEND of
#    1024 B;
#  - xfer -O -R: RC READ and WRITE with immediate of 256 KiB x 30 while a racer thread on
#    each rrxe side invalidates the region all along (fork(): every page write-protected,
#    so the device's mapping goes while the data stays; MADV_DONTNEED of spare pages of the
#    same region): still every byte right;
#  - rdma-core's ibv_rc_pingpong -o (ODP), and -o -P (prefetched with ibv_advise_mr), -c;
#  - on each rrxe guest, that those runs met pages not present and had them resolved
#    (odp_page_faults, odp_faults_resolved): ODP was in use, not pinned memory;
#  - at the end, on guest a alone when both run rrxe: odp_rules (tools/testing/rrxe, loopback
#    on one device): capabilities, implicit ODP refused, WRITE/READ/atomic/SEND on memory not
#    present, MADV_DONTNEED and fork() between transfers, prefetch, the advice to refuse, a
#    WRITE into unmapped memory and munmap racing WRITEs in flight. On guest b when it runs
#    rdma_rxe, the same for reference (RRXE-REF lines, not counted).
# Guest a judges each pair run and prints `RRXE-TEST odp_<A>_<B><ODP_TAG>_...` lines
# (odp_rules: `odp_rules<ODP_TAG>_...`); ODP_TAG names a variant (odp-smp.sh: _smp).
. /usr/local/lib/rrxe/lib.sh

FAILED=0
if [ "$RRXE_NAME" = a ]; then DRV=${ODP_A:-rrxe}; else DRV=${ODP_B:-rrxe}; fi
rdma_use "$DRV"
tag="${ODP_A:-rrxe}_${ODP_B:-rrxe}${ODP_TAG:-}"
port=19300
XFER_TIMEOUT=180
# xfer's memory is ODP on the rrxe side(s). rdma_rxe (7.3.4) is the wire peer with pinned
# memory: its ODP copy ignores the offset in the page and does not advance through the
# buffer (rxe_odp.c, __rxe_odp_mr_copy), so any transfer not page-aligned and one page
# long lands in the wrong place there (odp_rules' RRXE-REF lines show it).
ODP=() RACE=()
if [ "$DRV" = rrxe ]; then ODP=(-O) RACE=(-O -R); fi
for s in 4096 65536; do
	xfer_pair "odp_${tag}_rc_send_$s" $((port += 1)) "${ODP[@]}" -t rc -s $s -n 20 -S 3 || FAILED=1
done
xfer_pair "odp_${tag}_rc_write_imm_262144" $((port += 1)) "${ODP[@]}" -t rc -o write_imm -s 262144 -n 10 -S 2 || FAILED=1
xfer_pair "odp_${tag}_rc_read_262144" $((port += 1)) "${ODP[@]}" -t rc -o read -s 262144 -n 10 -S 3 || FAILED=1
xfer_pair "odp_${tag}_ud_send_1024" $((port += 1)) "${ODP[@]}" -t ud -s 1024 -n 20 || FAILED=1
xfer_pair "odp_${tag}_race_read_262144" $((port += 1)) "${RACE[@]}" -t rc -o read -s 262144 -n 30 || FAILED=1
xfer_pair "odp_${tag}_race_write_imm_262144" $((port += 1)) "${RACE[@]}" -t rc -o write_imm -s 262144 -n 30 || FAILED=1
for o in "-o" "-o -P"; do
	n=odp_${tag}_rc_pingpong${o// /}_65536
	pair_run "${n//-/_}" $((port += 1)) 120 \
		ibv_rc_pingpong -d "$DEV" -g "$GID" $o -c -s 65536 -n 20 -p $port -- \
		ibv_rc_pingpong -d "$DEV" -g "$GID" $o -c -s 65536 -n 20 -p $port || FAILED=1
done
# The runs above met pages that were not present, and resolved them: ODP was in use.
if [ "$DRV" = rrxe ]; then
	hc=/sys/class/infiniband/$DEV/ports/1/hw_counters
	pf=$(cat "$hc/odp_page_faults" 2>/dev/null) fr=$(cat "$hc/odp_faults_resolved" 2>/dev/null)
	if [ "${pf:-0}" -gt 0 ] && [ "${fr:-0}" -gt 0 ]; then
		echo "RRXE-TEST odp_${tag}_faults_counted_$RRXE_NAME ok ($pf page faults met, $fr resolved)"
	else
		echo "RRXE-TEST odp_${tag}_faults_counted_$RRXE_NAME FAIL: odp_page_faults '${pf:-missing}', odp_faults_resolved '${fr:-missing}'"
		FAILED=1
	fi
fi
if [ "${ODP_A:-rrxe}${ODP_B:-rrxe}" = rrxerrxe ] && [ "$RRXE_NAME" = a ]; then
	log "odp_rules on $DEV (loopback)"
	timeout 300 odp_rules "$DEV" "$GID" | sed "s/^RRXE-TEST odp_/RRXE-TEST odp_rules${ODP_TAG:-}_/" ||
		FAILED=1
elif [ "$DRV" = rxe ] && [ "$RRXE_NAME" = b ]; then
	log "odp_rules on $DEV (loopback), rdma_rxe for reference"
	timeout 300 odp_rules "$DEV" "$GID" -k rxe |
		sed -e 's/^RRXE-TEST \(odp_[a-z_]*\) ok.*/RRXE-REF \1 rdma_rxe pass/' \
			-e 's/^RRXE-TEST \(odp_[a-z_]*\) FAIL: \(.*\)/RRXE-REF \1 rdma_rxe fail: \2/'
fi
# One completion vector per CPU, as rdma_rxe reports (the guests of the _smp run have two).
if [ "$DRV" = rrxe ] && [ "${ODP_TAG:-}" = _smp ] && [ "$RRXE_NAME" = a ]; then
	possible=$(cat /sys/devices/system/cpu/possible)	# "0-1"
	cpus=$((${possible##*[-,]} + 1))
	vec=$(ibv_devinfo -v -d "$DEV" | awk '/num_comp_vectors:/ {print $2}')
	if [ "${vec:-0}" = "$cpus" ] && [ "$cpus" -gt 1 ]; then
		echo "RRXE-TEST comp_vectors_one_per_cpu ok ($vec vectors, $cpus CPUs)"
	else
		echo "RRXE-TEST comp_vectors_one_per_cpu FAIL: num_comp_vectors '${vec:-missing}', CPUs $possible"
		FAILED=1
	fi
fi
rdma statistic show link "$DEV/1"
dump_counters "end of the ODP runs"
exit $FAILED
