#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench-cc`: congestion control through a marking bottleneck (scripts/tests/cc.sh:
# guest b's egress shaped by tbf to CC_RATE with an ECN-marking RED queue), ib_write_bw
# of 64 KiB from b to a with CC_QPS QPs, congestion control off then on, for each QP
# count of CC_BENCH_QPS (default "1 8 64"; the iterations per QP scale so that each run
# moves about the same bytes). The table (QPs, off/on, perftest's bandwidth, the queue's
# CE marks and early drops, the sender's go-backs and resent packets, CNPs sent and
# handled, and Jain's index of the QPs' shares with the smallest and largest share
# relative to the fair one, from a capture of guest a's wire: bytes per QP in the middle
# half of each run, scripts/bench/cc-fairness.py) lands in build/cc-bench/results.txt and
# on stdout. On the test kernel: this
# measures the transport's behaviour under congestion, not speed. CC_KNOBS ("name=value
# ...", files of debugfs <dev>/cc_params) is set on both guests, e.g. DCQCN's rate steps
# scaled to the bottleneck: CC_KNOBS="rp_ai_rate=5 rp_hai_rate=50 rp_min_rate=1".
set -euo pipefail
. "$(dirname "$0")/lib.sh"
CLIPPY=1 "$REPO/scripts/kernel.sh"
out=$BUILD/cc-bench
rm -rf "$out"
mkdir -p "$out"
for q in ${CC_BENCH_QPS:-1 8 64}; do
	iters=$(( ${CC_BENCH_MESSAGES:-320} / q ))
	[ "$iters" -ge 2 ] || iters=2
	printf 'CC_QPS=%s CC_ITERS=%s CC_RATE=%s CC_KNOBS="%s"\n. /usr/local/bin/cc.sh\n' "$q" "$iters" \
		"${CC_RATE:-40mbit}" "${CC_KNOBS:-}" >"$out/q$q.sh"
	"$REPO/scripts/qemu.sh" --quiet --timeout 900 --out "$out/q$q" --pcap "$out/q$q.pcap" \
		--file "$REPO/scripts/tests/cc.sh" "$out/q$q.sh" "$out/q$q.sh" >"$out/q$q.log" 2>&1 ||
		rrxe_log "q$q: guests failed (see $out/q$q)"
	# Jain's index of the QPs' shares while they compete (runs 0 and 1: off, on).
	python3 "$REPO/scripts/bench/cc-fairness.py" "$out/q$q.pcap" "$q" 192.0.2.1 >"$out/q$q.fair" || true
	awk -v q="$q" '$1 == "run" && $2 < 2 { print "CC-FAIR q" q, ($2 == 0 ? "off" : "on"), $8, $10, $12 }' "$out/q$q.fair" >>"$out/raw.txt"
	rm -f "$out/q$q.pcap"
	console_lines "$out/q$q/a.console" | grep -a '^\(CC-RESULT\|RRXE-TEST\)' | tr -d '\r' >>"$out/raw.txt" || true
done
# One row per run: the sender's (b's) counters, the receiver's CNPs.
awk '
	function f(name,   i, kv) { for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == name) return kv[2] } return "-" }
	$1 == "CC-FAIR" { jain[$2 "/" $3] = $4 " (" $5 "-" $6 ")" }
	$1 == "CC-RESULT" && $4 == "a:" { cnp[$2 "/" $3] = f("np_cnp_sent") }
	$1 == "CC-RESULT" && $4 == "b:" {
		split($2, t, "_q"); k = "q" t[2] "/" $3
		printf "%-14s %4s %3s  bw %7s MB/s  marked %6s  early_drops %5s  go_backs %4s  resent %6s  cnps_sent %6s  cnps_handled %6s  jain %s\n",
			t[1], "q" t[2], $3, f("bw_MBps"), f("q_marked"), f("q_early"), f("completer_retry_err"), f("retransmits"), cnp[$2 "/" $3], f("rp_cnp_handled"), (k in jain ? jain[k] : "-")
	}
	$1 == "RRXE-TEST" && $3 != "ok" { print "  " $0 }' "$out/raw.txt" | tee "$out/results.txt"
