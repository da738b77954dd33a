#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench-read-large`: one RDMA READ of READ_SIZE bytes (default 1 GiB) at MTU 256
# between two guests of the bench kernel, rrxe and then the C rdma_rxe (READ_DRIVERS), each
# checked byte for byte by xfer while the responder's guest is watched for responsiveness:
# pings from the other guest with both guests' ICMP counters, and a 100 ms timer's lateness
# inside the responder's guest (see scripts/bench/read-large.sh). The READ lines land in
# build-bench/read-large/results.txt and on stdout. READ_TIMEOUT (default 3000 s) bounds
# each READ; a 1 GiB READ takes 10 to 30 minutes per driver here.
set -euo pipefail
export RRXE_VARIANT=${RRXE_VARIANT:-bench}
. "$(dirname "$0")/lib.sh"
CLIPPY=1 "$REPO/scripts/kernel.sh"
out=$BUILD/read-large
rm -rf "$out"
mkdir -p "$out"
tmo=${READ_TIMEOUT:-3000}
drivers=${READ_DRIVERS:-rrxe rxe}
printf 'READ_DRIVERS="%s" READ_SIZE=%s READ_TIMEOUT=%s\n. /usr/local/bin/read-large.sh\n' \
	"$drivers" "${READ_SIZE:-1073741824}" "$tmo" >"$out/run.sh"
# xfer holds the message three times (its buffer on each side of the READ and the
# reference it checks against).
"$REPO/scripts/qemu.sh" --mem 4608 --timeout $(((tmo + 400) * $(wc -w <<<"$drivers"))) --out "$out" \
	--file "$REPO/scripts/bench/read-large.sh" "$out/run.sh" "$out/run.sh" >"$out.log" 2>&1 ||
	{ tail -50 "$out.log"; rrxe_die "guests failed (see $out)"; }
for g in a b; do console_lines "$out/$g.console" | grep -a '^READ ' | tr -d '\r'; done >"$out/results.txt"
cat "$out/results.txt"
