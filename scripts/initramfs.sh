#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Builds build/initramfs.cpio for the QEMU test guests:
#   busybox-static (+ applet links), /init (scripts/guest/init), the guest helpers
#   (/usr/local/lib/rrxe/lib.sh), rdma-core / perftest / iproute2 / iperf3 tools with their
#   libraries (ldd closure), the rxe verbs provider and the modules tree of build/modules.
#
#   initramfs.sh [FILE...]       FILEs (and $EXTRA_FILES, space separated) go to
#                                /usr/local/bin, with the libraries they need.
#
# The test programs in tools/testing/rrxe/*.c are compiled (against libibverbs) into
# build/testbin/ and go to /usr/local/bin too.
#
# Nothing is rebuilt when the inputs (file list, sizes, mtimes, script contents) are
# unchanged; FORCE=1 rebuilds anyway. Per-run files are added by scripts/qemu.sh.
# /bin/sh is bash: Debian's static busybox runs its own applets in preference to $PATH
# (from its sh and from timeout/xargs/env...), so `ip` and `tc` would be busybox's, not
# iproute2's. bash and the coreutils/util-linux command runners follow $PATH.
# The archive is not compressed: under TCG the kernel inflates 19 MB in ~1 s, while an
# uncompressed one unpacks in ~0.4 s.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

TOOLS="busybox bash timeout env xargs setsid taskset stdbuf
	ibv_devices ibv_devinfo ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong
	ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat
	ib_atomic_bw ib_atomic_lat rping mckey rdma ip tc ss iperf3"
MULTIARCH=/usr/lib/x86_64-linux-gnu
PROVIDER=$MULTIARCH/libibverbs/librxe-rdmav34.so
OUT=$BUILD/initramfs.cpio
GUEST=$REPO/scripts/guest
# shellcheck disable=SC2206
EXTRA=("$@" ${EXTRA_FILES:-})

# --- test programs ---------------------------------------------------------------------
mkdir -p "$BUILD/testbin"
# A program is rebuilt when it or any header there (rrxe_test.h, roce_pkt.h, ...) is newer.
for src in "$REPO"/tools/testing/rrxe/*.c; do
	[ -e "$src" ] || continue
	bin=$BUILD/testbin/$(basename "$src" .c)
	stale=
	for h in "$REPO"/tools/testing/rrxe/*.h; do
		[ "$h" -nt "$bin" ] && stale=1
	done
	if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ] || [ -n "$stale" ]; then
		gcc -O2 -g -Wall -Wextra -Werror -o "$bin" "$src" -libverbs || rrxe_die "cannot build $src"
	fi
	EXTRA+=("$bin")
done

# --- inputs ----------------------------------------------------------------------------
bins=()
for t in $TOOLS; do
	p=$(command -v "$t") || rrxe_die "$t not found (run scripts/setup.sh)"
	bins+=("$p")
done
libs_of() { ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3; next} /^\t\// {print $1}'; }
# libgcc_s is loaded at run time by pthread_exit() (rping's threads), not linked.
mapfile -t libs < <({ readlink -f /lib/x86_64-linux-gnu/libgcc_s.so.1; libs_of "${bins[@]}" "$PROVIDER" "${EXTRA[@]}"; } | sort -u)
# stdbuf (line-buffered output of tools that a test watches) preloads libstdbuf.so.
data=("$PROVIDER" /etc/libibverbs.d/rxe.driver "$MULTIARCH"/tc/*.dist /usr/libexec/coreutils/libstdbuf.so)
mapfile -t -O ${#data[@]} data < <(find /etc/iproute2 -type f)
MODDIR=
if [ -e "$BUILD/modules" ]; then
	MODDIR=$(readlink -f "$BUILD/modules")
else
	rrxe_log "warning: no build/modules (kernel not built yet): initramfs without modules"
fi

sum=$({
	stat -L -c '%n %s %Y' "${bins[@]}" "${libs[@]}" "${data[@]}" "${EXTRA[@]}"
	cat "$0" "$GUEST/init" "$GUEST/lib.sh"
	[ -z "$MODDIR" ] || (cd "$MODDIR" && find . -path ./build -prune -o -path ./source -prune -o -printf '%p %s %T@\n' | sort)
} | sha256sum | cut -d' ' -f1)
if [ -z "${FORCE:-}" ] && [ -f "$OUT" ] && [ "$(cat "$OUT.sum" 2>/dev/null)" = "$sum" ]; then
	rrxe_log "initramfs up to date"
	exit 0
fi

# --- staging ---------------------------------------------------------------------------
t0=$EPOCHREALTIME
mkdir -p "$BUILD"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cd "$stage"
mkdir -p usr/bin usr/sbin usr/lib usr/lib64 usr/local/bin usr/local/lib/rrxe \
	etc/libibverbs.d dev proc sys tmp run root
ln -s usr/bin bin; ln -s usr/sbin sbin; ln -s usr/lib lib; ln -s usr/lib64 lib64

put() { mkdir -p "$stage/$(dirname "$2")" && cp -L "$1" "$stage/$2"; }
for f in "${bins[@]}" "${libs[@]}" "${data[@]}"; do put "$f" "$f"; done
for f in "${EXTRA[@]}"; do install -m 755 "$f" usr/local/bin/; done
ln -s bash usr/bin/sh
busybox --list-full | while read -r p; do [ -e "$p" ] || ln -s /bin/busybox "$p"; done
install -m 755 "$GUEST/init" init
install -m 644 "$GUEST/lib.sh" usr/local/lib/rrxe/lib.sh

cat >etc/passwd <<EOF
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
printf 'root:x:0:\nnogroup:x:65534:\n' >etc/group
printf '127.0.0.1 localhost\n::1 localhost\n192.0.2.1 a\n192.0.2.2 b\n' >etc/hosts
printf 'passwd: files\ngroup: files\nhosts: files\nservices: files\nprotocols: files\n' >etc/nsswitch.conf
printf 'ip 0 IP\nicmp 1 ICMP\ntcp 6 TCP\nudp 17 UDP\nipv6-icmp 58 IPv6-ICMP\n' >etc/protocols
printf 'iperf3 5201/tcp\nroce 4791/udp\n' >etc/services

if [ -n "$MODDIR" ]; then
	kver=$(basename "$MODDIR")
	mkdir -p "lib/modules/$kver"
	rsync -a --exclude=/build --exclude=/source "$MODDIR/" "lib/modules/$kver/"
	depmod -b "$stage" "$kver"
fi

find . | LC_ALL=C sort | cpio -o -H newc --owner=0:0 --reproducible --quiet >"$OUT.tmp.$$"
mv "$OUT.tmp.$$" "$OUT"
echo "$sum" >"$OUT.sum"
rrxe_log "built $(basename "$OUT") ($(du -k "$OUT" | cut -f1) KiB) in $(awk "BEGIN {printf \"%.1f\", $EPOCHREALTIME - $t0}") s"
