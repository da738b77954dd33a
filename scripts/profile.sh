#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make profile`: where the CPU time of a 64 KiB perftest run goes, in both guests, for rrxe
# and for the C rdma_rxe in turn, on the bench kernel (see scripts/bench/profile.sh for what
# is recorded and printed). PROFILE_DRIVERS (default "rrxe rxe"), PROFILE_TESTS (default
# "ib_write_bw ib_read_bw"), PROFILE_DURATION (default 14 s) and PROFILE_SIZE (default
# 65536 bytes) choose the runs. The PROF lines land in build-bench/profile/profile.txt (in
# build-bench/profile-SIZE/ for another size: `make bench` takes only the 64 KiB one) and
# on stdout; a run takes about 2 minutes per driver and test.
set -euo pipefail
export RRXE_VARIANT=${RRXE_VARIANT:-bench}
. "$(dirname "$0")/lib.sh"
# qemu.sh builds the initramfs, with $EXTRA_FILES in the guests' /usr/local/bin.
export EXTRA_FILES="${EXTRA_FILES:-} /usr/bin/perf"
CLIPPY=1 "$REPO/scripts/kernel.sh"
size=${PROFILE_SIZE:-65536}
out=$BUILD/profile
[ "$size" = 65536 ] || out=$BUILD/profile-$size
rm -rf "$out"
mkdir -p "$out"
printf 'PROFILE_DRIVERS="%s" PROFILE_TESTS="%s" PROFILE_DURATION=%s PROFILE_SIZE=%s\n. /usr/local/bin/profile.sh\n' \
	"${PROFILE_DRIVERS:-rrxe rxe}" "${PROFILE_TESTS:-ib_write_bw ib_read_bw}" \
	"${PROFILE_DURATION:-14}" "$size" >"$out/run.sh"
"$REPO/scripts/qemu.sh" --timeout 1800 --out "$out" --file "$REPO/scripts/bench/profile.sh" \
	"$out/run.sh" "$out/run.sh" >"$out.log" 2>&1 ||
	{ tail -50 "$out.log"; rrxe_die "profile guests failed (see $out)"; }
# The module profiled, for `make bench` to tell whether this profile is of its module.
sha256sum <"$BUILD/modules/kernel/drivers/infiniband/sw/rrxe/rdma_rrxe.ko" >"$out/module.sha256"
for g in a b; do console_lines "$out/$g.console" | grep -a '^PROF ' | tr -d '\r'; done >"$out/profile.txt"
cat "$out/profile.txt"
