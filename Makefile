# SPDX-License-Identifier: GPL-2.0
#
# rrxe: soft-RoCE RDMA driver in Rust. Entry points:
#
#   make demo      build everything, boot two QEMU guests, run ibv_rc_pingpong over rrxe
#   make bench     perftest (64 KiB, QP scaling, size sweeps), pingpong, NVMe/RDMA and QP cost
#                  for rrxe and rdma_rxe, interleaved, on a kernel without lock debugging
#                  (build-bench/); writes build-bench/bench/rrxe-bench.rst and its plots
#                  (BENCH_UPDATE_DOC=1: Documentation/ instead; BENCH_QUICK=1: one quick
#                  round; BENCH_PARTS: see bench.sh)
#   make profile   perf profiles of both guests during 64 KiB ib_write_bw/ib_read_bw, rrxe
#                  and rdma_rxe, on the bench kernel (PROFILE_*: see scripts/profile.sh)
#   make bench-read-large  a 1 GiB READ at MTU 256, rrxe and rdma_rxe, with the responder's
#                  guest pinged and timed (READ_*: see scripts/read-large-bench.sh)
#   make bench-cc  congestion control through an ECN-marking bottleneck, 1, 8 and 64 QPs,
#                  off and on (CC_*: see scripts/cc-bench.sh)
#   make check     every test: host (cargo), KUnit in a guest, end to end in guests
#                  (T=GLOB[,GLOB...]: only those groups, see scripts/check.sh)
#   make check-kasan  the guest groups (T=..., default a robustness subset) on a KASAN kernel
#   make kunit     the driver's Rust KUnit suites with the kernel's kunit.py run
#                  (drivers/infiniband/sw/rrxe/.kunitconfig; a kernel of its own, ~10 min)
#   make shell     an interactive guest with rdma_rrxe loaded
#   make kernel    (re)build the kernel and modules incrementally (module-only when possible)
#   make setup     install the toolchain, Linux source and tools (idempotent)
#   make fuzz      run the wire parser fuzzer (FUZZ_SECONDS, default 600)
#   make series    write the kernel patch series for your own 7.3 tree into build/series/
#                  (git format-patch; checkpatch --strict report; RRXE_SIGNOFF="Name <mail>")
#   make series-check  the series applied with git am to a pristine 7.3.4 tree, built
#                  (CLIPPY=1, make rustdoc) and the demo booted on it (a second kernel build)
#   make help      this text
#
# Build state is cached under $(RRXE_CACHE) (default ~/.cache/rrxe); build/ holds links.

SHELL := /bin/bash
FUZZ_SECONDS ?= 600

.PHONY: help all setup kernel initramfs host-test check check-kasan kunit demo bench profile bench-read-large bench-cc shell fuzz series series-check clean

all: kernel

# The entry points: the comment at the top of this file.
help:
	@sed -n '3,/^$$/p' Makefile | sed -e 's/^# \{0,1\}//' -e '/^$$/d'

setup:
	scripts/setup.sh

kernel: setup
	CLIPPY=1 scripts/kernel.sh

initramfs: kernel
	scripts/initramfs.sh

host-test:
	cd tools/rrxe && cargo test --quiet

check: setup
	T="$(T)" scripts/check.sh

# The guest groups on a KASAN kernel (a second build beside the first; not part of `make
# check`: KASAN under TCG makes the suite take hours). T= selects groups as for check.
check-kasan: setup
	RRXE_VARIANT=kasan CHECK_TIMEOUT_SCALE=4 T="$(or $(T),device,faults,inject-live,teardown,rnr,loss)" scripts/check.sh

# The Rust KUnit suites as upstream runs them: kunit.py run on the .kunitconfig, rrxe built
# in. Arguments to kunit.py in KUNIT_ARGS (e.g. a suite filter, KUNIT_ARGS='rrxe_rc').
kunit: setup
	scripts/kunit.sh $(KUNIT_ARGS)

demo: setup
	scripts/demo.sh

bench: setup
	RRXE_VARIANT=bench scripts/bench.sh

profile: setup
	RRXE_VARIANT=bench scripts/profile.sh

bench-read-large: setup
	RRXE_VARIANT=bench scripts/read-large-bench.sh

bench-cc: setup
	scripts/cc-bench.sh

shell: initramfs
	scripts/qemu.sh --interactive --append rrxe.load=rdma_rrxe --out build/shell

fuzz:
	tools/rrxe/fuzz.sh $(FUZZ_SECONDS)

series:
	scripts/series.sh build/series

# The series applied with git am to a pristine 7.3.4 tree, built, documented, demo booted.
series-check: setup
	scripts/series-check.sh

clean:
	rm -rf build build-kasan build-bench tools/rrxe/target
