#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make demo`: builds the kernel, the module and the guest image, then boots two QEMU guests
# on one virtual wire; each creates an rrxe device, and they run rdma-core's
# ibv_rc_pingpong over it (guest a the server, guest b the client).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
CLIPPY=1 "$REPO/scripts/kernel.sh"
"$REPO/scripts/initramfs.sh"
exec "$REPO/scripts/qemu.sh" --timeout 300 --out "$BUILD/demo" \
	"$REPO/scripts/demo/guest.sh" "$REPO/scripts/demo/guest.sh"
