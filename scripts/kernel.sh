#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Applies the rrxe overlay (new files + patch series) to the cached Linux tree, configures
# it from scripts/config/rrxe.config and builds it incrementally.
#
#   kernel.sh            overlay, configure if needed, build (full or module-only)
#   kernel.sh --full     force the full bzImage + modules build
#
# A full build runs when anything outside drivers/infiniband/sw/rrxe changed since the last
# full build (the kernel crate, helpers, patches, config); otherwise only the module is
# rebuilt. Results are linked under build/: bzImage, modules/ (lib/modules/<ver> tree).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ -f "$KSRC/.rrxe-extracted" ] || rrxe_die "no kernel tree at $KSRC: run scripts/setup.sh (make setup)"
rrxe_make_args
FORCE_FULL=${1:-}

# --- overlay ---------------------------------------------------------------------------
overlay() {
	# New files: copied only when their content differs, so make sees no change otherwise.
	mkdir -p "$KSRC/rust/kernel/rdma" "$KSRC/drivers/infiniband/sw/rrxe"
	# A Rust file added or removed is in no dependency list make has (rustc lists the files
	# it read): the crate's root is touched so that the crate is built again.
	local changes
	changes=$(rsync -rc --delete --itemize-changes "$REPO/rust/kernel/rdma/" "$KSRC/rust/kernel/rdma/")
	if grep -qE '^(\*deleting|>f\+)' <<<"$changes"; then touch "$KSRC/rust/kernel/lib.rs"; fi
	rsync -c "$REPO/rust/helpers/rdma.c" "$KSRC/rust/helpers/rdma.c"
	# The software transport tracepoints (in ib_core, built in as the kernel crate is).
	rsync -c "$REPO/include/trace/events/rdma_sw.h" "$KSRC/include/trace/events/rdma_sw.h"
	rsync -c "$REPO/drivers/infiniband/core/sw_trace.c" "$KSRC/drivers/infiniband/core/sw_trace.c"
	changes=$(rsync -rc --delete --itemize-changes --exclude='*.o' --exclude='*.ko' --exclude='.*' \
		"$REPO/drivers/infiniband/sw/rrxe/" "$KSRC/drivers/infiniband/sw/rrxe/")
	if grep -qE '^(\*deleting|>f\+)' <<<"$changes"; then
		touch "$KSRC/drivers/infiniband/sw/rrxe/rdma_rrxe.rs"
	fi

	# Patch series: every touched file is rebuilt from its pristine copy, then installed
	# only if the result differs from what the tree has.
	local orig=$CACHE/orig-$LINUX_VER stage
	stage=$(mktemp -d)
	local files
	files=$(sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$REPO"/patches/*.patch | sort -u)
	for f in $files; do
		if [ ! -f "$orig/$f" ]; then
			[ -f "$KSRC/$f" ] || rrxe_die "patched file $f missing from the tree"
			mkdir -p "$(dirname "$orig/$f")"
			cp "$KSRC/$f" "$orig/$f"
		fi
		mkdir -p "$(dirname "$stage/$f")"
		cp "$orig/$f" "$stage/$f"
	done
	for p in "$REPO"/patches/*.patch; do
		patch -s -p1 -d "$stage" --no-backup-if-mismatch <"$p" || rrxe_die "patch $(basename "$p") does not apply"
	done
	for f in $files; do
		cmp -s "$stage/$f" "$KSRC/$f" || cp "$stage/$f" "$KSRC/$f"
	done
	rm -rf "$stage"
}

# --- config ----------------------------------------------------------------------------
configure() {
	local frags=("$REPO/scripts/config/rrxe.config") stamp=$KOUT/.rrxe-config-stamp sum
	[ -z "$VARIANT" ] || frags+=("$REPO/scripts/config/$VARIANT.config")
	sum=$(cat "${frags[@]}" "$REPO"/patches/*.patch "$REPO/drivers/infiniband/sw/rrxe/Kconfig" | sha256sum | cut -d' ' -f1)
	[ -f "$KOUT/.config" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$sum" ] && return 0
	rrxe_log "configuring (tinyconfig + $(for f in "${frags[@]}"; do basename "$f"; done | paste -sd+))"
	mkdir -p "$KOUT"
	make -s "${MK[@]}" tinyconfig >/dev/null
	"$KSRC/scripts/kconfig/merge_config.sh" -m -O "$KOUT" "$KOUT/.config" "${frags[@]}" >/dev/null
	make -s "${MK[@]}" olddefconfig >/dev/null
	# Each option as the last fragment that names it wants it (a variant overrides).
	local bad=0 line opt
	local -A want=()
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*) want[${line%%=*}]=$line ;;
		"# CONFIG_"*" is not set") opt=${line#\# }; want[${opt%% *}]=$line ;;
		esac
	done < <(cat "${frags[@]}")
	for opt in "${!want[@]}"; do
		line=${want[$opt]}
		case "$line" in
		CONFIG_*=*) grep -qxF "$line" "$KOUT/.config" || { rrxe_log "config did not stick: $line"; bad=1; } ;;
		*) grep -q "^$opt=" "$KOUT/.config" && { rrxe_log "config did not stick: $line"; bad=1; } ;;
		esac
	done
	[ $bad = 0 ] || { make -s "${MK[@]}" rustavailable || true; rrxe_die "kernel configuration incomplete"; }
	echo "$sum" >"$stamp"
}

full_inputs_sum() {
	(cd "$REPO" && find rust patches include drivers/infiniband/core scripts/config/rrxe.config ${VARIANT:+scripts/config/$VARIANT.config} \
		-type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}

# A tree given by RRXE_KSRC carries the driver already (make series-check): no overlay.
[ -n "${RRXE_KSRC:-}" ] || overlay
configure
stamp=$KOUT/.rrxe-full-stamp
sum=$(full_inputs_sum)
t0=$(date +%s)
if [ "$FORCE_FULL" = --full ] || [ ! -f "$KOUT/arch/x86/boot/bzImage" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]; then
	rrxe_log "full build (bzImage + modules), -j$JOBS"
	# The kernel crate's warnings are shown only when it compiles: keep them for
	# scripts/check.sh's build_no_warnings, which cannot see them in a later build.
	make -s "${MK[@]}" -j"$JOBS" bzImage modules 2>&1 | tee "$KOUT/.rrxe-full-build.log"
	rm -rf "$MODSTAGE"
	make -s "${MK[@]}" INSTALL_MOD_PATH="$MODSTAGE" INSTALL_MOD_STRIP=1 modules_install >/dev/null
	echo "$sum" >"$stamp"
else
	rrxe_log "module-only build (drivers/infiniband/sw/rrxe)"
	# The driver and its C KUnit module (rrxe_frwr_test), each installed if it changed.
	mods=(rdma_rrxe)
	grep -q '^CONFIG_RDMA_RRXE_KUNIT_TEST=m' "$KOUT/.config" && mods+=(rrxe_frwr_test)
	make -s "${MK[@]}" -j"$JOBS" $(printf 'drivers/infiniband/sw/rrxe/%s.ko ' "${mods[@]}")
	for m in "${mods[@]}"; do
		dst=$(find "$MODSTAGE/lib/modules" -name "$m.ko" | head -1)
		[ -n "$dst" ] || rrxe_die "no installed $m.ko; run kernel.sh --full"
		cmp -s "$KOUT/drivers/infiniband/sw/rrxe/$m.ko" "$dst" ||
			llvm-strip-19 --strip-debug -o "$dst" "$KOUT/drivers/infiniband/sw/rrxe/$m.ko"
	done
fi
rrxe_log "build done in $(( $(date +%s) - t0 )) s"

mkdir -p "$BUILD"
ln -sfn "$KOUT/arch/x86/boot/bzImage" "$BUILD/bzImage"
ln -sfn "$(ls -d "$MODSTAGE"/lib/modules/* | head -1)" "$BUILD/modules"
