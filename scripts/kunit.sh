#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make kunit: the driver's Rust KUnit suites the kernel's way, with tools/testing/kunit's
# kunit.py and drivers/infiniband/sw/rrxe/.kunitconfig: `kunit.py config` and `kunit.py
# build` make a kernel of its own with rrxe built in (x86_64, LLVM, $CACHE/kunit-<version>),
# QEMU boots it once with kunit.enable=1, and `kunit.py parse` reads its KTAP; the exit
# status is kunit.py parse's. The kernel tree is the overlaid one scripts/kernel.sh keeps
# (the driver, the kernel::rdma abstractions and the patch series in place).
#
# QEMU is started here, not by `kunit.py run`/`exec`: those ask for `-accel kvm` first, and
# where /dev/kvm exists but cannot run a guest (nested, as on this project's machines) the
# boot prints nothing; this boots under TCG as scripts/qemu.sh does.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/scripts/lib.sh"
[ -f "$KSRC/.rrxe-extracted" ] || rrxe_die "no kernel tree at $KSRC: run scripts/setup.sh (make setup)"
# The overlay (and the test kernel, incrementally): the tree kunit.py builds from.
"$REPO/scripts/kernel.sh"
rustc_ver=$(rustc --version | awk '{print $2}')
out=$CACHE/kunit-$LINUX_VER
kunit=(python3 "$KSRC/tools/testing/kunit/kunit.py")
opts=(--kunitconfig="$REPO/drivers/infiniband/sw/rrxe/.kunitconfig" --arch=x86_64
	--build_dir="$out" --make_options LLVM=-19
	--make_options RUST_LIB_SRC="$CACHE/rust-src-$rustc_ver/library")
(cd "$KSRC" && "${kunit[@]}" config "${opts[@]}" && "${kunit[@]}" build "${opts[@]}" --jobs="$(nproc)")
echo "[kunit] booting $out/arch/x86/boot/bzImage (TCG), console in $out/test.log"
timeout 900 qemu-system-x86_64 -nodefaults -no-user-config -accel tcg -m 1024 -no-reboot \
	-nographic -serial stdio -kernel "$out/arch/x86/boot/bzImage" \
	-append 'kunit.enable=1 console=ttyS0 kunit_shutdown=poweroff' </dev/null >"$out/test.log" 2>&1 || true
"${kunit[@]}" parse "$out/test.log"
