# SPDX-License-Identifier: GPL-2.0
#
# RC retransmission, two guests: guest b drops 5% of what it sends (netem on eth0: the
# client's requests and its ACKs/NAKs of the server's) while xfer (tools/testing/rrxe, see
# xfer_pair in scripts/guest/lib.sh) moves 64 KiB and 1 MiB SENDs, WRITEs with immediate and
# READs both ways, into and out of scatter/gather lists: every transfer must complete, with
# every byte checked on arrival, and both sides must end cleanly (xfer keeps its QP until
# the peer has all its completions: a lost last ACK is retried, not met by a destroyed QP).
# LOSS_A / LOSS_B (default rrxe) pick each guest's driver: rrxe or rxe (the C rdma_rxe).
# LOSS_RATE (default 5%) is netem's loss.
#
# The netem matrix (netem-*.sh) runs the same transfers under other impairments: NETEM is
# netem's arguments (default "loss $LOSS_RATE"), NETEM_BOTH=1 impairs guest a's egress too
# (both directions), PFX names the checks (default loss), NETEM_RUNS=short runs the three
# shorter transfers only.
#
# NETEM_SEEN lists what must show that the impairment reached RoCE packets and rrxe's
# recovery, summed over both guests: rrxe port counters (e.g. retransmits,
# duplicate_request, out_of_seq_request) or `corrupted` (rcvd_icrc_err plus the UDP and IP
# checksum errors of /proc/net/snmp: a flipped bit is caught by the first check that covers
# it). Default for loss: retransmits. Judged only with rrxe on both guests.
#
# With loss (PFX loss) and rrxe on both guests, each guest records the transport's retry
# tracepoint (rdma_sw:rdma_sw_retry) all along: <PFX>_retries_traced checks that each guest
# traced exactly as many retries for a timeout or a sequence NAK as its completer_retry_err
# counter counted, and more than none in all.
#
# Guest a prints RRXE-TEST <PFX>_netem (the qdisc is in place on each impaired guest),
# <PFX>_<op>_<size> per run, <PFX>_seen (each of NETEM_SEEN is above 0), and
# <PFX>_packets_dropped (netem did drop some; only when NETEM loses packets). Both print
# their port counters.
. /usr/local/lib/rrxe/lib.sh

LOSS_A=${LOSS_A:-rrxe} LOSS_B=${LOSS_B:-rrxe} LOSS_RATE=${LOSS_RATE:-5%}
NETEM=${NETEM:-loss $LOSS_RATE} NETEM_BOTH=${NETEM_BOTH:-0} PFX=${PFX:-loss}
NETEM_SEEN=${NETEM_SEEN:-retransmits}
FAILED=0
ok() { echo "RRXE-TEST $1 ok${2:+ $2}"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
counters() {
	local d=/sys/class/infiniband/$DEV/ports/1/hw_counters f
	[ -d $d ] || { log "$DEV has no hw_counters"; return 0; }
	log "$RRXE_NAME: $DEV port counters"
	for f in "$d"/*; do [ -f "$f" ] && echo "   $(basename "$f") $(cat "$f")"; done
}
# seen_values: "name=value ..." for each of NETEM_SEEN on this guest; a counter that does
# not exist is "name=missing".
seen_values() {
	local d=/sys/class/infiniband/$DEV/ports/1/hw_counters n v out=
	for n in $NETEM_SEEN; do
		case $n in
		corrupted)
			v=$(cat $d/rcvd_icrc_err 2>/dev/null) || v=missing
			[ "$v" = missing ] || v=$((v + $(snmp Udp InCsumErrors) + $(snmp Ip InHdrErrors)))
			;;
		*) v=$(cat "$d/$n" 2>/dev/null) || v=missing ;;
		esac
		out="$out $n=$v"
	done
	echo "${out# }"
}
# snmp PROTO FIELD: a counter of /proc/net/snmp (its header line names the fields).
snmp() {
	awk -v p="$1:" -v f="$2" '$1 == p { if (!h) { for (i = 2; i <= NF; i++) if ($i == f) c = i; h = 1; next } print (c ? $c : 0); exit }' /proc/net/snmp
}
CTL=18590

# Impairs this guest's egress (everything it sends: the TCP exchanges too, which TCP repairs).
impair() {
	# shellcheck disable=SC2086 # NETEM is a list of netem arguments
	if tc qdisc add dev eth0 root netem $NETEM 2>/tmp/tc.err; then
		tc qdisc show dev eth0
	else
		cat /tmp/tc.err
		echo "netem failed: $(head -1 /tmp/tc.err)"
		return 1
	fi
}

if [ "$RRXE_NAME" = b ]; then
	if impair >/tmp/impair.log; then
		cat /tmp/impair.log
		tell_peer $CTL netem ok || die "cannot reach guest a"
	else
		cat /tmp/impair.log
		tell_peer $CTL "$(tail -1 /tmp/impair.log)"
		die "tc qdisc add dev eth0 root netem $NETEM failed (no CONFIG_NET_SCH_NETEM?)"
	fi
	rdma_use "$LOSS_B"
else
	rdma_use "$LOSS_A"
	netem=$(hear $CTL 120)
	mine="netem ok"
	if [ "$NETEM_BOTH" = 1 ]; then
		impair >/tmp/impair.log || mine="guest a: $(tail -1 /tmp/impair.log)"
		cat /tmp/impair.log
	fi
	if [ "$netem" = "netem ok" ] && [ "$mine" = "netem ok" ]; then
		ok "${PFX}_netem"
	else
		bad "${PFX}_netem" "guest b: ${netem:-no word}; $mine"
		exit 1
	fi
fi
log "$RRXE_NAME: $DEV, GID index $GID"
TR=/sys/kernel/tracing TRACED=
if [ "$PFX" = loss ] && [ "$LOSS_A$LOSS_B" = rrxerrxe ]; then
	{ [ -d $TR/events ] || mount -t tracefs nodev $TR; } &&
		echo 1 >$TR/events/rdma_sw/rdma_sw_retry/enable && echo >$TR/trace && TRACED=1
fi

XFER_TIMEOUT=${LOSS_TIMEOUT:-150}
xfer_pair "${PFX}_send_65536" 18601 -s 65536 -n 10 -S 3 || FAILED=1
[ "${NETEM_RUNS:-}" = short ] || xfer_pair "${PFX}_send_1048576" 18602 -s 1048576 -n 3 || FAILED=1
xfer_pair "${PFX}_write_imm_262144" 18603 -o write_imm -s 262144 -n 4 -S 2 || FAILED=1
xfer_pair "${PFX}_read_262144" 18604 -o read -s 262144 -n 4 -S 3 || FAILED=1
counters
if [ "$RRXE_NAME" = b ] || [ "$NETEM_BOTH" = 1 ]; then tc -s qdisc show dev eth0; fi
if [ "$LOSS_A$LOSS_B" = rrxerrxe ]; then
	mine=$(seen_values)
	if [ -n "$TRACED" ]; then
		echo 0 >$TR/events/rdma_sw/rdma_sw_retry/enable
		grep rdma_sw_retry: $TR/trace | tail -5 | sed 's/^/   trace: /'
		mine="$mine traced=$(grep -c 'rdma_sw_retry:.*cause=\(timeout\|sequence NAK\)' $TR/trace)"
		mine="$mine counted=$(cat /sys/class/infiniband/$DEV/ports/1/hw_counters/completer_retry_err)"
	fi
	log "$RRXE_NAME: $mine"
	if [ "$RRXE_NAME" = b ]; then
		tell_peer $((CTL + 2)) "$mine" || die "cannot reach guest a"
	else
		theirs=$(hear $((CTL + 2)) 60)
		why=
		for n in $NETEM_SEEN; do
			va=$(echo "$mine" | tr ' ' '\n' | sed -n "s/^$n=//p")
			vb=$(echo "$theirs" | tr ' ' '\n' | sed -n "s/^$n=//p")
			case "$va/$vb" in
			*missing* | /* | */) why="$why $n: a ${va:-none}, b ${vb:-none};" ;;
			*) [ $((va + vb)) -gt 0 ] || why="$why $n 0 on both guests;" ;;
			esac
		done
		if [ -z "$why" ]; then ok "${PFX}_seen" "a: $mine; b: $theirs"
		else bad "${PFX}_seen" "the impairment left no trace:$why"; fi
		if [ "$PFX" = loss ]; then
			# field STRING NAME: NAME's value in a "name=value ..." string.
			field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
			ta=$(field "$mine" traced) ca=$(field "$mine" counted)
			tb=$(field "$theirs" traced) cb=$(field "$theirs" counted)
			if [ -n "$ta" ] && [ "$ta" = "$ca" ] && [ -n "$tb" ] && [ "$tb" = "$cb" ] &&
				[ $((ta + tb)) -gt 0 ]; then
				ok "${PFX}_retries_traced" "(a: $ta traced, $ca counted; b: $tb traced, $cb counted)"
			else
				bad "${PFX}_retries_traced" "a: '$ta' traced, '$ca' counted; b: '$tb' traced, '$cb' counted"
			fi
		fi
	fi
fi
case " $NETEM " in *" loss "*) ;; *) exit $FAILED ;; esac

if [ "$RRXE_NAME" = b ]; then
	dropped=$(tc -s qdisc show dev eth0 | sed -n 's/.*dropped \([0-9]*\).*/\1/p' | head -1)
	tell_peer $((CTL + 1)) "${dropped:-0}" || die "cannot reach guest a"
else
	dropped=$(hear $((CTL + 1)) 60)
	if [ "${dropped:-0}" -gt 0 ]; then
		ok "${PFX}_packets_dropped"
	else
		bad "${PFX}_packets_dropped" "netem on guest b dropped '${dropped}' packets"
	fi
fi
exit $FAILED
