#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs every rrxe test and ends with one line `N passed, N failed[, N skipped]`.
#
#  1. static: rustfmt, no `unsafe` in the driver, SAFETY comments in kernel::rdma, the
#     driver's import graph against scripts/import-edges.txt, and
#     (after the kernel build) the compile-fail tests of kernel::rdma (scripts/compile-fail/);
#  2. host: `cargo test --no-fail-fast` of the wire core (tools/rrxe), judged against the
#     declared list scripts/tests/expected-host.txt, plus a short fuzz run;
#  3. kernel build (CLIPPY=1): the driver is recompiled every time, and the kernel crate's
#     warnings are those of its last compilation (kept by scripts/kernel.sh);
#  4. guests: the end-to-end scripts in scripts/tests/ (each check prints
#     `RRXE-TEST <name> ok|FAIL: why|SKIP: why`), judged against the declared list
#     scripts/tests/expected.txt: a declared test that did not report (the script broke, the
#     guest died or timed out) fails, and so does a result nobody declared;
#  5. per guest group that used rdma_rrxe, one "kernel clean" check: in every boot of the
#     group that loaded it, the module unloads at the end, kmemleak finds nothing, the kernel
#     log has no warning (scripts/guest/init);
#  6. KUnit: every case of the driver's suites counted once for the whole run
#     (scripts/kunit-tally.py over every boot's log); upstream suites are not counted.
#
# Checks named core_* test what ib_core or uverbs enforce before the driver is called, and
# checks named env_* test the environment (the C rdma_rxe loads, a tool exits 0 or dies of
# SIGKILL, the suite ran): they must pass but are not counted as rrxe's.
#
#   T=GLOB[,GLOB...] scripts/check.sh   (make check T=...): only the groups that match:
#                    static, host, and the guest groups below (pingpong, loss, ...); the
#                    kernel is always built. KUnit is tallied over the boots that ran.
#   CHECK_TIMEOUT_SCALE=N multiplies every group's guest timeout (make check-kasan sets 4:
#                    the KASAN kernel runs the same tests about 3.4 times slower under TCG).
#
# Results and logs go to build/check/. Exit status 0 only if nothing failed.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
OUTDIR=$BUILD/check
EXPECTED=$REPO/scripts/tests/expected.txt
PASSED=0 FAILED=0 SKIPPED=0 CORE=0 ENVS=0 FAILS=() BOOTLOGS=() RERUNS=()
pass() { PASSED=$((PASSED + ${2:-1})); echo "PASS: $1"; }
fail() { FAILED=$((FAILED + ${2:-1})); FAILS+=("$1"); echo "FAIL: $1"; }
skip() { SKIPPED=$((SKIPPED + ${2:-1})); echo "SKIP: $1"; }
# tally: counts the lines "<pass|fail|skip> <weight> <text>" of a judge script on stdin
# (scripts/host-tally.py, scripts/pyverbs-compare.py).
tally() {
	local kind weight text
	while read -r kind weight text; do
		case "$kind" in
		pass) pass "$text" "$weight" ;;
		skip) skip "$text" "$weight" ;;
		fail) fail "$text" "$weight" ;;
		esac
	done
}
t0=$(date +%s)
# want GROUP: GROUP is selected by $T (everything when T is empty).
want() {
	local g
	[ -n "${T:-}" ] || return 0
	for g in ${T//,/ }; do
		# shellcheck disable=SC2053
		[[ $1 == $g ]] && return 0
	done
	return 1
}

# Every group there is: the stages above and below, and the guest groups declared in
# expected.txt. A T= pattern that names none of them is a typo: stop before building.
mapfile -t ALL_GROUPS < <({ printf '%s\n' static host capture; grep -v '^#' "$EXPECTED" | awk 'NF {print $1}'; } | awk '!seen[$0]++')
if [ -n "${T:-}" ]; then
	for pat in ${T//,/ }; do
		hit=
		for grp in "${ALL_GROUPS[@]}"; do
			# shellcheck disable=SC2053
			[[ $grp == $pat ]] && { hit=1; break; }
		done
		[ -n "$hit" ] || { echo "T=$T: '$pat' matches no group; groups: ${ALL_GROUPS[*]}"; exit 2; }
	done
fi
rm -rf "$OUTDIR" && mkdir -p "$OUTDIR"
# Progress: the guest groups selected, numbered as they run.
GUEST_TOTAL=0 GUEST_DONE=0
for grp in "${ALL_GROUPS[@]}"; do
	case $grp in static | host) ;; *) want "$grp" && GUEST_TOTAL=$((GUEST_TOTAL + 1)) ;; esac
done

# --- 1. static checks --------------------------------------------------------------------
if want static; then
mapfile -t RS < <(cd "$REPO" && git ls-files -co --exclude-standard '*.rs' | grep -v '^tools/rrxe/target/')
if (cd "$REPO" && rustfmt --check --edition 2021 --config-path "$KSRC/.rustfmt.toml" "${RS[@]}" >"$OUTDIR/rustfmt.log" 2>&1); then
	pass rustfmt
else
	cat "$OUTDIR/rustfmt.log"; fail rustfmt
fi
if grep -rnw --include='*.rs' unsafe "$REPO/drivers/infiniband/sw/rrxe" | grep -v '^\S*:\s*//'; then
	fail "no_unsafe_in_driver"
else
	pass "no_unsafe_in_driver"
fi
# Every unsafe block in kernel::rdma has a SAFETY comment in the comment block above it or on
# its line (clippy's undocumented_unsafe_blocks checks this too, in the CLIPPY=1 build).
if awk '
	FNR == 1 { safety = 0 }
	/^[[:space:]]*\/\// { if ($0 ~ /SAFETY/) safety = 1; next }
	/unsafe[[:space:]]*\{/ && !safety && $0 !~ /SAFETY/ { print FILENAME ":" FNR ": " $0; bad = 1 }
	/[^[:space:]]/ { safety = 0 }
	END { exit bad }' $(find "$REPO/rust/kernel/rdma" -name "*.rs"); then
	pass safety_comments
else
	fail safety_comments
fi
# The driver's imports between its modules are the declared ones (scripts/import-edges.txt):
# every module on a floor, no edge running up, no circle, no new arrow, and none kept on the
# list once gone.
if python3 "$REPO/scripts/import-graph.py" "$REPO/drivers/infiniband/sw/rrxe" \
	"$REPO/scripts/import-edges.txt" >"$OUTDIR/import-graph.txt" 2>&1; then
	pass "import_graph: $(tail -1 "$OUTDIR/import-graph.txt"), on $(grep -c "^floor " "$REPO/scripts/import-edges.txt") floors, none up, no circle"
else
	cat "$OUTDIR/import-graph.txt"; fail import_graph
fi
fi

# --- 2. host tests -----------------------------------------------------------------------
if want host && [ -f "$REPO/tools/rrxe/Cargo.toml" ]; then
	# --no-fail-fast: every test binary runs even when an earlier one failed.
	(cd "$REPO/tools/rrxe" && cargo test --no-fail-fast) >"$OUTDIR/cargo-test.log" 2>&1
	crc=$?
	grep -E '^test result|FAILED|panicked' "$OUTDIR/cargo-test.log"
	# Judged against the declared list: a test that vanished fails, an undeclared one too.
	python3 "$REPO/scripts/host-tally.py" "$OUTDIR/cargo-test.log" "$REPO/scripts/tests/expected-host.txt" >"$OUTDIR/host.txt"
	tally <"$OUTDIR/host.txt"
	if [ $crc != 0 ] && ! grep -q '^fail' "$OUTDIR/host.txt"; then
		tail -30 "$OUTDIR/cargo-test.log"; fail "host: cargo test (exit $crc)"
	fi
	if [ -x "$REPO/tools/rrxe/fuzz.sh" ]; then
		if "$REPO/tools/rrxe/fuzz.sh" "${CHECK_FUZZ_SECONDS:-60}" >"$OUTDIR/fuzz.log" 2>&1; then
			pass "host: fuzz ${CHECK_FUZZ_SECONDS:-60}s"
		else
			tail -30 "$OUTDIR/fuzz.log"; fail "host: fuzz"
		fi
	fi
fi

# --- 3. kernel build ---------------------------------------------------------------------
# make does not repeat the warnings of up-to-date objects: the driver and its C KUnit
# module are recompiled (their sources touched in the build tree), and the kernel crate's
# warnings come from its last compilation, which scripts/kernel.sh keeps next to the build
# (.rrxe-full-build.log).
touch "$OUTDIR/.build-start"
touch "$KSRC"/drivers/infiniband/sw/rrxe/{rdma_rrxe.rs,rrxe_frwr_test.c} 2>/dev/null
if CLIPPY=1 "$REPO/scripts/kernel.sh" >"$OUTDIR/build.log" 2>&1; then
	pass kernel_build
	# The kernel crate's part of its last full build, and all of this build.
	{ grep -E '(rust/kernel/rdma/|rust/helpers/rdma\.c)' -B2 -A6 "$KOUT/.rrxe-full-build.log"
	  cat "$OUTDIR/build.log"; } >"$OUTDIR/build-all.log" 2>/dev/null
	if [ ! "$KOUT/drivers/infiniband/sw/rrxe/rdma_rrxe.o" -nt "$OUTDIR/.build-start" ]; then
		fail "build_no_warnings: the driver was not recompiled"
	elif [ ! -f "$KOUT/.rrxe-full-build.log" ]; then
		fail "build_no_warnings: no log of the kernel crate's last compilation (run scripts/kernel.sh --full)"
	elif grep -E '(rust/kernel/rdma/|rust/helpers/rdma\.c|drivers/infiniband/sw/rrxe/)' -B2 -A6 "$OUTDIR/build-all.log" | grep -qE 'warning|error'; then
		grep -E 'warning|error' -A8 "$OUTDIR/build-all.log" | head -60; fail build_no_warnings
	else
		pass build_no_warnings
	fi
else
	tail -60 "$OUTDIR/build.log"; fail kernel_build
	echo "$PASSED passed, $FAILED failed"; exit 1
fi
"$REPO/scripts/initramfs.sh" >"$OUTDIR/initramfs.log" 2>&1 || { cat "$OUTDIR/initramfs.log"; fail initramfs; }
# Compile-fail tests of kernel::rdma (part of the static group; they need the kernel crate
# just built): each snippet must fail to build for the reason it names, and build without it.
if want static; then
	"$REPO/scripts/compile-fail.sh" >"$OUTDIR/compile-fail.log" 2>&1
	cfrc=$?
	while read -r verdict rest; do
		case $verdict in
		PASS:) pass "$rest" ;;
		FAIL:) fail "$rest" ;;
		esac
	done < <(grep -E '^(PASS|FAIL): ' "$OUTDIR/compile-fail.log")
	if [ $cfrc != 0 ] && ! grep -q '^FAIL: ' "$OUTDIR/compile-fail.log"; then
		tail -20 "$OUTDIR/compile-fail.log"; fail "compile_fail: scripts/compile-fail.sh exit $cfrc"
	fi
fi
# The patch series a user carries into their tree (make series): it applies to the pristine
# 7.3.4 files, and checkpatch --strict finds nothing but the one warning each new-file patch
# gets because the MAINTAINERS entry is a patch of its own, the last of the series.
if want static; then
	if RRXE_SIGNOFF="rrxe check <check@localhost>" "$REPO/scripts/series.sh" "$OUTDIR/series" >"$OUTDIR/series.log" 2>&1; then
		pass "series_applies: make series applies to Linux $LINUX_VER"
		other=$(grep -E ': (ERROR|WARNING|CHECK):' "$OUTDIR/series/checkpatch.txt" | grep -v 'does MAINTAINERS need updating' || true)
		if [ -z "$other" ]; then
			pass "series_checkpatch_strict: $(grep -c 'MAINTAINERS need updating' "$OUTDIR/series/checkpatch.txt") MAINTAINERS-order warnings only"
		else
			echo "$other" | head -20; fail "series_checkpatch_strict: $(echo "$other" | wc -l) findings (build/check/series/checkpatch.txt)"
		fi
	else
		tail -20 "$OUTDIR/series.log"; fail "series_applies"
	fi
fi
if want pyverbs; then
	"$REPO/scripts/pyverbs-cpio.sh" >>"$OUTDIR/initramfs.log" 2>&1 || { cat "$OUTDIR/initramfs.log"; fail pyverbs_archive; }
fi

# --- 4. guests ---------------------------------------------------------------------------
# kmemleak=n/a (no scan in the guest) is clean only on a kernel built without kmemleak (the
# bench kernel); the test kernel has it, so there a missing scan is a failure.
KMEMLEAK=
grep -q '^CONFIG_DEBUG_KMEMLEAK=y' "$KOUT/.config" 2>/dev/null && KMEMLEAK=1
KPAT='WARNING:|BUG:|Oops|general protection|KASAN|refcount_t|suspected memory leak|Call Trace|soft lockup|hung_task|rcu_sched detected stall|RCU stall'
STALLPAT='soft lockup|detected stall|RCU stall|Call Trace'
# run_guests OUT TIMEOUT ARGS...: one run of scripts/qemu.sh into OUT (log in OUT.log), with
# a 1 s heartbeat on the host beside it: OUT.beat holds the longest gap between its beats.
run_guests() {
	local out=$1 timeout=$2 hb rc
	shift 2
	mkdir -p "$out"
	echo 0 >"$out.beat"
	( last=${EPOCHREALTIME/./} max=0
	  while sleep 1; do
		now=${EPOCHREALTIME/./}; gap=$(( (now - last) / 1000000 )); last=$now
		[ $gap -gt $max ] && { max=$gap; echo $max >"$out.beat"; }
	  done ) &
	hb=$!
	"$REPO/scripts/qemu.sh" --quiet --timeout "$timeout" --out "$out" "$@" >"$out.log" 2>&1
	rc=$?
	kill $hb 2>/dev/null; wait $hb 2>/dev/null
	return $rc
}

# host_stall OUT: succeeds (printing why) when the only kernel reports of the run in OUT
# are stall reports that the host caused. Under TCG a guest's clock is the host's, so when
# the host stops running a QEMU process, the guest's soft-lockup detector reports the gap
# on whatever task was current when it runs again: stopping both QEMUs of a run with
# SIGSTOP for 50 s gave "soft lockup - CPU#0 stuck for 49s" in both guests, and CI once
# saw both guests of perftest-mixed stall for 119 s, one of them without rrxe loaded. The
# host is to blame when its own heartbeat stopped for 10 s or more, or when both guests
# report a soft lockup of the same length (their kernels share nothing but the host). A
# lockup of rrxe's own happens again in the second run and fails there.
host_stall() {
	local out=$1 g log d beat len=()
	for g in a b; do
		[ -f "$out/$g.console" ] || continue
		log=$out/$g.dmesg
		[ -s "$log" ] || log=$out/$g.console
		grep -aqE "$KPAT" "$log" || continue
		# Any other report (a WARN, a leak, an oops): a result, whatever the stall.
		grep -aE "$KPAT" "$log" | grep -avqE "$STALLPAT" && return 1
		d=$(grep -aoE 'soft lockup - CPU#[0-9]+ stuck for [0-9]+s' "$log" | grep -oE '[0-9]+s$' | tr -d s | sort -n | tail -1)
		len+=("${d:-0}")
	done
	[ ${#len[@]} -gt 0 ] || return 1
	beat=$(cat "$out.beat" 2>/dev/null) || beat=0
	if [ "${beat:-0}" -ge 10 ]; then
		echo "the host stalled (its 1 s heartbeat stopped for ${beat} s) and the guests report only stalls"
		return 0
	fi
	if [ ${#len[@]} = 2 ] && [ "${len[0]}" -gt 0 ] && [ "${len[1]}" -gt 0 ] &&
		[ $(( len[0] > len[1] ? len[0] - len[1] : len[1] - len[0] )) -le 5 ]; then
		echo "both guests report only a soft lockup of the same length (${len[0]} s, ${len[1]} s): the host stopped both QEMUs"
		return 0
	fi
	return 1
}

# guest_test NAME TIMEOUT [QEMU_OPTS] SCRIPT_A [SCRIPT_B]: boots the guests (if NAME is
# selected) and judges their RRXE-TEST lines against scripts/tests/expected.txt.
guest_test() {
	local name=$1 timeout=$(( $2 * ${CHECK_TIMEOUT_SCALE:-1} )) out=$OUTDIR/$1 rc g t res rest log end why
	local used=() dirty=()
	shift 2
	want "$name" || return 0
	GUEST_DONE=$((GUEST_DONE + 1))
	echo "[$GUEST_DONE/$GUEST_TOTAL] $name (timeout ${timeout}s, log $out.log, $(( $(date +%s) - t0 ))s into the run)"
	run_guests "$out" "$timeout" "$@"
	rc=$?
	cat "$out.log"
	if why=$(host_stall "$out"); then
		echo "RETRY: $name: $why; the run is not a result, it runs once more (first run in $out.stalled)"
		# What the first run reported short of a pass, shown (not counted) before it goes.
		for g in a b; do
			[ -f "$out/$g.console" ] || continue
			console_lines "$out/$g.console" | grep -a '^RRXE-TEST ' | grep -av ' ok\( \|$\)' |
				sed "s|^RRXE-TEST |  first run, not counted: $name/$g: |"
		done
		rm -rf "$out.stalled"; mv "$out" "$out.stalled"; mv "$out.log" "$out.stalled.log"; mv "$out.beat" "$out.stalled.beat"
		RERUNS+=("$name")
		run_guests "$out" "$timeout" "$@"
		rc=$?
		cat "$out.log"
	fi
	declare -A seen=()
	for g in a b; do
		[ -f "$out/$g.console" ] || { grep -q "^$name $g " "$EXPECTED" && fail "$name/$g: no console (guest never ran)"; continue; }
		log=$out/$g.dmesg
		[ -s "$log" ] || log=$out/$g.console
		BOOTLOGS+=("$log")
		while read -r _ t res rest; do
			if [ -n "${seen[$g/$t]:-}" ]; then fail "$name/$g: $t reported twice"; continue; fi
			seen[$g/$t]=1
			if ! grep -qxF "$name $g $t" "$EXPECTED"; then
				fail "$name/$g: $t $res $rest (not declared in scripts/tests/expected.txt)"
				continue
			fi
			case "$res" in
			ok) if [[ $t == core_* ]]; then CORE=$((CORE + 1)); echo "PASS (ib_core, not counted): $name/$g: $t"
			    elif [[ $t == env_* ]]; then ENVS=$((ENVS + 1)); echo "PASS (environment, not counted): $name/$g: $t"
			    else pass "$name/$g: $t${rest:+ $rest}"; fi ;;
			SKIP*) skip "$name/$g: $t $rest" ;;
			*) fail "$name/$g: $t $res $rest" ;;
			esac
		done < <(console_lines "$out/$g.console" | grep -a '^RRXE-TEST ')
		# Each boot that used rrxe: unloaded at the end, no leak, no warning (one check for
		# the group, below).
		end=$(console_lines "$out/$g.console" | grep -a '^RRXE-GUEST ' | tail -1)
		case "$end" in
		*rrxe_used=1*)
			used+=("$g")
			if ! [[ $end == *"unload=ok kmemleak=0"* || ( $end == *"unload=ok kmemleak=n/a"* && -z $KMEMLEAK ) ]] || grep -aqE "$KPAT" "$log"; then
				grep -aE "$KPAT" -A24 "$log" | head -60
				dirty+=("guest $g: ${end#RRXE-GUEST }$(grep -aqE "$KPAT" "$log" && echo ', warnings in the log')")
			fi ;;
		*rrxe_used=0*) grep -aqE "$KPAT" "$log" && echo "NOTE: $name/$g (no rrxe in this guest): kernel warnings in the log" ;;
		esac
	done
	if [ ${#dirty[@]} -gt 0 ]; then
		fail "$name: kernel not clean after rrxe ($(IFS=';'; echo "${dirty[*]}"))"
	elif [ ${#used[@]} -gt 0 ]; then
		pass "$name: kernel clean (rrxe unloads, no leak, no warning; guest ${used[*]})"
	fi
	# Declared tests that did not report.
	while read -r gname g t; do
		[ "$gname" = "$name" ] || continue
		[ -n "${seen[$g/$t]:-}" ] || fail "$name/$g: $t did not report (guest $g: $(grep "^guest $g:" "$out.log" | cut -d: -f2- | cut -d'(' -f1))"
	done < <(grep -v '^#' "$EXPECTED")
	[ $rc = 0 ] || fail "$name: guest run (see $out)"
}

guest_test device 600 "$REPO/scripts/tests/device.sh"
# Allocation failures injected (failslab, fail_page_alloc) into every verb: unwound, clean.
guest_test faults 900 "$REPO/scripts/tests/faults.sh"

# Hostile and valid input from the wire: hand-made packets from a second guest must each
# end in the right port counter of the receiving rrxe device.
guest_test inject 300 "$REPO/scripts/tests/inject.sh" "$REPO/scripts/tests/inject.sh"
# Hostile packets at live RC QPs: real QPN, expected PSN, real rkey and address, from a guest
# without an RDMA stack; the IBA's answer must come back (ACK, READ responses, NAK PSN
# sequence error, remote access error, invalid request), the QPs end in the state the IBA
# says, only the legitimate bytes change and the device still works.
guest_test inject-live 300 "$REPO/scripts/tests/inject-live.sh" "$REPO/scripts/tests/inject-live.sh"
# The campaign: 10^5 structure-aware RoCEv2 packets with valid ICRCs (every opcode, random
# fields, PSNs around the expected one, stale and wrong rkeys, truncated and oversized) from
# guest b at guest a's QP while the two run verified RDMA READ traffic: every round ends with
# every byte right or an IBA error completion, the counters saw the fuzz, the device works.
# About 5.5 minutes. A round's server still there 30 s after its timeout is reported with
# its kernel stack and the blocked tasks (sysrq w) and ends the group: a hang explains itself.
guest_test fuzz-live 600 "$REPO/scripts/tests/fuzz-live.sh" "$REPO/scripts/tests/fuzz-live.sh"

# Interop, receive side: the C rdma_rxe's SENDs reach an rrxe QP through parsing and ICRC.
guest_test interop-rx 300 "$REPO/scripts/tests/interop-rx.sh" "$REPO/scripts/tests/interop-rx.sh"
# The same over IPv6 (link-local RoCE v2 GIDs): the IPv6 tunnel socket and the IPv6 ICRC.
guest_test interop-rx6 300 --file "$REPO/scripts/tests/interop-rx.sh" \
	"$REPO/scripts/tests/interop-rx6.sh" "$REPO/scripts/tests/interop-rx6.sh"

# RC SEND/RECV end to end: ibv_rc_pingpong -c 1 B..1 MiB (+ -e), and single SENDs with every
# byte checked (rc_rnr -P); rrxe on both guests, then each side against the C rdma_rxe.
guest_test pingpong 600 --file "$REPO/scripts/tests/pingpong.sh" \
	"$REPO/scripts/tests/pingpong-rrxe.sh" "$REPO/scripts/tests/pingpong-rrxe.sh"
guest_test pingpong-rxe-server 600 --file "$REPO/scripts/tests/pingpong.sh" \
	"$REPO/scripts/tests/pingpong-rxe-server.sh" "$REPO/scripts/tests/pingpong-rxe-server.sh"
guest_test pingpong-rrxe-server 600 --file "$REPO/scripts/tests/pingpong.sh" \
	"$REPO/scripts/tests/pingpong-rrxe-server.sh" "$REPO/scripts/tests/pingpong-rrxe-server.sh"
grep -ah "^RRXE-PERF" "$OUTDIR"/pingpong*/a.console 2>/dev/null || true
# RC retransmission: 5% loss (netem) on guest b's egress, 64 KiB and 1 MiB with data checks.
guest_test loss 600 "$REPO/scripts/tests/loss.sh" "$REPO/scripts/tests/loss.sh"
# A QP's kept route follows the routing tables: guest b routed through a gateway that does
# not exist for 0.2 s under verified RC traffic, and the transfer completes once it is gone.
guest_test route 300 "$REPO/scripts/tests/route.sh" "$REPO/scripts/tests/route.sh"
# The netem matrix: the same transfers, both directions impaired (netem-*.sh): reordering,
# duplication, corruption, and everything at once.
for m in reorder dup corrupt all; do
	guest_test netem-$m 600 --file "$REPO/scripts/tests/loss.sh" \
		"$REPO/scripts/tests/netem-$m.sh" "$REPO/scripts/tests/netem-$m.sh"
done
# Congestion control: ib_write_bw -q 8 through a token bucket with an ECN-marking RED queue,
# off then on (CE marks, CNPs sent and handled, fewer drops), verified transfers with it on.
guest_test cc 600 "$REPO/scripts/tests/cc.sh" "$REPO/scripts/tests/cc.sh"
# The same with rdma_rxe receiving rrxe's ECN-capable packets. (rdma_rxe cannot send through
# this bottleneck: RED's early drop returns NET_XMIT_CN, which rdma_rxe takes for a failed
# send and ends the QP in error, congestion control or not.)
guest_test cc-mixed 600 --file "$REPO/scripts/tests/cc.sh" "$REPO/scripts/tests/cc-mixed.sh" "$REPO/scripts/tests/cc-mixed.sh"
# RNR: retry exceeded (rnr_retry 1 and 0, NAK count) and a late receive (64 B, 64 KiB).
guest_test rnr 300 "$REPO/scripts/tests/rnr.sh" "$REPO/scripts/tests/rnr.sh"
# Large READs: paced responses, a responsive responder (issue 10).
guest_test read-large 400 "$REPO/scripts/tests/read-large.sh" "$REPO/scripts/tests/read-large.sh"
# SIGKILL with traffic in flight, then link del + rmmod, and rmmod with the device: no leak,
# no warning.
guest_test teardown 600 "$REPO/scripts/tests/teardown.sh" "$REPO/scripts/tests/teardown.sh"
# 100 teardowns under loopback traffic (SIGKILL, link del, rmmod, netdevice down and
# deletion, in turn) with user contexts open: nothing hangs, nothing leaks.
guest_test teardown-loop 1500 "$REPO/scripts/tests/teardown-loop.sh"
# UD and UC: xfer (every byte checked, both ways) and the stock ibv_ud/uc_pingpong, rrxe on
# both guests and against rdma_rxe in either role.
guest_test ud 300 --file "$REPO/scripts/tests/ud.sh" "$REPO/scripts/tests/ud-rrxe.sh" "$REPO/scripts/tests/ud-rrxe.sh"
guest_test ud-mixed 300 --file "$REPO/scripts/tests/ud.sh" "$REPO/scripts/tests/ud-mixed.sh" "$REPO/scripts/tests/ud-mixed.sh"
guest_test uc 300 --file "$REPO/scripts/tests/ud.sh" "$REPO/scripts/tests/uc-rrxe.sh" "$REPO/scripts/tests/uc-rrxe.sh"
guest_test uc-mixed 300 --file "$REPO/scripts/tests/ud.sh" "$REPO/scripts/tests/uc-mixed.sh" "$REPO/scripts/tests/uc-mixed.sh"
guest_test ud-mixed2 300 --file "$REPO/scripts/tests/ud.sh" "$REPO/scripts/tests/ud-mixed2.sh" "$REPO/scripts/tests/ud-mixed2.sh"
guest_test uc-mixed2 300 --file "$REPO/scripts/tests/ud.sh" "$REPO/scripts/tests/uc-mixed2.sh" "$REPO/scripts/tests/uc-mixed2.sh"
# On-demand paging (issue 32): ODP memory mapped fresh on both sides, every byte checked
# (xfer -O), invalidations racing the traffic (xfer -R), ibv_rc_pingpong -o/-P, and the
# loopback rules (odp_rules); rrxe on both guests, then each side against the C rdma_rxe
# (which runs odp_rules for reference in odp-mixed).
guest_test odp 600 --file "$REPO/scripts/tests/odp.sh" "$REPO/scripts/tests/odp-rrxe.sh" "$REPO/scripts/tests/odp-rrxe.sh"
guest_test odp-mixed 600 --file "$REPO/scripts/tests/odp.sh" "$REPO/scripts/tests/odp-mixed.sh" "$REPO/scripts/tests/odp-mixed.sh"
guest_test odp-mixed2 600 --file "$REPO/scripts/tests/odp.sh" "$REPO/scripts/tests/odp-mixed2.sh" "$REPO/scripts/tests/odp-mixed2.sh"
# The same rrxe pair with two vCPUs per guest: invalidations on one CPU while the responder
# checks, accepts and copies on the other.
guest_test odp-smp 600 --smp 2 --file "$REPO/scripts/tests/odp.sh" "$REPO/scripts/tests/odp-smp.sh" "$REPO/scripts/tests/odp-smp.sh"
grep -ah "^RRXE-REF" "$OUTDIR"/odp-mixed/b.console 2>/dev/null || true

# perftest, a fixed number of iterations (write, read, send bandwidth, atomics, write latency): rrxe on
# both guests, and each side against rdma_rxe.
for v in rrxe mixed mixed2; do
	guest_test perftest-$v 400 --file "$REPO/scripts/tests/perftest.sh" \
		"$REPO/scripts/tests/perftest-$v.sh" "$REPO/scripts/tests/perftest-$v.sh"
done

# RDMA CM: rping (SEND, READ, WRITE, verified) connected by the kernel's connection manager
# over QP1 (the MAD layer's kernel UD QP), rrxe on both guests and against rdma_rxe both ways.
guest_test rping 300 --file "$REPO/scripts/tests/rping.sh" "$REPO/scripts/tests/rping-rrxe.sh" "$REPO/scripts/tests/rping-rrxe.sh"
guest_test rping-mixed 300 --file "$REPO/scripts/tests/rping.sh" "$REPO/scripts/tests/rping-mixed.sh" "$REPO/scripts/tests/rping-mixed.sh"
guest_test rping-mixed2 300 --file "$REPO/scripts/tests/rping.sh" "$REPO/scripts/tests/rping-mixed2.sh" "$REPO/scripts/tests/rping-mixed2.sh"
# RDMA CM multicast (mckey): UD datagrams to a group, delivered to the attached QP; rrxe on
# both guests, then rdma_rxe as the receiver. Not rdma_rxe as the sender: with mckey it puts
# 1 or 2 of the 20 datagrams on the wire (captured), to rdma_rxe as to rrxe.
guest_test mckey 300 --file "$REPO/scripts/tests/mckey.sh" "$REPO/scripts/tests/mckey-rrxe.sh" "$REPO/scripts/tests/mckey-rrxe.sh"
guest_test mckey-mixed2 300 --file "$REPO/scripts/tests/mckey.sh" "$REPO/scripts/tests/mckey-mixed2.sh" "$REPO/scripts/tests/mckey-mixed2.sh"
# The Performance Management agent over the wire: PerfMgmt MADs from guest a's QP1 answered
# by rrxe's process_mad on guest b. Not with rdma_rxe at either end: its process_mad answers
# a Get with a zeroed MAD header (no requester matches it), and takes every other PerfMgmt
# MAD, the GetResp to its own request included, answering it with a zeroed MAD (seen on the
# wire), so the response never reaches the requesting agent.
guest_test pma 200 --file "$REPO/scripts/tests/pma.sh" "$REPO/scripts/tests/pma-rrxe.sh" "$REPO/scripts/tests/pma-rrxe.sh"

# Loopback: QPs of one device talking to each other, with stock tools.
guest_test loopback 400 "$REPO/scripts/tests/loopback.sh"
# The kernel's own rxe selftests (tools/testing/selftests/rdma of the pinned tree), one
# guest: each against rrxe (a check each) and then against rdma_rxe (for reference).
ST_DIR=$KSRC/tools/testing/selftests
ST_FILES=(--file "$ST_DIR/kselftest/ktap_helpers.sh")
for st in rxe_rping_between_netns rxe_ipv6 rxe_socket_with_netns rxe_test_NETDEV_UNREGISTER \
	rxe_sent_rcvd_bytes rxe_netns_names; do
	ST_FILES+=(--file "$ST_DIR/rdma/$st.sh")
done
guest_test selftests 900 "${ST_FILES[@]}" "$REPO/scripts/tests/selftests.sh"
grep -ah "^RRXE-REF" "$OUTDIR"/selftests/a.console 2>/dev/null || true

# Network namespaces: guest a's eth0 and RDMA device in a namespace, verified traffic with
# guest b; rrxe on both guests (plus the netdevice leaving the namespace under a live user
# context, and a namespace deleted under its last process), then each side against rdma_rxe.
for v in "" -mixed -mixed2; do
	guest_test netns$v 400 --file "$REPO/scripts/tests/netns.sh" \
		"$REPO/scripts/tests/netns$v.sh" "$REPO/scripts/tests/netns$v.sh"
done
# Other netdevices: veth across namespaces, dummy, tun (no Ethernet address), macvlan.
guest_test netdevs 400 "$REPO/scripts/tests/netdevs.sh"
# The driver says why: its dynamic-debug call sites listed, off by default, and the reasons
# of a refused rkey, a QP's entry into ERR, a failed completion and a refused send WR in the
# kernel log once enabled. Then every site the guest listed must name a line of the sources
# that prints (the descriptor's file and line, laid out by kernel::rdma::dbg, as dynamic
# debug read them back).
# Per-QP counters through the core's counter API: `rdma statistic qp` auto and manual binds
# on a loopback pingpong, the port's totals exact, nothing leaked on a refused bind.
guest_test counters 300 "$REPO/scripts/tests/counters.sh"
# The transport's tracepoints (rdma_sw): QP states, NAKs sent and received, RNR retries,
# read through tracefs on loopback errors; nothing while disabled.
guest_test trace 300 "$REPO/scripts/tests/trace.sh"
guest_test debug 300 "$REPO/scripts/tests/debug.sh"
if want debug && [ -f "$OUTDIR/debug/a.console" ]; then
	sites=$(grep -a 'RRXE-DYNDBG' "$OUTDIR/debug/a.console" | grep -o 'drivers/infiniband/sw/rrxe/[^ :]*\.rs:[0-9]*' | sort -u)
	bad_sites=
	for s in $sites; do
		sed -n "${s##*:}p" "$REPO/${s%:*}" 2>/dev/null | grep -qE '(qp|dev|rdma)_dbg!\(' || bad_sites+=" $s"
	done
	n=$(printf '%s' "$sites" | grep -c .)
	if [ "$n" -gt 0 ] && [ -z "$bad_sites" ]; then
		pass "debug: debug_sites_match_sources ($n sites, each on a line that prints)"
	else
		fail "debug: debug_sites_match_sources (${bad_sites:- no site listed})"
	fi
fi
# The core's exclusive namespace mode: devices moved by `rdma dev set ... netns`, traffic with
# a device outside its netdevice's namespace, a move under a live user context, a namespace
# exit that renames the device on a name conflict; then rdma_rxe the same way, for reference.
guest_test netns-excl 400 "$REPO/scripts/tests/netns-excl.sh"
grep -ah "^RRXE-REF" "$OUTDIR"/netns-excl/a.console 2>/dev/null || true
# RoCE over a VLAN (GIDs of eth0.100 on a device on eth0): verified traffic RC/UC/UD and the
# RDMA CM, rrxe on both guests, then each side against rdma_rxe.
for v in rrxe mixed mixed2; do
	n=vlan-$v; [ $v = rrxe ] && n=vlan
	guest_test $n 400 --file "$REPO/scripts/tests/vlan.sh" \
		"$REPO/scripts/tests/vlan-$v.sh" "$REPO/scripts/tests/vlan-$v.sh"
done

# Device attributes: ibv_devinfo -v of rrxe against rdma_rxe's in the same kernel; every
# difference must be listed, with its reason, in the test.
guest_test devinfo 200 "$REPO/scripts/tests/devinfo.sh"
# Kernel consumers: fast registration, invalidation and rdma_rw between two kernel RC QPs
# (the rrxe_frwr KUnit suite, loaded as a module on a live device).
guest_test frwr 400 "$REPO/scripts/tests/frwr.sh"

# NVMe over RDMA: guest a exports a memory-backed null_blk with nvmet-rdma, guest b writes
# 32 MiB through nvme-rdma (fast registration, invalidation, rdma_rw on the target),
# reconnects and reads it back; rrxe on both guests, then rdma_rxe as the target and as the
# host, 1% loss on the host's egress, and the controller deleted with a write in flight.
guest_test nvme 400 --file "$REPO/scripts/tests/nvme.sh" "$REPO/scripts/tests/nvme-rrxe.sh" "$REPO/scripts/tests/nvme-rrxe.sh"
for v in rxe-target rxe-host loss delete srq; do
	guest_test nvme-$v 400 --file "$REPO/scripts/tests/nvme.sh" \
		"$REPO/scripts/tests/nvme-$v.sh" "$REPO/scripts/tests/nvme-$v.sh"
done

# Memory protection and layout, against libibverbs: wrong rkeys, ranges past a region,
# missing access rights, zero lengths, scatter/gather lists, ATOMIC WRITE (rc_access, 18
# cases); rrxe on both sides, then with the C rdma_rxe as client and as server.
guest_test access-rrxe 300 --file "$REPO/scripts/tests/access.sh" \
	"$REPO/scripts/tests/access-rrxe.sh" "$REPO/scripts/tests/access-rrxe.sh"
guest_test access-mixed 300 --file "$REPO/scripts/tests/access.sh" \
	"$REPO/scripts/tests/access-mixed.sh" "$REPO/scripts/tests/access-mixed.sh"
guest_test access-mixed2 300 --file "$REPO/scripts/tests/access.sh" \
	"$REPO/scripts/tests/access-mixed2.sh" "$REPO/scripts/tests/access-mixed2.sh"

# rdma-core's own conformance suite, pyverbs v44: rdma_rxe in guest a, rrxe in guest b, on the
# same kernel. rrxe must give every test the result declared in
# scripts/tests/expected-pyverbs.txt (each pass counted once), pass every test that passes on
# rdma_rxe, and fail or error in none.
guest_test pyverbs 900 --cpio "$BUILD/pyverbs.cpio" "$REPO/scripts/tests/pyverbs.sh" "$REPO/scripts/tests/pyverbs.sh"
if want pyverbs && [ -f "$OUTDIR/pyverbs/a.console" ] && [ -f "$OUTDIR/pyverbs/b.console" ]; then
	"$REPO/scripts/pyverbs-compare.py" "$OUTDIR/pyverbs/a.console" "$OUTDIR/pyverbs/b.console" \
		"$REPO/scripts/tests/expected-pyverbs.txt" >"$OUTDIR/pyverbs/compare.txt"
	grep '^#' "$OUTDIR/pyverbs/compare.txt" | head -3
	tally < <(grep -v '^#' "$OUTDIR/pyverbs/compare.txt")
fi

# Real traffic of the C rdma_rxe between two guests: every captured RoCEv2 packet must parse,
# pass its ICRC and rebuild to the same bytes (rrxe-decode), and every opcode the tools
# produce must be there.
guest_test capture 600 --pcap "$OUTDIR/capture/wire.pcap" "$REPO/scripts/tests/capture.sh" "$REPO/scripts/tests/capture.sh"
if want capture; then
	# One check: the wire core (rrxe-decode, host side) parses, verifies and rebuilds every
	# packet of the C driver's real traffic, and that traffic held every opcode asked for
	# (else the capture proves less than it claims).
	ops="RC_SEND_FIRST RC_SEND_MIDDLE RC_SEND_LAST RC_SEND_ONLY RC_RDMA_WRITE_FIRST
		RC_RDMA_WRITE_MIDDLE RC_RDMA_WRITE_LAST RC_RDMA_READ_REQUEST RC_RDMA_READ_RESPONSE_FIRST
		RC_RDMA_READ_RESPONSE_MIDDLE RC_RDMA_READ_RESPONSE_LAST RC_ACKNOWLEDGE RC_ATOMIC_ACKNOWLEDGE
		RC_COMPARE_SWAP RC_FETCH_ADD UC_SEND_FIRST UC_SEND_LAST UD_SEND_ONLY"
	if (cd "$REPO/tools/rrxe" && cargo build -q --release --bin rrxe-decode) &&
		"$REPO/tools/rrxe/target/release/rrxe-decode" --summary "$OUTDIR/capture/wire.pcap" >"$OUTDIR/capture/decode.txt"; then
		missing=$(for op in $ops; do awk -v op="$op" '$2 == op {f = 1} END {exit !f}' "$OUTDIR/capture/decode.txt" || echo "$op"; done)
		n=$(awk '$2 ~ /^(RC|UC|UD)_/ {n += $1} END {print n + 0}' "$OUTDIR/capture/decode.txt")
		if [ -z "$missing" ]; then
			pass "capture: $n rdma_rxe packets of $(echo $ops | wc -w) opcodes parse, verify and rebuild"
		else
			fail "capture: no $(echo $missing) in the capture ($n packets)"
		fi
	else
		cat "$OUTDIR/capture/decode.txt"; fail "capture: rrxe-decode"
	fi
	# A second opinion on the same packets: Wireshark's InfiniBand dissector (tshark) must
	# see the same RoCEv2 packets with the same BTH fields as rrxe-decode.
	if "$REPO/tools/rrxe/target/release/rrxe-decode" "$OUTDIR/capture/wire.pcap" >"$OUTDIR/capture/packets.txt" &&
		why=$("$REPO/scripts/tshark-compare.py" "$OUTDIR/capture/wire.pcap" "$OUTDIR/capture/packets.txt" 2>&1); then
		pass "capture: tshark_agrees ($why)"
	else
		fail "capture: tshark_agrees (${why:-rrxe-decode failed})"
	fi
fi

# --- 5. KUnit ------------------------------------------------------------------------------
# The driver's suites run at every module load; each case is counted once for the run.
python3 "$REPO/scripts/kunit-tally.py" "$REPO/drivers/infiniband/sw/rrxe" "${BOOTLOGS[@]}" >"$OUTDIR/kunit.txt"
krc=$?
if [ $krc = 2 ]; then
	if [ -z "${T:-}" ]; then fail "KUnit: no boot loaded rdma_rrxe"; else echo "KUnit: no boot of this selection loaded rdma_rrxe"; fi
elif [ $krc != 0 ]; then
	cat "$OUTDIR/kunit.txt"; fail "KUnit: tally failed"
else
	while read -r res case rest; do
		case "$res" in
		PASS) pass "KUnit: $case $rest" ;;
		SKIP) skip "KUnit: $case" ;;
		FAIL) fail "KUnit: $case $rest" ;;
		UPSTREAM) echo "KUnit (upstream, not counted): $case $rest passed" ;;
		# A test module's suite runs only in the group that loads it (rrxe_frwr: frwr).
		NOTRUN) if [ "$case" = rrxe_frwr ] && want frwr; then fail "KUnit: rrxe_frwr did not run in the frwr group"; fi ;;
		esac
	done <"$OUTDIR/kunit.txt"
fi

echo
echo "check took $(( $(date +%s) - t0 )) s; logs in $OUTDIR"
[ "$CORE" = 0 ] || echo "$CORE checks of what ib_core/uverbs enforce passed (core_*, not counted)"
[ "$ENVS" = 0 ] || echo "$ENVS checks of the environment passed (env_*, not counted)"
[ ${#RERUNS[@]} = 0 ] || echo "run again after a host stall: ${RERUNS[*]}"
[ ${#FAILS[@]} = 0 ] || printf 'failed: %s\n' "${FAILS[@]}"
if [ "$SKIPPED" -gt 0 ]; then
	echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
else
	echo "$PASSED passed, $FAILED failed"
fi
[ "$FAILED" = 0 ]
