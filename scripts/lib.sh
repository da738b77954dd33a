# SPDX-License-Identifier: GPL-2.0
# Common settings for the rrxe scripts. Source it; it sets paths and the kernel make line.

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${RRXE_CACHE:-$HOME/.cache/rrxe}
LINUX_VER=7.3.4
# extracted source + rrxe overlay (RRXE_KSRC: another tree, e.g. make series-check's
# pristine tree with the series applied, which kernel.sh then leaves as it is)
KSRC=${RRXE_KSRC:-$CACHE/linux-$LINUX_VER}
# RRXE_VARIANT=kasan (make check-kasan): a second kernel configuration, built beside the
# first (its own build output and build/ links), scripts/config/<variant>.config on top.
VARIANT=${RRXE_VARIANT:-}
KOUT=$CACHE/build-$LINUX_VER${VARIANT:+-$VARIANT}   # O= build output
MODSTAGE=$KOUT/staging                # modules_install target
BUILD=$REPO/build${VARIANT:+-$VARIANT}  # git-ignored links: bzImage, modules/, initramfs
JOBS=${JOBS:-$(( $(nproc) + 1 ))}

export PATH="$CACHE/tools/bin:$HOME/.cargo/bin:$PATH"
export LIBCLANG_PATH=/usr/lib/llvm-19/lib

rrxe_log() { printf '[%s] %s\n' "$(basename "$0" .sh)" "$*" >&2; }
rrxe_die() { printf '[%s] ERROR: %s\n' "$(basename "$0" .sh)" "$*" >&2; exit 1; }

rrxe_make_args() {
	local rustc_ver
	rustc_ver=$(rustc --version | awk '{print $2}')
	MK=(-C "$KSRC" O="$KOUT" LLVM=-19 RUST_LIB_SRC="$CACHE/rust-src-$rustc_ver/library"
	    KBUILD_BUILD_USER=rrxe KBUILD_BUILD_HOST=rrxe KBUILD_BUILD_TIMESTAMP='Thu Jan  1 00:00:00 UTC 2026')
	[ -n "${CLIPPY:-}" ] && MK+=(CLIPPY=1)
	return 0
}

# console_lines FILE: a guest console as the script printed it. The kernel writes its
# messages ("[%5lu.%06lu] text", printk's timestamp) to the serial port whole, but
# wherever the script's output happens to be, so a message can land in the middle of a
# result line ("RRXE-TEST name[   12.345678] rdma_rxe: ...\n ok"): such messages are cut
# out (only with printk's six decimals: test tools print times of their own in brackets).
console_lines() {
	perl -0777 -pe '1 while s/(?<=[^\n])\[ *[0-9]+\.[0-9]{6}\] [^\n]*\n//g' "$1"
}
