#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Writes the rrxe kernel patch series for a Linux 7.3 tree into DIR (default build/series),
# three bisectable patches:
#   1. rust: bindings: the RDMA, networking and crc32 headers      (patches/0001)
#   2. rust: rdma: kernel::rdma with its helpers and Kconfig       (patches/0002-0004 + rust/)
#   3. RDMA/rrxe: the driver                                        (patches/0005 + drivers/)
# Apply with `git am DIR/*.patch` (or `patch -p1`), then enable CONFIG_RUST_RDMA_ABSTRACTIONS
# and CONFIG_RDMA_RRXE (see scripts/config/rrxe.config).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
DIR=${1:-$BUILD/series}
rm -rf "$DIR" && mkdir -p "$DIR"

# patch OUT SUBJECT BODY PATCHES -- NEWPATHS...: one patch of the diffs of PATCHES plus the
# files under NEWPATHS as new files.
patch_file() {
	local out=$DIR/$1 subj=$2 body=$3 p f
	shift 3
	(
		printf 'From: rrxe developers <rrxe@localhost>\nSubject: [PATCH] %s\n\n%s\n---\n' "$subj" "$body"
		while [ $# -gt 0 ] && [ "$1" != -- ]; do
			sed '1,/^---$/d' "$REPO/patches/$1"
			shift
		done
		[ $# -gt 0 ] && shift
		[ $# -gt 0 ] || return 0
		for f in $(cd "$REPO" && git ls-files "$@"); do
			diff -uN --label /dev/null --label "b/$f" /dev/null "$REPO/$f" || true
		done
	) >"$out"
}
cd "$REPO/patches"
patch_file 0001-rust-bindings-add-RDMA-networking-and-crc32-headers.patch \
	"rust: bindings: add RDMA, UDP tunnel, routing and crc32 headers" \
	"Expose ib_core, uverbs, ib_umem, rdma netlink, UDP tunnel, routing and crc32
declarations to the kernel crate, with CFI encodings for the enums in
ib_device_ops signatures." \
	0001-*.patch --
patch_file 0002-rust-rdma-add-the-kernel-rdma-abstractions.patch \
	"rust: rdma: add the kernel::rdma abstractions" \
	"Safe abstractions for Rust RDMA drivers: devices and their operations,
link types, netdevices and their events, user contexts. The kernel crate
is built in, so they need INFINIBAND=y and INFINIBAND_USER_ACCESS=y." \
	0002-*.patch 0003-*.patch 0004-*.patch -- rust/kernel/rdma rust/helpers/rdma.c
patch_file 0003-RDMA-rrxe-add-a-soft-RoCE-driver-in-Rust.patch \
	"RDMA/rrxe: add a soft-RoCE driver in Rust" \
	"RoCEv2 over any Ethernet netdevice, compatible with rdma_rxe's user ABI
(rdma-core's rxe provider drives it) and wire protocol." \
	0005-*.patch -- drivers/infiniband/sw/rrxe
rrxe_log "wrote $(ls "$DIR" | wc -l) patches to $DIR"
