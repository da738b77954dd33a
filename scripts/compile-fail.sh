#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Compile-fail tests of kernel::rdma: each snippet in scripts/compile-fail/ is the code of a
# small out-of-tree Rust module (this script adds the module declaration) that uses the
# abstractions as a buggy driver would. It is built twice against the kernel crate of the
# last kernel build ($KOUT):
#   - as written: the build must fail with the error code of its `//! EXPECT: E....` line,
#     every error must point at a line marked `// FAIL`, and every such line must have one
#     (so the snippet fails for each reason it was written for, not a typo);
#   - as the control: `// FAIL` lines removed and `// OK: code` lines uncommented: the build
#     must succeed (the rest of the snippet is valid, so the failure above is the hole's).
# A snippet that builds as written means a hole in the API came back.
#
#   compile-fail.sh [NAME...]   default: every snippet; prints `PASS: cf_NAME` / `FAIL: ...`
# Exit status 0 only if every snippet behaved. Logs go to build/compile-fail/.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
rrxe_make_args
[ -f "$KOUT/rust/libkernel.rmeta" ] || rrxe_die "no kernel crate in $KOUT: build the kernel first (make kernel)"
OUT=$BUILD/compile-fail
rm -rf "$OUT" && mkdir -p "$OUT"
names=("$@")
[ ${#names[@]} -gt 0 ] || mapfile -t names < <(cd "$REPO/scripts/compile-fail" && ls ./*.rs | sed 's|^\./||; s|\.rs$||')
bad=0
# build DIR NAME SRC: builds SRC as module NAME in DIR; the compiler's output goes to DIR.log.
build() {
	local dir=$1 name=$2
	mkdir -p "$dir"
	{
		cat "$3"
		printf '\nstruct M;\n\nimpl kernel::Module for M {\n'
		printf '    fn init(_module: &'"'"'static ThisModule) -> Result<Self> {\n        Ok(M)\n    }\n}\n\n'
		printf 'module! {\n    type: M,\n    name: "%s",\n    authors: ["rrxe developers"],\n' "$name"
		printf '    description: "compile-fail snippet",\n    license: "GPL",\n}\n'
	} >"$dir/$name.rs"
	echo "obj-m := $name.o" >"$dir/Kbuild"
	# No CLIPPY: the snippets are judged by rustc's errors.
	local a mk=()
	for a in "${MK[@]}"; do [ "$a" = CLIPPY=1 ] || mk+=("$a"); done
	make "${mk[@]}" M="$dir" modules >"$dir.log" 2>&1
}
for n in "${names[@]}"; do
	src=$REPO/scripts/compile-fail/$n.rs
	[ -f "$src" ] || { echo "FAIL: cf_$n: no snippet $src"; bad=1; continue; }
	want=$(sed -n 's|^//! EXPECT: \(E[0-9]\{4\}\).*|\1|p' "$src")
	[ -n "$want" ] || { echo "FAIL: cf_$n: no '//! EXPECT: Ennnn' line"; bad=1; continue; }
	mod=cf_$n
	# As written.
	if build "$OUT/$n-fail" "$mod" "$src"; then
		echo "FAIL: $mod: builds, but must fail with $want (the hole is back)"; bad=1; continue
	fi
	log=$OUT/$n-fail.log
	if ! grep -q "^error\[$want\]" "$log"; then
		grep -E '^error' -A6 "$log" | head -30
		echo "FAIL: $mod: did not fail with $want"; bad=1; continue
	fi
	# Every error's primary location is a `// FAIL` line.
	mapfile -t locs < <(grep -A3 -E '^error(\[E[0-9]+\])?:' "$log" | sed -n "s|^ *--> \(.*/\)\{0,1\}$mod\.rs:\([0-9]*\):.*|\2|p")
	stray=
	for l in "${locs[@]}"; do
		[ -n "$l" ] || { stray="$stray ?"; continue; }
		sed -n "${l}p" "$src" | grep -q '// FAIL$' || stray="$stray $l"
	done
	if [ ${#locs[@]} = 0 ] || [ -n "$stray" ]; then
		grep -E '^error' -A6 "$log" | head -30
		echo "FAIL: $mod: errors outside the '// FAIL' lines (lines:${stray:- none found})"; bad=1; continue
	fi
	# ... and every `// FAIL` line has an error of its own.
	silent=
	for l in $(grep -n '// FAIL$' "$src" | cut -d: -f1); do
		printf '%s\n' "${locs[@]}" | grep -qx "$l" || silent="$silent $l"
	done
	if [ -n "$silent" ]; then
		echo "FAIL: $mod: '// FAIL' lines that compile (lines:$silent): that hole is back"; bad=1; continue
	fi
	# Control.
	ctl=$OUT/$n-control.rs
	sed -e '/\/\/ FAIL$/d' -e 's|^\( *\)// OK: |\1|' "$src" >"$ctl"
	if ! build "$OUT/$n-control" "$mod" "$ctl"; then
		grep -E '^(error|warning)' -A6 "$OUT/$n-control.log" | head -30
		echo "FAIL: $mod: the control (FAIL lines removed) does not build"; bad=1; continue
	fi
	echo "PASS: $mod ($want)"
done
exit $bad
