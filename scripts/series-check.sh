#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make series-check: what a user carrying rrxe into their own tree does, end to end.
#   1. make series (git format-patch output, checkpatch --strict report) into build/series;
#   2. a pristine Linux 7.3.4 git tree from the cached Debian source package
#      ($CACHE/series-linux-7.3.4, tagged `pristine`, made once), reset to it;
#   3. git am of the series onto it;
#   4. a CLIPPY=1 build of that tree (test configuration, O=$CACHE/build-7.3.4-series),
#      with no warning from the rrxe files, the kernel crate type-checked at each
#      kernel::rdma patch (each builds on its own), and `make rustdoc` with no warning;
#   5. the demo (two guests, ibv_rc_pingpong over rrxe) on the kernel and module built from
#      the applied series.
# A first run builds a whole kernel (about 15 minutes on 2 cores); later ones are incremental.
# Not part of make check (the second kernel build does not fit its time budget).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
ST=$CACHE/series-linux-$LINUX_VER
OUT=$REPO/build/series-check
mkdir -p "$OUT"
export GIT_AUTHOR_NAME=rrxe GIT_AUTHOR_EMAIL=rrxe@localhost GIT_COMMITTER_NAME=rrxe GIT_COMMITTER_EMAIL=rrxe@localhost

"$REPO/scripts/series.sh" "$REPO/build/series"

if ! git -C "$ST" rev-parse -q --verify pristine >/dev/null 2>&1; then
	deb=$(ls "$CACHE"/debs/linux-source-7.3_*.deb 2>/dev/null | head -1)
	[ -n "$deb" ] || rrxe_die "no linux-source-7.3 package in $CACHE/debs: run scripts/setup.sh"
	rrxe_log "making a pristine $LINUX_VER git tree in $ST (once)"
	rm -rf "$ST"
	tmp=$(mktemp -d)
	dpkg-deb -x "$deb" "$tmp"
	tar -C "$tmp" -xf "$tmp"/usr/src/linux-source-7.3.tar.xz
	grep -q "^SUBLEVEL = 4" "$tmp/linux-source-7.3/Makefile" || rrxe_die "unexpected kernel version in $deb"
	mv "$tmp/linux-source-7.3" "$ST" && rm -rf "$tmp"
	git -C "$ST" init -q
	# -f: Debian's .gitignore ignores everything at the top level.
	git -C "$ST" add -A -f
	git -C "$ST" commit -q -m "Linux $LINUX_VER (Debian linux-source-7.3)"
	git -C "$ST" tag pristine
fi
git -C "$ST" am --abort >/dev/null 2>&1 || true
git -C "$ST" reset -q --hard pristine
git -C "$ST" clean -qfdx
if git -C "$ST" am -q "$REPO"/build/series/*.patch >"$OUT/am.log" 2>&1; then
	rrxe_log "git am: $(git -C "$ST" rev-list --count pristine..HEAD) patches applied to Linux $LINUX_VER"
else
	cat "$OUT/am.log"; rrxe_die "git am failed"
fi
touch "$ST/.rrxe-extracted"

export RRXE_KSRC=$ST RRXE_VARIANT=series
CLIPPY=1 "$REPO/scripts/kernel.sh" 2>&1 | tee "$OUT/build.log"
. "$REPO/scripts/lib.sh"
rrxe_make_args
if grep -E '(rust/kernel/rdma/|rust/helpers/rdma\.c|drivers/infiniband/sw/rrxe/)' -B2 -A6 \
	"$KOUT/.rrxe-full-build.log" "$OUT/build.log" | grep -qE 'warning|error'; then
	rrxe_die "the series' build warns (see $KOUT/.rrxe-full-build.log)"
fi
rrxe_log "the applied series builds with CLIPPY=1, no warnings from rrxe's files"

# Each kernel::rdma patch on its own: the kernel crate of the tree at that commit type-checks
# (the build's own rustc/clippy command, metadata only, into a scratch directory; bindings and
# helpers are the same at every such commit).
cmd=$(sed -n 's/^savedcmd_rust\/kernel\.o := //p' "$KOUT/rust/.kernel.o.cmd")
[ -n "$cmd" ] || rrxe_die "no command for rust/kernel.o in $KOUT"
scratch=$(mktemp -d)
cmd=$(printf '%s' "$cmd" | sed -E "s#--emit=[^ ]+##g; s#--crate-type rlib#--emit=metadata=$scratch/libkernel.rmeta --crate-type rlib#")
final=$(git -C "$ST" rev-parse HEAD)
for c in $(git -C "$ST" rev-list --reverse pristine..HEAD); do
	subj=$(git -C "$ST" log -1 --format=%s "$c")
	case $subj in "rust: rdma:"*) ;; *) continue ;; esac
	git -C "$ST" checkout -q "$c"
	if (cd "$KOUT" && export RUSTC_BOOTSTRAP=1 && eval "$cmd") >"$OUT/crate-$c.log" 2>&1; then
		rrxe_log "kernel crate builds at: $subj"
	else
		git -C "$ST" checkout -q "$final"; tail -30 "$OUT/crate-$c.log"; rm -rf "$scratch"
		rrxe_die "the kernel crate does not build at: $subj"
	fi
done
git -C "$ST" checkout -q "$final"
rm -rf "$scratch"
make -s "${MK[@]}" -j"$JOBS" rustdoc >"$OUT/rustdoc.log" 2>&1 || { tail -30 "$OUT/rustdoc.log"; rrxe_die "make rustdoc failed"; }
# Only kernel::rdma's warnings are the series' (upstream's own are not ours to judge).
if grep -E -A4 '^(warning|error)' "$OUT/rustdoc.log" | grep -qE -- '--> .*rust/kernel/rdma/'; then
	grep -E -A8 '^(warning|error)' "$OUT/rustdoc.log" | head -60; rrxe_die "make rustdoc warns about kernel::rdma"
fi
rrxe_log "make rustdoc: no warnings about kernel::rdma ($(grep -c '^warning' "$OUT/rustdoc.log" || true) elsewhere)"
"$REPO/scripts/demo.sh"
