#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds build/pyverbs.cpio: what rdma-core's pyverbs suite needs in a test guest, as an
# archive that scripts/qemu.sh --cpio appends to the guest's initramfs (only the pyverbs
# group pays for its ~45 MB):
#   - Python 3.11 (Debian's, with the standard library minus what no test imports: tkinter,
#     idlelib, its own tests, ...; .pyc caches included so imports are not compiled at boot),
#   - python3-pyverbs (the Debian package matching the installed rdma-core, v44),
#   - the suite: tools/testing/pyverbs/rdma-core-v44/tests, as /usr/local/lib/rrxe/pyverbs/tests,
#   - scripts/guest/pyverbs-run.py, the runner that prints one line per test.
# Every path goes under /usr: the main archive's /lib and /bin are symlinks, and an entry
# of another type at the same path would replace them.
# Nothing is rebuilt when the inputs are unchanged; FORCE=1 rebuilds anyway.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

OUT=$BUILD/pyverbs.cpio
SUITE=$REPO/tools/testing/pyverbs/rdma-core-v44/tests
RUNNER=$REPO/scripts/guest/pyverbs-run.py
PY=/usr/bin/python3.11
PYLIB=/usr/lib/python3.11
PYVERBS=/usr/lib/python3/dist-packages/pyverbs
[ -x "$PY" ] && [ -d "$PYVERBS" ] || rrxe_die "python3.11 and python3-pyverbs are needed (run scripts/setup.sh)"
[ -f "$SUITE/__init__.py" ] || rrxe_die "no pyverbs suite in $SUITE"

# Extension modules: all of the standard library's but those that pull in large libraries
# no test uses (TLS, databases, terminal UIs), and pyverbs' (with its mlx5/efa providers).
mapfile -t mods < <(find "$PYLIB/lib-dynload" "$PYVERBS" -name '*.so' |
	grep -Ev '/(_ssl|_hashlib|_sqlite3|_dbm|_gdbm|_tkinter|nis|_curses|_curses_panel|readline)\.' | sort)
libs_of() { ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3; next} /^\t\// {print $1}'; }
mapfile -t libs < <(libs_of "$PY" "${mods[@]}" | sort -u)

sum=$({
	stat -L -c '%n %s %Y' "$PY" "${mods[@]}" "${libs[@]}"
	find "$PYLIB" "$PYVERBS" "$SUITE" -type f -printf '%p %s %T@\n' | sort
	cat "$0" "$RUNNER"
} | sha256sum | cut -d' ' -f1)
if [ -z "${FORCE:-}" ] && [ -f "$OUT" ] && [ "$(cat "$OUT.sum" 2>/dev/null)" = "$sum" ]; then
	rrxe_log "pyverbs archive up to date"
	exit 0
fi

t0=$EPOCHREALTIME
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# put SRC: copies SRC to its path in the guest, /lib and /lib64 mapped under /usr.
put() {
	local dst
	dst=$stage$(realpath -s "$1" | sed -E 's,^/(lib|lib64)/,/usr/\1/,')
	mkdir -p "$(dirname "$dst")" && cp -L "$1" "$dst"
}
for f in "$PY" "${mods[@]}" "${libs[@]}"; do put "$f"; done
ln -s python3.11 "$stage/usr/bin/python3"
rsync -a --exclude=/test/ --exclude=/idlelib/ --exclude=/tkinter/ --exclude=/turtledemo/ \
	--exclude=/ensurepip/ --exclude=/lib2to3/ --exclude=/pydoc_data/ --exclude=/distutils/ \
	--exclude='/config-3.11-*/' --exclude=/site-packages/ --exclude=/dist-packages/ \
	--exclude=/lib-dynload/ "$PYLIB/" "$stage$PYLIB/"
rsync -a --exclude='*.so' "$PYVERBS/" "$stage$PYVERBS/"
mkdir -p "$stage/usr/local/lib/rrxe/pyverbs" "$stage/usr/local/bin"
rsync -a --exclude=__pycache__ "$SUITE/" "$stage/usr/local/lib/rrxe/pyverbs/tests/"
install -m 755 "$RUNNER" "$stage/usr/local/bin/pyverbs-run.py"

(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc --owner=0:0 --reproducible --quiet) >"$OUT.tmp.$$"
mv "$OUT.tmp.$$" "$OUT"
echo "$sum" >"$OUT.sum"
rrxe_log "built $(basename "$OUT") ($(du -k "$OUT" | cut -f1) KiB) in $(awk "BEGIN {printf \"%.1f\", $EPOCHREALTIME - $t0}") s"
