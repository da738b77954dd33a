#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs every rrxe test and ends with one line `N passed, N failed`.
#
#  1. static: rustfmt, no `unsafe` in the driver, SAFETY comments in kernel::rdma;
#  2. host: `cargo test` of the wire core (tools/rrxe), plus a short fuzz run;
#  3. kernel build (CLIPPY=1): a warning from our files fails the build test;
#  4. guests: KUnit suites (parsed from the console's KTAP) and the end-to-end scripts in
#     scripts/tests/ (each check prints `RRXE-TEST <name> ok|FAIL`).
#
# Results and logs go to build/check/. Exit status 0 only if nothing failed.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
OUTDIR=$BUILD/check
rm -rf "$OUTDIR" && mkdir -p "$OUTDIR"
PASSED=0 FAILED=0 FAILS=()
pass() { PASSED=$((PASSED + ${2:-1})); echo "PASS: $1"; }
fail() { FAILED=$((FAILED + ${2:-1})); FAILS+=("$1"); echo "FAIL: $1"; }
t0=$(date +%s)

# --- 1. static checks --------------------------------------------------------------------
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
	END { exit bad }' "$REPO"/rust/kernel/rdma/*.rs; then
	pass safety_comments
else
	fail safety_comments
fi

# --- 2. host tests -----------------------------------------------------------------------
if [ -f "$REPO/tools/rrxe/Cargo.toml" ]; then
	(cd "$REPO/tools/rrxe" && cargo test) >"$OUTDIR/cargo-test.log" 2>&1
	crc=$?
	grep -E '^test result|FAILED|panicked' "$OUTDIR/cargo-test.log"
	p=$(awk '/^test result/ {for (i = 1; i <= NF; i++) if ($i ~ /^passed;?$/) s += $(i - 1)} END {print s + 0}' "$OUTDIR/cargo-test.log")
	f=$(awk '/^test result/ {for (i = 1; i <= NF; i++) if ($i ~ /^failed;?$/) s += $(i - 1)} END {print s + 0}' "$OUTDIR/cargo-test.log")
	if [ $crc = 0 ] && grep -q '^test result' "$OUTDIR/cargo-test.log"; then
		pass "host: cargo test ($p tests)" "$p"
	else
		PASSED=$((PASSED + p)); fail "host: cargo test ($f failed)" "$((f > 0 ? f : 1))"
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
if CLIPPY=1 "$REPO/scripts/kernel.sh" >"$OUTDIR/build.log" 2>&1; then
	pass kernel_build
	if grep -E '(rust/kernel/rdma/|rust/helpers/rdma\.c|drivers/infiniband/sw/rrxe/)' -B2 -A6 "$OUTDIR/build.log" | grep -qE 'warning|error'; then
		grep -E 'warning|error' -A8 "$OUTDIR/build.log" | head -60; fail build_no_warnings
	else
		pass build_no_warnings
	fi
else
	tail -60 "$OUTDIR/build.log"; fail kernel_build
	echo "$PASSED passed, $FAILED failed"; exit 1
fi
"$REPO/scripts/initramfs.sh" >"$OUTDIR/initramfs.log" 2>&1 || { cat "$OUTDIR/initramfs.log"; fail initramfs; }

# --- 4. guests ---------------------------------------------------------------------------
# guest_test NAME TIMEOUT [QEMU_OPTS] SCRIPT_A [SCRIPT_B]: boots the guests, counts RRXE-TEST lines and
# KUnit results from the consoles.
guest_test() {
	local name=$1 timeout=$2 out=$OUTDIR/$1 rc g ktap
	shift 2
	mkdir -p "$out"
	"$REPO/scripts/qemu.sh" --quiet --timeout "$timeout" --out "$out" "$@" >"$out.log" 2>&1
	rc=$?
	cat "$out.log"
	for g in "$out"/*.console; do
		[ -f "$g" ] || continue
		local gn
		gn=$(basename "$g" .console)
		while read -r _ t res rest; do
			if [ "$res" = ok ]; then pass "$name/$gn: $t"; else fail "$name/$gn: $t $rest"; fi
		done < <(grep -a '^RRXE-TEST ' "$g")
		ktap=$out/$gn.ktap
		"$REPO/scripts/ktap.sh" "$g" "$ktap"
		local kp kf
		kp=$(grep -cE '^ +ok [0-9]+ ' "$ktap")
		kf=$(grep -cE '^ +not ok [0-9]+ ' "$ktap")
		if [ "$kp$kf" != 00 ]; then
			if python3 "$KSRC/tools/testing/kunit/kunit.py" parse "$ktap" >"$ktap.parsed" 2>&1 && [ "$kf" = 0 ]; then
				pass "$name/$gn: KUnit ($kp cases)" "$kp"
			else
				cat "$ktap.parsed"; PASSED=$((PASSED + kp)); fail "$name/$gn: KUnit" "$((kf > 0 ? kf : 1))"
			fi
		fi
	done
	[ $rc = 0 ] || fail "$name: guest run (see $out)"
}

guest_test device 600 "$REPO/scripts/tests/device.sh"

# Hostile and valid input from the wire: hand-made packets from a second guest must each
# end in the right port counter of the receiving rrxe device.
guest_test inject 300 "$REPO/scripts/tests/inject.sh" "$REPO/scripts/tests/inject.sh"

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
grep -ah '^RRXE-PERF' "$OUTDIR"/pingpong*/a.console || true
# RC retransmission: 5% loss (netem) on guest b's egress, 64 KiB and 1 MiB with data checks.
guest_test loss 600 "$REPO/scripts/tests/loss.sh" "$REPO/scripts/tests/loss.sh"
# RNR: retry exceeded (rnr_retry 1 and 0, NAK count) and a late receive (64 B, 64 KiB).
guest_test rnr 300 "$REPO/scripts/tests/rnr.sh" "$REPO/scripts/tests/rnr.sh"
# SIGKILL with traffic in flight, then link del + rmmod, and rmmod with the device: no leak,
# no warning.
guest_test teardown 600 "$REPO/scripts/tests/teardown.sh" "$REPO/scripts/tests/teardown.sh"
# UD: ibv_ud_pingpong with data checks, rrxe on both guests and against rdma_rxe both ways.
guest_test ud 300 --file "$REPO/scripts/tests/ud.sh" "$REPO/scripts/tests/ud-rrxe.sh" "$REPO/scripts/tests/ud-rrxe.sh"
guest_test ud-mixed 300 --file "$REPO/scripts/tests/ud.sh" "$REPO/scripts/tests/ud-mixed.sh" "$REPO/scripts/tests/ud-mixed.sh"
# UC (ud.sh with XP=uc): ibv_uc_pingpong with data checks up to 64 KiB, rrxe on both guests and against rdma_rxe.
guest_test uc 300 --file "$REPO/scripts/tests/ud.sh" "$REPO/scripts/tests/uc-rrxe.sh" "$REPO/scripts/tests/uc-rrxe.sh"
guest_test uc-mixed 300 --file "$REPO/scripts/tests/ud.sh" "$REPO/scripts/tests/uc-mixed.sh" "$REPO/scripts/tests/uc-mixed.sh"

# perftest in duration mode (write, read, send bandwidth, atomics, write latency): rrxe on
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

# Loopback: QPs of one device talking to each other, with stock tools.
guest_test loopback 400 "$REPO/scripts/tests/loopback.sh"

# Memory protection and layout, against libibverbs: wrong rkeys, ranges past a region,
# missing access rights, zero lengths, scatter/gather lists (rc_access, 16 cases); rrxe on
# both sides, then with the C rdma_rxe as client and as server.
guest_test access-rrxe 300 --file "$REPO/scripts/tests/access.sh" \
	"$REPO/scripts/tests/access-rrxe.sh" "$REPO/scripts/tests/access-rrxe.sh"
guest_test access-mixed 300 --file "$REPO/scripts/tests/access.sh" \
	"$REPO/scripts/tests/access-mixed.sh" "$REPO/scripts/tests/access-mixed.sh"
guest_test access-mixed2 300 --file "$REPO/scripts/tests/access.sh" \
	"$REPO/scripts/tests/access-mixed2.sh" "$REPO/scripts/tests/access-mixed2.sh"

# Real traffic of the C rdma_rxe between two guests: every captured RoCEv2 packet must parse,
# pass its ICRC and rebuild to the same bytes (rrxe-decode), and every opcode the tools
# produce must be there.
guest_test capture 600 --pcap "$OUTDIR/capture/wire.pcap" "$REPO/scripts/tests/capture.sh" "$REPO/scripts/tests/capture.sh"
if (cd "$REPO/tools/rrxe" && cargo build -q --release --bin rrxe-decode) &&
	"$REPO/tools/rrxe/target/release/rrxe-decode" --summary "$OUTDIR/capture/wire.pcap" >"$OUTDIR/capture/decode.txt"; then
	pass "capture: $(awk '$2 ~ /^(RC|UC|UD)_/ {n += $1} END {print n + 0}' "$OUTDIR/capture/decode.txt") rdma_rxe packets parse, verify and rebuild"
else
	cat "$OUTDIR/capture/decode.txt"; fail "capture: rrxe-decode"
fi
for op in RC_SEND_FIRST RC_SEND_MIDDLE RC_SEND_LAST RC_SEND_ONLY RC_RDMA_WRITE_FIRST \
	RC_RDMA_WRITE_MIDDLE RC_RDMA_WRITE_LAST RC_RDMA_READ_REQUEST RC_RDMA_READ_RESPONSE_FIRST \
	RC_RDMA_READ_RESPONSE_MIDDLE RC_RDMA_READ_RESPONSE_LAST RC_ACKNOWLEDGE RC_ATOMIC_ACKNOWLEDGE \
	RC_COMPARE_SWAP RC_FETCH_ADD UC_SEND_FIRST UC_SEND_LAST UD_SEND_ONLY; do
	n=$(awk -v op="$op" '$2 == op {print $1}' "$OUTDIR/capture/decode.txt" 2>/dev/null)
	if [ "${n:-0}" -gt 0 ]; then pass "capture: $op ($n)"; else fail "capture: no $op"; fi
done
# KUnit must have run: the driver's suites are part of every module load.
grep -q 'rrxe_params' "$OUTDIR"/device/a.ktap 2>/dev/null && pass "kunit_suites_ran" || fail "kunit_suites_ran"

echo
echo "check took $(( $(date +%s) - t0 )) s; logs in $OUTDIR"
[ ${#FAILS[@]} = 0 ] || printf 'failed: %s\n' "${FAILS[@]}"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
