#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs the cargo-fuzz target over the rrxe protocol parser for SECONDS (default 30),
# installing cargo-fuzz into $RRXE_TOOLS (default ~/.cache/rrxe/tools) if needed.
# Only a stable toolchain is available, so nightly features are enabled with
# RUSTC_BOOTSTRAP=1. The target is safe code, so no sanitizer is used; debug assertions
# (and so overflow checks, as in the kernel) stay on.
#
# Usage: tools/rrxe/fuzz.sh [SECONDS] [extra libFuzzer arguments...]

set -euo pipefail

secs=${1:-30}
shift || true
here=$(cd "$(dirname "$0")" && pwd)
tools=${RRXE_TOOLS:-$HOME/.cache/rrxe/tools}

if ! [ -x "$tools/bin/cargo-fuzz" ]; then
	cargo install cargo-fuzz --locked --root "$tools"
fi
export PATH="$tools/bin:$PATH"
export RUSTC_BOOTSTRAP=1

cd "$here"
corpus=fuzz/corpus/parse_packet
mkdir -p "$corpus"
# Seed the corpus with the fixture frames (mode byte 1 = Ethernet frame).
for hex in tests/fixtures/*.hex; do
	seed="$corpus/fixture-$(basename "$hex" .hex)"
	[ -e "$seed" ] && continue
	{ printf '\001'; grep -v '^#' "$hex" | tr -d ' \n' | sed 's/../\\x&/g' | xargs -0 printf '%b'; } > "$seed"
done

exec cargo fuzz run parse_packet --sanitizer none "$corpus" -- \
	-max_total_time="$secs" -print_final_stats=1 "$@"
