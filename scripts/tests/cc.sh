# SPDX-License-Identifier: GPL-2.0
#
# RoCEv2 congestion control through a marking bottleneck, two guests. Guest b (the client,
# the data's sender: the reaction point) shapes its egress with a token bucket (tbf,
# CC_RATE, default 20mbit: below what a guest sends even on a slow host) whose queue is
# RED with ECN: above its thresholds it marks ECN-capable packets CE and drops the others.
# Guest a (the server, the data's receiver:
# the notification point) answers CE marks with CNPs. CC_A / CC_B (default rrxe) pick each
# guest's driver: rrxe or rxe (the C rdma_rxe, which sends nothing ECN-capable and ignores
# the CE mark). rdma_rxe cannot be guest b: RED's early drop returns NET_XMIT_CN, which
# rdma_rxe's rxe_xmit_packet() takes for a failed send, completing the WQE with
# IB_WC_LOC_QP_OP_ERR and moving the QP to ERR (rrxe counts it a lost packet and resends).
#
# Each run is `ib_write_bw -q CC_QPS (default 8) -s 65536 -n CC_ITERS (default 40)` from b
# to a, twice: congestion control off (both points disabled in debugfs
# <dev>/cc_params), then on (b's reaction point, a's notification point). Guest a prints
# RRXE-TEST:
#  - cc_<tag>_off_run, cc_<tag>_on_run: each run completed every iteration on both sides;
#  - cc_<tag>_off_wire (rrxe on b): with congestion control off the queue marked nothing
#    (no packet was ECN-capable) and a sent no CNP: the wire is what it was without it;
#  - cc_<tag>_on_signals (rrxe on both): with it on, the queue marked packets CE, a counted
#    them (np_ecn_marked_roce_packets) and sent CNPs (np_cnp_sent), b took them
#    (rp_cnp_handled);
#  - cc_<tag>_on_fewer_losses (rrxe on both): the queue lost at least 10 times fewer of
#    b's packets with congestion control on than off (RED's early drops: the off run's
#    packets are not ECN-capable, so RED drops where it would mark; with it on only the
#    TCP of the test's own control may be dropped); b's go-backs (completer_retry_err)
#    are shown, not judged: the datagram wire between the QEMUs loses a few packets of
#    its own under load (a run saw 10 go-backs with it on against 6 without, for 0 and
#    55 queue losses). RED's drops at its hard limit are no loss:
#    the qdisc refuses the packet, and rrxe waits and sends it again as on a full
#    transmit queue (tx_paused);
#  - cc_<tag>_xfer_write, cc_<tag>_xfer_read: verified transfers (xfer) with it on, through
#    the same bottleneck (READ responses go from a to b, unshaped; the requests and CNPs
#    cross it).
# Both guests print a table line `CC-RESULT <tag> <off|on> ...` per run: the bandwidth
# perftest reported, the queue's sent/dropped/marked packets and the transport counters.
. /usr/local/lib/rrxe/lib.sh

CC_A=${CC_A:-rrxe} CC_B=${CC_B:-rrxe} CC_RATE=${CC_RATE:-20mbit}
CC_QPS=${CC_QPS:-8} CC_ITERS=${CC_ITERS:-40}
tag="${CC_A}_${CC_B}_q$CC_QPS"
FAILED=0
ok() { echo "RRXE-TEST $1 ok${2:+ $2}"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
if [ "$RRXE_NAME" = a ]; then DRV=$CC_A; else DRV=$CC_B; fi
rdma_use "$DRV"
CTL=18700 TMO=240
cnt() { cat "/sys/class/infiniband/$DEV/ports/1/hw_counters/$1" 2>/dev/null || echo 0; }
knobs=/sys/kernel/debug/$DEV/cc_params
# cc ON|OFF: this guest's point (a: notification, b: reaction), where rrxe runs.
cc() {
	[ "$DRV" = rrxe ] || return 0
	[ -d $knobs ] || die "$knobs missing"
	if [ "$RRXE_NAME" = a ]; then echo "$1" >$knobs/np_enable; else echo "$1" >$knobs/rp_enable; fi
	# CC_KNOBS: "name=value ..." of cc_params, set on both guests (e.g. rates scaled to
	# the bottleneck).
	local kv
	for kv in ${CC_KNOBS:-}; do echo "${kv#*=}" >"$knobs/${kv%%=*}"; done
}
# qstat: "sent early pdrop marked" packets of the RED queue on guest b's eth0: early are
# its probabilistic drops (packets lost: RED returns success to the sender), pdrop those
# over its hard limit (refused: the sender sees ENOBUFS and sends them again later).
qstat() {
	tc -s qdisc show dev eth0 | awk '
		/qdisc red/ { red = 1 }
		red && /Sent/ { for (i = 1; i <= NF; i++) if ($i == "pkt") s = $(i - 1) }
		red && /marked/ { for (i = 1; i <= NF; i++) { if ($i == "marked") m = $(i + 1); if ($i == "early") e = $(i + 1); if ($i == "pdrop") p = $(i + 1) } }
		END { print s + 0, e + 0, p + 0, m + 0 }'
}
# counters: this guest's transport counters of a run, "name=value ...".
counters() {
	local n out=
	for n in sent_pkts retransmits completer_retry_err rcvd_seq_err tx_paused np_ecn_marked_roce_packets \
		np_cnp_sent rp_cnp_handled rp_cnp_ignored; do
		out="$out $n=$(cnt $n)"
	done
	echo "${out# }"
}
# delta BEFORE AFTER: the per-counter differences of two `counters` lines.
delta() {
	echo "$1 / $2" | awk '{ for (i = 1; i <= NF; i++) { if ($i == "/") { m = i; break } split($i, kv, "="); b[kv[1]] = kv[2] }
		for (i = m + 1; i <= NF; i++) { split($i, kv, "="); printf "%s%s=%d", sep, kv[1], kv[2] - b[kv[1]]; sep = " " } print "" }'
}
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

if [ "$RRXE_NAME" = b ]; then
	tc qdisc add dev eth0 root handle 1: tbf rate "$CC_RATE" burst 16kb latency 400ms &&
		tc qdisc add dev eth0 parent 1:1 handle 10: red limit 400000 min 15000 max 60000 \
			avpkt 1100 burst 20 probability 0.1 bandwidth "$CC_RATE" ecn ||
		die "cannot set up the bottleneck (CONFIG_NET_SCH_TBF, CONFIG_NET_SCH_RED?)"
	tc qdisc show dev eth0
fi
log "$RRXE_NAME: $DEV, GID index $GID"

port=$CTL
for mode in off on; do
	port=$((port + 1))
	if [ $mode = on ]; then cc 1; else cc 0; fi
	opts=(-d "$DEV" -x "$GID" -F -p $port -q "$CC_QPS" -s 65536 -n "$CC_ITERS" -u 18)
	before=$(counters)
	[ "$RRXE_NAME" = b ] && qb=$(qstat)
	if [ "$RRXE_NAME" = a ]; then
		hear $((port + 100)) $((2 * TMO + 30)) >/tmp/cc.client </dev/null &
		l=$!
		timeout $TMO ib_write_bw "${opts[@]}" >/tmp/cc.out 2>&1
		rc=$?
		if [ $rc = 0 ]; then tail -3 /tmp/cc.out; else cat /tmp/cc.out; fi
		wait $l
		read -r crc bw theirs </tmp/cc.client
		mine=$(delta "$before" "$(counters)")
		echo "CC-RESULT $tag $mode a: $mine"
		echo "CC-RESULT $tag $mode b: bw_MBps=${bw:-none} $theirs"
		if [ $rc = 0 ] && [ "${crc:-x}" = 0 ]; then ok "cc_${tag}_${mode}_run" "(${bw} MB/s)"
		else bad "cc_${tag}_${mode}_run" "server exit $rc, client exit ${crc:-none}"; fi
		eval "A_$mode=\"\$mine\" B_$mode=\"\$theirs\""
	else
		connect_retry 150 /tmp/cc.out timeout $TMO ib_write_bw "${opts[@]}" "$RRXE_PEER"
		rc=$?
		if [ $rc = 0 ]; then tail -3 /tmp/cc.out; else cat /tmp/cc.out; fi
		# perftest's result line: bytes, iterations, peak, average MB/s, msg rate.
		bw=$(awk '$1 ~ /^[0-9]+$/ && NF >= 4 && $2 ~ /^[0-9]+$/ { b = $4 } END { print b + 0 }' /tmp/cc.out)
		read -r s e p m <<<"$(qstat)"
		read -r s0 e0 p0 m0 <<<"$qb"
		mine="$(delta "$before" "$(counters)") q_sent=$((s - s0)) q_early=$((e - e0)) q_pdrop=$((p - p0)) q_marked=$((m - m0))"
		tell_peer $((port + 100)) "$rc $bw $mine" || die "cannot report to guest a"
	fi
done
cc 1

if [ "$RRXE_NAME" = a ]; then
	if [ "$CC_B" = rrxe ]; then
		m=$(field "$B_off" q_marked) c=$(field "$A_off" np_cnp_sent)
		if [ "${m:-x}" = 0 ] && [ "${c:-x}" = 0 ]; then ok "cc_${tag}_off_wire"
		else bad "cc_${tag}_off_wire" "with congestion control off: marked '$m', CNPs sent '$c'"; fi
	fi
	if [ "$CC_A$CC_B" = rrxerrxe ]; then
		m=$(field "$B_on" q_marked) e=$(field "$A_on" np_ecn_marked_roce_packets)
		c=$(field "$A_on" np_cnp_sent) h=$(field "$B_on" rp_cnp_handled)
		if [ "${m:-0}" -gt 0 ] && [ "${e:-0}" -gt 0 ] && [ "${c:-0}" -gt 0 ] && [ "${h:-0}" -gt 0 ]; then
			ok "cc_${tag}_on_signals" "(marked $m, CE seen $e, CNPs sent $c, handled $h)"
		else
			bad "cc_${tag}_on_signals" "marked '$m', CE seen '$e', CNPs sent '$c', handled '$h'"
		fi
		loff=$(field "$B_off" q_early) lon=$(field "$B_on" q_early)
		goff=$(field "$B_off" completer_retry_err) gon=$(field "$B_on" completer_retry_err)
		roff=$(field "$B_off" retransmits) ron=$(field "$B_on" retransmits)
		if [ "${loff:-0}" -ge $((${lon:-0} * 10 + 10)) ]; then
			ok "cc_${tag}_on_fewer_losses" "(queue losses $lon with, $loff without; go-backs $gon/$goff, resent $ron/$roff)"
		else
			bad "cc_${tag}_on_fewer_losses" "queue losses '$lon' with, '$loff' without (go-backs $gon/$goff)"
		fi
	fi
fi

XFER_TIMEOUT=$TMO
xfer_pair "cc_${tag}_xfer_write" $((CTL + 50)) -o write_imm -s 262144 -n 8 -S 2 || FAILED=1
xfer_pair "cc_${tag}_xfer_read" $((CTL + 51)) -o read -s 262144 -n 8 -S 2 || FAILED=1
[ "$RRXE_NAME" = b ] && tc -s qdisc show dev eth0
ip -s link show dev eth0
dump_counters "end of run"
exit $FAILED
