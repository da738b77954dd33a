#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench`: perftest, ibv_rc_pingpong and NVMe over RDMA for rrxe and for the C rdma_rxe
# between the same two QEMU guests in one run, on the bench kernel (RRXE_VARIANT=bench:
# scripts/config/bench.config, no lock debugging), the drivers interleaved (rrxe, rdma_rxe,
# rrxe, ...) BENCH_RUNS times each (default 3); the table gives each figure's median and
# range and the ratio of the medians, with iperf3's raw TCP throughput as the wire's
# ceiling. BENCH_PARTS (default "main scale sweep qp", see scripts/bench/guest.sh) adds QP
# scaling, size sweeps and the cost of a QP to the 64 KiB figures. scripts/bench/report.py
# prints the tables and the targets of issue 13 and writes them, with the date and the
# command, to build-bench/bench/rrxe-bench.rst (Documentation/rrxe-bench.rst with
# BENCH_UPDATE_DOC=1), with one SVG plot per swept tool beside it.
# BENCH_DURATION (default 8) is each perftest run's -D, BENCH_SWEEP_DURATION (default 4)
# that of each sweep point; BENCH_SWEEP_BW and BENCH_SWEEP_LAT replace the sweeps' sizes
# (e.g. BENCH_PARTS=sweep BENCH_SWEEP_BW="64 262144" BENCH_SWEEP_LAT= for two points); BENCH_QUICK=1 is one run of each, -D 3, no sweeps (for
# development). A second pair of guests, with 2 vCPUs each, runs part smp (BENCH_SMP=0
# skips it). Only a full run (BENCH_PARTS unset, not quick) with BENCH_UPDATE_DOC=1 writes
# Documentation/; every other run writes its document to build-bench/bench/. Run `make
# profile` first to have the document say where the CPU time goes (its section is kept only
# if the module is the same).
set -euo pipefail
export RRXE_VARIANT=${RRXE_VARIANT:-bench}
. "$(dirname "$0")/lib.sh"
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	export BENCH_RUNS=1 BENCH_DURATION=3 BENCH_PARTS=${BENCH_PARTS:-main scale qp} BENCH_SMP=${BENCH_SMP:-0}
fi
export BENCH_RUNS=${BENCH_RUNS:-3} BENCH_DURATION=${BENCH_DURATION:-8}
export BENCH_PARTS=${BENCH_PARTS:-main scale sweep qp} BENCH_SWEEP_DURATION=${BENCH_SWEEP_DURATION:-4}
drivers=
for _ in $(seq "$BENCH_RUNS"); do drivers="$drivers rrxe rxe"; done
export BENCH_DRIVERS=${drivers# }
CLIPPY=1 "$REPO/scripts/kernel.sh"
"$REPO/scripts/initramfs.sh"
out=$BUILD/bench
rm -rf "$out"
mkdir -p "$out"
# The guests get the settings through their script (the host's environment stays here).
{
	printf 'BENCH_DRIVERS="%s" BENCH_DURATION=%s BENCH_PARTS="%s" BENCH_SWEEP_DURATION=%s\n' \
		"$BENCH_DRIVERS" "$BENCH_DURATION" "$BENCH_PARTS" "$BENCH_SWEEP_DURATION"
	[ -z "${BENCH_SWEEP_BW+x}" ] || printf 'BENCH_SWEEP_BW="%s"\n' "$BENCH_SWEEP_BW"
	[ -z "${BENCH_SWEEP_LAT+x}" ] || printf 'BENCH_SWEEP_LAT="%s"\n' "$BENCH_SWEEP_LAT"
	echo '. /usr/local/bin/guest.sh'
} >"$out/run.sh"
"$REPO/scripts/qemu.sh" --timeout $((BENCH_RUNS * 1200 + 300)) --out "$out" --file "$REPO/scripts/bench/guest.sh" \
	"$out/run.sh" "$out/run.sh" >"$out.log" 2>&1 ||
	{ tail -50 "$out.log"; rrxe_die "bench guests failed (see $out)"; }
# Kernel messages that landed inside a result line are cut out (lib.sh's console_lines).
console_lines "$out/b.console" | grep -a '^BENCH ' | tr -d '\r' >"$out/results.txt"
# benchout DIR: the output both guests of DIR kept of each run that gave no figure (see
# result() in scripts/bench/guest.sh).
benchout() { { cat "$1/a.console" "$1/b.console" | grep -a '^BENCHOUT ' || true; } | tr -d '\r'; }
benchout "$out" >"$out/failures.txt"
# Then the same drivers on guests with 2 vCPUs each (BENCH_SMP=0 skips it): does the work
# spread over both CPUs? (Under TCG each vCPU is a host thread: the host's 2 cores carry
# the 4 vCPUs.)
if [ "${BENCH_SMP:-1}" = 1 ]; then
	printf 'BENCH_DRIVERS="%s" BENCH_DURATION=%s BENCH_PARTS=smp\n. /usr/local/bin/guest.sh\n' \
		"$BENCH_DRIVERS" "$BENCH_DURATION" >"$out/run-smp.sh"
	if "$REPO/scripts/qemu.sh" --smp 2 --timeout $((BENCH_RUNS * 300 + 300)) --out "$out/smp2" \
		--file "$REPO/scripts/bench/guest.sh" "$out/run-smp.sh" "$out/run-smp.sh" >"$out/smp2.log" 2>&1; then
		console_lines "$out/smp2/b.console" | grep -a '^BENCH ' | tr -d '\r' >>"$out/results.txt"
		benchout "$out/smp2" >>"$out/failures.txt"
	else
		tail -20 "$out/smp2.log"
		rrxe_log "the 2-vCPU guests failed (see $out/smp2): their rows stay empty"
	fi
fi
# The document goes beside the logs. BENCH_UPDATE_DOC=1 on a full run (every part and size,
# not quick) writes the tracked Documentation/rrxe-bench.rst instead.
doc=$out/rrxe-bench.rst
if [ "${BENCH_UPDATE_DOC:-0}" = 1 ]; then
	if [ "${BENCH_QUICK:-0}" = 1 ] || [ "$BENCH_PARTS" != "main scale sweep qp" ] ||
		[ -n "${BENCH_SWEEP_BW+x}${BENCH_SWEEP_LAT+x}" ]; then
		rrxe_log "BENCH_UPDATE_DOC=1 needs a full run (no BENCH_QUICK, BENCH_PARTS or sweep sizes): writing $doc"
	else
		doc=$REPO/Documentation/rrxe-bench.rst
	fi
fi
# A `make profile` of this same module (profile.sh keeps its hash) adds its section.
prof=$BUILD/profile/profile.txt
ko=$BUILD/modules/kernel/drivers/infiniband/sw/rrxe/rdma_rrxe.ko
[ -s "$prof" ] && [ "$(cat "$BUILD/profile/module.sha256" 2>/dev/null)" = "$(sha256sum <"$ko")" ] || prof=
python3 "$REPO/scripts/bench/report.py" "$out/results.txt" "$doc" "$BENCH_DURATION" "$BENCH_RUNS" \
	"$BENCH_SWEEP_DURATION" ${prof:+"$prof"}
n=$(grep -c ': no figure\|: the server failed' "$out/failures.txt" || true)
[ "$n" = 0 ] || rrxe_log "$n perftest runs gave no figure or a failed server: their output is in $out/failures.txt"
