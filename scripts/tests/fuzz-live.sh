# SPDX-License-Identifier: GPL-2.0
#
# The campaign (issue 10): a structure-aware wire fuzzer aimed at a QP pair that runs
# verified traffic, two guests, rrxe on both.
#
# Guest b reads from guest a with xfer (RC RDMA READ of 64 KiB messages, every byte checked
# against the pattern of its iteration), in rounds of FUZZ_ROUND_ITERS iterations, one
# xfer pair (new QPs) per round, for as long as the fuzzer runs. Once the first round is
# connected, guest b starts roce_fuzz (tools/testing/rrxe/roce_fuzz.c) from its own address
# at guest a: FUZZ_COUNT (10^5) packets with valid IPv4/UDP headers and ICRC, every opcode,
# randomised BTH and extended headers, truncated and oversized ones, aimed at guest a's
# QP of the round with PSNs around the one it expects. The QPN and PSN come from xfer's
# own "remote address"/"local address" lines (a's QPN, and b's send PSN, which is a's
# expected receive PSN; `rdma resource show qp` is printed next to them); with -f eth0 the
# fuzzer then follows the PSNs guest b's READ requests advance to, and each new round's
# QPN. The packets come from guest b's address, so they pass "only the connected peer".
#
# Why READ: a hostile peer that sends what the IBA accepts (the expected PSN, a valid
# opcode) is obeyed, RoCE has no authentication. Had guest a a receive posted or remote
# write access, a fuzzed SEND or WRITE MIDDLE with the expected PSN would legitimately land
# its random bytes in the traffic's buffer, and a data mismatch would prove nothing. Guest
# a's QP here grants remote read only and posts no receive: fuzzed SENDs draw RNR NAKs,
# WRITEs and atomics a NAK (remote access, the QP enters ERR), READs with a wrong rkey a
# NAK; a duplicate READ is answered from the responder's resources (the original range).
# The fuzzer never sends guest a's live rkey as is (it is given as !RKEY, and the rkeys of
# later rounds are learned from the wire as live): only the baseline run's stale rkey, the
# live ones with another key byte, and random keys. So every way the traffic can end is
# either every byte right or an error completion the IBA gives for a peer's error.
#
# Checks:
#  - fuzz_baseline (a): before the fuzz, an xfer READ run completes (its rkey becomes the
#    fuzzer's stale rkey);
#  - fuzz_sent (b): roce_fuzz sent its FUZZ_COUNT (>= 10^5) packets and exited 0;
#  - fuzz_traffic (a): every round either completed with every byte right, or guest b's
#    xfer failed with one error completion of a status the IBA gives when the peer
#    misbehaves (remote access / invalid request / operational error, retry or RNR retry
#    exceeded, flushed, local QP operation or bad response error), after its last good
#    iteration, while guest a's side found no error of its own; a data mismatch, a changed
#    guard byte, a successful completion with a wrong opcode or length, a completion not
#    coming within xfer's -T (60 s), or an xfer killed by its timeout is a FAIL;
#  - fuzz_counters (a): guest a's port counters saw the fuzz: rcvd_pkts + rcvd_malformed +
#    rcvd_icrc_err grew by at least 95% of the packets sent (the wire is UDP between the
#    QEMUs and may lose a few); rcvd_icrc_err did not move (every fuzzed ICRC is right);
#    rcvd_malformed grew by at most the fuzzer's sure_malformed count (the packets an
#    RC/UC/UD/CNP receiver must refuse before the QP lookup: reserved or RD opcodes,
#    transport version, truncated, bad payload or pad; on the host rrxe's own parser
#    refuses exactly those, packet for packet) and by at least 95% of it; rcvd_unknown_qp
#    and rcvd_dropped moved (other QPNs, old rounds' QPs, wrong P_Keys and transports).
#    All counters are printed before and after;
#  - fuzz_device_works (a): after the fuzz, an xfer WRITE WITH IMMEDIATE run between the two
#    guests completes with every byte right;
# and the harness's "kernel clean" check on both guests (no warning, no leak, unload).
#
# FUZZ_SEED (default: the time) is printed: `roce_fuzz` replays its random choices from it.
# FUZZ_EXACT is the per mille of packets with exactly the expected PSN (1): nearly every one
# of those that is a request ends the round's QP (NAK, ERR), and the next round starts only
# once b's READ has failed (retry exceeded takes seconds), so more of them means fewer
# packets at a live QP.
. /usr/local/lib/rrxe/lib.sh

FUZZ_COUNT=${FUZZ_COUNT:-100000} FUZZ_RATE=${FUZZ_RATE:-1100} FUZZ_SEED=${FUZZ_SEED:-$(date +%s)}
FUZZ_EXACT=${FUZZ_EXACT:-1}
ROUND_ITERS=${FUZZ_ROUND_ITERS:-50} MAX_ROUNDS=80 ROUND_TMO=240
P_BASE=19500 P_WORKS=19501 P_ROUND=19510 CTL=19700 P_SUMMARY=19690
ROUND_OPTS=(-t rc -o read -s 65536 -n "$ROUND_ITERS" -T 60)
FAILED=0
ok() { local n=$1; shift; echo "RRXE-TEST $n ok${*:+ ($*)}"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
snap() {
	local f
	for f in /sys/class/infiniband/$DEV/ports/1/hw_counters/*; do
		[ "${f##*/}" = lifespan ] || echo "${f##*/} $(cat "$f")"
	done
}
# delta NAME: growth of counter NAME between /tmp/cnt.0 and /tmp/cnt.1.
delta() {
	awk -v n="$1" '$1 == n { v[FILENAME] = $2 } END { print v["/tmp/cnt.1"] - v["/tmp/cnt.0"] }' \
		/tmp/cnt.0 /tmp/cnt.1
}
# A line for tell_peer (no quotes, bounded).
oneline() { tr -d "'\"\n" | cut -c1-300; }

rdma_use rrxe
log "$RRXE_NAME: $DEV, GID index $GID"

# round_verdict OUT RC (guest b): how the xfer client of a round ended, one line:
#   pass ITERS | spec ITERS STATUS | peer ITERS | bad WHY
round_verdict() {
	local out=$1 rc=$2 errs fails n st
	errs=$(sed -n 's/^xfer: .*, \([0-9]*\) errors$/\1/p' "$out" | tail -1)
	# fail() lines of xfer: "client: ..." but for its informational ones.
	fails=$(grep '^client: ' "$out" | grep -vE '^client: ((rc|uc|ud) |PASS$|FAIL$)' |
		grep -vE '^client: (the peer reported failure$|iteration [0-9]+: the peer stopped)')
	if [ "$rc" = 0 ] && grep -qx 'client: PASS' "$out" && [ "${errs:-x}" = 0 ]; then
		echo "pass $ROUND_ITERS"
	elif [ "$rc" = 124 ]; then
		echo "bad xfer client killed after $ROUND_TMO s (hang)"
	elif [ "$rc" != 1 ] || [ -z "$errs" ]; then
		echo "bad xfer client exit status $rc: $(tail -1 "$out")"
	elif [ "$errs" = 0 ] && [ -z "$fails" ]; then
		n=$(sed -n 's/.*the peer stopped after \([0-9]*\) iterations.*/\1/p' "$out" | head -1)
		echo "peer ${n:-?}"
	elif [ "$errs" = 1 ] && [ "$(echo "$fails" | wc -l)" = 1 ] &&
		echo "$fails" | grep -q 'bad completion: status .* ([0-9]*), vendor_err'; then
		n=$(echo "$fails" | sed -n 's/^client: iteration \([0-9]*\):.*/\1/p')
		st=$(echo "$fails" | sed -n 's/.*bad completion: status \(.*\) (\([0-9]*\)), vendor_err.*/\2 \1/p')
		case "${st%% *}" in
		# IBV_WC_LOC_QP_OP_ERR, WR_FLUSH_ERR, BAD_RESP_ERR, REM_INV_REQ_ERR, REM_ACCESS_ERR,
		# REM_OP_ERR, RETRY_EXC_ERR, RNR_RETRY_EXC_ERR
		2 | 5 | 8 | 9 | 10 | 11 | 12 | 13) echo "spec $n ${st#* } (${st%% *})" ;;
		*) echo "bad $(echo "$fails" | oneline)" ;;
		esac
	else
		echo "bad $errs errors: $(echo "$fails" | head -3 | oneline)"
	fi
}

if [ "$RRXE_NAME" = b ]; then
	log "fuzz seed $FUZZ_SEED, $FUZZ_COUNT packets at $FUZZ_RATE/s, exact PSN $FUZZ_EXACT/1000"
	xfer_pair fuzz_baseline $P_BASE -t rc -o read -s 65536 -n 20
	stale=$(sed -n 's/.*remote address:.*rkey 0x\([0-9a-f]*\).*/\1/p' /tmp/client.out | tail -1)
	snap >/tmp/cnt.0
	rm -f /tmp/fuzz.rc /tmp/fuzz.out
	fuzzing=
	k=1
	while :; do
		out=/tmp/round$k.out
		connect_retry 150 "$out" timeout $ROUND_TMO xfer client -d "$DEV" -g "$GID" \
			-p $((P_ROUND + k)) "${ROUND_OPTS[@]}" "$RRXE_PEER" &
		c=$!
		if [ $k = 1 ]; then
			# The QP pair is up once xfer prints the peer's address: aim the fuzzer at it.
			for _ in $(seq 1200); do
				grep -q 'remote address:' "$out" 2>/dev/null && break
				kill -0 $c 2>/dev/null || break
				sleep 0.1
			done
			qpn=$(sed -n 's/.*remote address:.*QPN 0x\([0-9a-f]*\),.*/\1/p' "$out")
			psn=$(sed -n 's/.*local address: .*PSN 0x\([0-9a-f]*\),.*/\1/p' "$out")
			live=$(sed -n 's/.*remote address:.*rkey 0x\([0-9a-f]*\).*/\1/p' "$out")
			log "round 1: guest a's QPN 0x$qpn expects PSN 0x$psn; rkeys: live 0x$live," \
				"stale (baseline) 0x${stale:-none}"
			# The same from restrack (lqpn is b's QPN, rqpn a's; rq-psn and sq-psn as
			# rrxe's query_qp gives them: the values set at RTR/RTS), shown and compared.
			rdma -dd resource show qp link "$DEV/1" >/tmp/rdma-qp.out 2>&1
			sed 's/^/   /' /tmp/rdma-qp.out
			if [ -n "$qpn" ] && grep -qw "rqpn $((0x$qpn))" /tmp/rdma-qp.out; then
				log "rdma resource agrees: a QP of $DEV has rqpn $((0x$qpn))"
			else
				log "rdma resource shows no QP with rqpn 0x${qpn:-?} (xfer's word is used)"
			fi
			if [ -n "$qpn" ] && [ -n "$psn" ] && [ -n "$live" ]; then
				# Never the live rkey as is (!): with it the fuzzer could legitimately
				# READ the traffic's buffer into b's QP; the stale one may go as is.
				keys="${stale:+0x$stale,}!0x$live"
				log "roce_fuzz -f eth0 -r $FUZZ_RATE -e $FUZZ_EXACT $RRXE_IP $RRXE_PEER" \
					"$FUZZ_COUNT $FUZZ_SEED 0x$qpn:0x$psn $keys"
				( timeout $((600 * ${RRXE_TSCALE:-1})) roce_fuzz -f eth0 -r "$FUZZ_RATE" -e "$FUZZ_EXACT" "$RRXE_IP" "$RRXE_PEER" \
					"$FUZZ_COUNT" "$FUZZ_SEED" "0x$qpn:0x$psn" "$keys" >/tmp/fuzz.out 2>&1
				  echo $? >/tmp/fuzz.rc ) &
				fuzzing=$!
			else
				log "round 1: no QP details from xfer, no fuzzing"
			fi
		fi
		wait $c
		rc=$?
		sed "s/^/   round $k: /" "$out"
		v=$(round_verdict "$out" $rc)
		log "round $k: $v"
		more=stop
		[ -n "$fuzzing" ] && [ ! -e /tmp/fuzz.rc ] && [ $k -lt $MAX_ROUNDS ] && more=more
		tell_peer $((CTL + k)) "$more $(echo "$v" | oneline)" || die "cannot report to guest a"
		[ $more = more ] || break
		k=$((k + 1))
	done
	frc=noexec sent=0 sure=0
	if [ -n "$fuzzing" ]; then
		wait "$fuzzing"
		frc=$(cat /tmp/fuzz.rc 2>/dev/null)
		cat /tmp/fuzz.out
		sent=$(sed -n 's/.* sent=\([0-9]*\) sure_malformed=\([0-9]*\).*/\1/p' /tmp/fuzz.out)
		sure=$(sed -n 's/.* sent=\([0-9]*\) sure_malformed=\([0-9]*\).*/\2/p' /tmp/fuzz.out)
	fi
	if [ "$frc" = 0 ] && [ "${sent:-0}" -ge "$FUZZ_COUNT" ] && [ "${sent:-0}" -ge 100000 ]; then
		ok fuzz_sent "$sent packets, seed $FUZZ_SEED, in" \
			"$(sed -n 's/.* packets sent (.*) in \([0-9.]* s\)$/\1/p' /tmp/fuzz.out)"
	else
		bad fuzz_sent "roce_fuzz exit status ${frc:-none}, ${sent:-0} of $FUZZ_COUNT packets" \
			"sent (must be >= 100000)"
	fi
	snap >/tmp/cnt.1
	# b's own packets to a meanwhile (requests, retries): part of what a received.
	tell_peer $P_SUMMARY "${sent:-0} ${sure:-0} $(( $(delta sent_pkts) + $(delta retransmits) ))" ||
		die "cannot report to guest a"
	xfer_pair fuzz_device_works $P_WORKS -t rc -o write_imm -s 65536 -n 50
	log "guest b port counters after"
	rdma statistic show link "$DEV/1"
	exit $FAILED
fi

# --- guest a --------------------------------------------------------------------------------
xfer_pair fuzz_baseline $P_BASE -t rc -o read -s 65536 -n 20 || FAILED=1
snap >/tmp/cnt.0
log "guest a port counters before the fuzz: $(tr '\n' ' ' </tmp/cnt.0)"
k=1 npass=0 nspec=0 nbad=0 why= statuses=
while :; do
	timeout $ROUND_TMO xfer server -d "$DEV" -g "$GID" -p $((P_ROUND + k)) "${ROUND_OPTS[@]}" \
		>/tmp/round$k.out 2>&1 &
	s=$! started=$SECONDS
	report=$(hear $((CTL + k)) $((ROUND_TMO + 150)))
	# The server ends within ROUND_TMO (timeout's SIGTERM); one that outlives it by 30 s is
	# stuck where no signal reaches it, in the kernel: its kernel stack and every blocked
	# task go to the console (sysrq w), and the round is bad, instead of the group hanging.
	while kill -0 $s 2>/dev/null && [ $((SECONDS - started)) -lt $((ROUND_TMO + 30)) ]; do
		sleep 0.5
	done
	if kill -0 $s 2>/dev/null; then
		log "round $k: xfer server (pid $s) still there $((SECONDS - started)) s after it started; its stack:"
		cat /proc/$s/stack /proc/$s/task/*/stack 2>&1 | sort -u
		echo w 2>/dev/null >/proc/sysrq-trigger
		src=stuck
	else
		wait $s
		src=$?
	fi
	[ $src = 0 ] || absorb_client $((P_ROUND + k)) /tmp/round$k.out
	sed "s/^/   round $k: /" /tmp/round$k.out
	more=${report%% *} v=${report#* }
	aerrs=$(sed -n 's/^xfer: .*, \([0-9]*\) errors$/\1/p' /tmp/round$k.out | tail -1)
	# Guest a's own checks (its side of the connection) must hold in every round.
	if [ -z "$report" ]; then
		v="bad no report from guest b"
		more=stop
	elif [ "$src" = stuck ]; then
		v="bad xfer server stuck in the kernel (stack above)"
		more=stop
	elif [ "$src" = 124 ]; then
		v="bad xfer server killed after $ROUND_TMO s"
	elif [ "${aerrs:-x}" != 0 ]; then
		v="bad guest a's xfer found ${aerrs:-no count of} errors: $(grep -m1 '^server: ' /tmp/round$k.out)"
	elif [ "${v%% *}" = pass ] && [ "$src" != 0 ]; then
		v="bad guest b passed but guest a's xfer exited $src"
	elif [ "${v%% *}" = peer ]; then
		v="bad both sides stopped without an error completion"
	fi
	log "round $k: $v"
	case "$v" in
	pass*) npass=$((npass + 1)) ;;
	spec*) nspec=$((nspec + 1)); statuses="$statuses, ${v#spec * }" ;;
	*) nbad=$((nbad + 1)); [ -n "$why" ] || why="round $k: ${v#bad }" ;;
	esac
	[ "$more" = more ] || break
	k=$((k + 1))
done
summary=$(hear $P_SUMMARY 660)
read -r sent sure bsent <<<"$summary"
snap >/tmp/cnt.1
log "guest a port counters after the fuzz: $(tr '\n' ' ' </tmp/cnt.1)"
# "STATUS (N) xCOUNT, ..." of the rounds that ended by an error completion.
statuses=$(echo "${statuses#, }" | tr ',' '\n' | sed 's/^ //' | sort | uniq -c |
	awk '{c = $1; $1 = ""; printf "%s%s x%d", n++ ? ", " : "", substr($0, 2), c}')
if [ $nbad = 0 ] && [ $((npass + nspec)) -ge 1 ]; then
	ok fuzz_traffic "$k rounds: $npass with every byte right, $nspec ended by an error" \
		"completion${statuses:+ ($statuses)}"
else
	bad fuzz_traffic "$nbad of $k rounds wrong, first: $why"
fi

d_pkts=$(delta rcvd_pkts) d_mal=$(delta rcvd_malformed) d_icrc=$(delta rcvd_icrc_err)
d_unk=$(delta rcvd_unknown_qp) d_drop=$(delta rcvd_dropped)
# Everything guest a's rrxe took off the wire, less what guest b's own RDMA stack sent it
# (READ requests and their retries): at least that much of the fuzz arrived.
rx=$((d_pkts + d_mal + d_icrc)) fuzz_rx=$((d_pkts + d_mal + d_icrc - ${bsent:-0}))
log "fuzz: ${sent:-?} sent (${sure:-?} to be refused as malformed), guest b's stack sent" \
	"${bsent:-?}; guest a received $rx: rcvd_pkts +$d_pkts, rcvd_malformed +$d_mal," \
	"rcvd_icrc_err +$d_icrc, rcvd_unknown_qp +$d_unk, rcvd_dropped +$d_drop"
for c in sent_pkts send_rnr_err completions tx_paused replies_dropped send_err; do
	printf '   %s +%s\n' $c "$(delta $c)"
done
set --
if [ -z "$sent" ] || [ "$sent" = 0 ]; then
	set -- "no fuzz packets were sent"
elif [ $((fuzz_rx * 100)) -lt $((sent * 95)) ]; then
	set -- "$fuzz_rx fuzz packets arrived ($rx less guest b's $bsent), under 95% of $sent"
elif [ "$d_icrc" != 0 ]; then
	set -- "rcvd_icrc_err +$d_icrc: a valid ICRC was refused"
elif [ "$d_mal" -gt "$sure" ]; then
	set -- "rcvd_malformed +$d_mal, more than the $sure packets that must be refused"
elif [ $((d_mal * 100)) -lt $((sure * 95)) ]; then
	set -- "rcvd_malformed +$d_mal, under 95% of the $sure packets that must be refused"
elif [ "$d_unk" = 0 ] || [ "$d_drop" = 0 ]; then
	set -- "rcvd_unknown_qp +$d_unk, rcvd_dropped +$d_drop: one did not move"
fi
if [ $# = 0 ]; then
	ok fuzz_counters "$fuzz_rx of $sent arrived, malformed $d_mal of $sure, unknown QP" \
		"$d_unk, dropped $d_drop"
else
	bad fuzz_counters "$1"
fi

xfer_pair fuzz_device_works $P_WORKS -t rc -o write_imm -s 65536 -n 50 || FAILED=1
rdma statistic show link "$DEV/1"
exit $FAILED
