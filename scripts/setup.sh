#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Installs everything rrxe needs on a fresh Debian 12 machine, idempotently.
#
#  * Debian 12 packages (build tools, clang/lld/llvm 19, QEMU, busybox, rdma-core tools).
#  * Pinned inputs that Debian 12 does not carry, fetched as *architecture-independent*
#    packages from trixie-backports through a private apt configuration (the system's
#    apt sources are never touched), unpacked with dpkg -x into the cache:
#      - linux-source-7.3 (Linux 7.3.4 source tarball)
#      - rust-src matching `rustc --version` (the kernel compiles `core` from source)
#  * bindgen-cli from crates.io, into the cache.
#
# Everything lands under $RRXE_CACHE (default ~/.cache/rrxe); scripts/lib.sh knows the
# paths. Fails with a clear message when a pinned input is unavailable.
set -euo pipefail

LINUX_SRC_PKG=linux-source-7.3
LINUX_SRC_VER=7.3.4-1~bpo13+1
LINUX_VER=7.3.4
BINDGEN_VER=0.73.2

CACHE=${RRXE_CACHE:-$HOME/.cache/rrxe}
mkdir -p "$CACHE"
log() { printf '[setup] %s\n' "$*" >&2; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }

# --- 0. What setup cannot install: fail fast, each with its fix -------------------------
export PATH="$HOME/.cargo/bin:$PATH"
[ "$(uname -m)" = x86_64 ] || die "x86-64 only (the guests are x86-64 QEMU TCG machines)"
[ -r /etc/debian_version ] || die "Debian 12 (bookworm) expected: setup installs its packages with apt-get"
for t in rustc cargo rustfmt; do
	command -v "$t" >/dev/null || die "no $t: install Rust with rustup (https://rustup.rs), e.g. 'rustup toolchain install 1.95.0 --component rustfmt,clippy'"
done
cargo clippy --version >/dev/null 2>&1 || die "no clippy for $(rustc --version): 'rustup component add clippy' (make kernel builds with CLIPPY=1)"
avail=$(df -Pk "$CACHE" | awk 'NR == 2 {print int($4 / 1024 / 1024)}')
[ "${avail:-0}" -ge 4 ] || [ -f "$CACHE/linux-$LINUX_VER/.rrxe-extracted" ] ||
	die "about 3 GB needed under $CACHE (${avail} GB free): free some space or set RRXE_CACHE"

# --- 1. Debian 12 packages -------------------------------------------------------------
DEB_PKGS=(
	build-essential flex bison bc libelf-dev libssl-dev cpio kmod dwarves xz-utils rsync
	clang-19 lld-19 llvm-19 libclang-19-dev
	qemu-system-x86 busybox-static
	ibverbs-utils ibverbs-providers libibverbs-dev perftest rdmacm-utils iproute2
	tshark iperf3 python3 python3-pyverbs linux-perf rustfilt
)
missing=()
for p in "${DEB_PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	[ "$(id -u)" = 0 ] || die "run as root (apt-get), or install these Debian packages first: ${missing[*]}"
	log "installing Debian packages: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq || die "apt-get update failed"
	echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
		die "apt-get install failed for: ${missing[*]}"
fi

# --- 2. Private apt configuration for trixie-backports (arch-independent packages only) --
# The mirror is the one the system already uses for Debian; only the suite differs.
# Only the amd64 index is read: it lists the arch-all packages too, and some mirrors
# serve a binary-all index out of step with the Release file.
APTDIR=$CACHE/apt
mirror=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '/^deb / && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
[ -n "$mirror" ] || die "cannot find the Debian mirror in the system's apt sources"
APTOPTS=(-o Dir::Etc::sourcelist="$APTDIR/sources.list" -o Dir::Etc::sourceparts=/dev/null
	-o Dir::State::Lists="$APTDIR/lists" -o Dir::Cache="$APTDIR/cache"
	-o APT::Architecture=amd64 -o APT::Architectures::=amd64
	-o Debug::NoLocking=1)
apt_private_update() {
	mkdir -p "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie-backports main" >"$APTDIR/sources.list"
	if [ ! -f "$APTDIR/updated" ] || [ -n "$(find "$APTDIR/updated" -mmin +720)" ]; then
		log "updating private trixie-backports package lists"
		local i
		for i in 1 2 3 4 5; do
			# apt-get update exits 0 on some fetch failures: require a clean run.
			if apt-get "${APTOPTS[@]}" update -qq >"$APTDIR/update.log" 2>&1 &&
				! grep -q '^E:' "$APTDIR/update.log"; then
				break
			fi
			[ "$i" = 5 ] && { cat "$APTDIR/update.log" >&2; die "private apt-get update (trixie-backports) failed"; }
			log "private apt-get update failed (try $i), retrying in $((i * 10)) s"
			sleep $((i * 10))
		done
		touch "$APTDIR/updated"
	fi
}
fetch_deb() { # name version dest-dir
	local name=$1 ver=$2 dest=$3
	mkdir -p "$CACHE/debs"
	local deb
	deb=$(ls "$CACHE/debs/${name}_"*.deb 2>/dev/null | grep -F "$(echo "$ver" | sed 's/:/%3a/')" | head -1 || true)
	if [ -z "$deb" ]; then
		apt_private_update
		log "downloading $name=$ver"
		(cd "$CACHE/debs" && apt-get "${APTOPTS[@]}" download -qq "$name=$ver" >/dev/null) ||
			die "pinned input $name=$ver is not available from trixie-backports (gone from the archive?)"
		deb=$(ls "$CACHE/debs/${name}_"*.deb | head -1)
	fi
	rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
	dpkg -x "$deb" "$dest.tmp"
	rm -rf "$dest" && mv "$dest.tmp" "$dest"
}

# --- 3. Linux 7.3.4 source -------------------------------------------------------------
SRC=$CACHE/linux-$LINUX_VER
if [ ! -f "$SRC/.rrxe-extracted" ]; then
	fetch_deb "$LINUX_SRC_PKG" "$LINUX_SRC_VER" "$CACHE/pkg-linux-source"
	tarball=$(ls "$CACHE"/pkg-linux-source/usr/src/linux-source-7.3.tar.xz 2>/dev/null) ||
		die "linux-source package has no tarball"
	log "extracting Linux $LINUX_VER"
	rm -rf "$SRC" "$CACHE/extract.tmp" && mkdir -p "$CACHE/extract.tmp"
	tar -C "$CACHE/extract.tmp" -xf "$tarball"
	mv "$CACHE/extract.tmp/linux-source-7.3" "$SRC" && rmdir "$CACHE/extract.tmp"
	grep -q "^SUBLEVEL = 4" "$SRC/Makefile" || die "unexpected kernel version in $tarball"
	rm -rf "$CACHE/pkg-linux-source"
	touch "$SRC/.rrxe-extracted"
fi

# --- 4. rust-src matching rustc --------------------------------------------------------
command -v rustc >/dev/null || die "rustc not found (the machine's rustup toolchain is required)"
RUSTC_VER=$(rustc --version | awk '{print $2}')
RUST_SRC=$CACHE/rust-src-$RUSTC_VER
if [ ! -d "$RUST_SRC/library/core" ]; then
	apt_private_update
	ver=$(apt-cache "${APTOPTS[@]}" madison rust-src 2>/dev/null | awk -v v="$RUSTC_VER" '$3 ~ "^"v"[+]" {print $3; exit}')
	[ -n "$ver" ] || die "no Debian rust-src package matches rustc $RUSTC_VER in trixie-backports"
	fetch_deb rust-src "$ver" "$CACHE/pkg-rust-src"
	lib=$(ls -d "$CACHE"/pkg-rust-src/usr/src/rustc-*/library | head -1)
	[ -d "$lib/core" ] || die "rust-src package lacks library/core"
	rm -rf "$RUST_SRC" && mkdir -p "$RUST_SRC" && mv "$lib" "$RUST_SRC/library"
	rm -rf "$CACHE/pkg-rust-src"
fi

# --- 5. bindgen ------------------------------------------------------------------------
TOOLS=$CACHE/tools
if ! "$TOOLS/bin/bindgen" --version 2>/dev/null | grep -q "$BINDGEN_VER"; then
	log "installing bindgen-cli $BINDGEN_VER"
	cargo install -q --locked --root "$TOOLS" bindgen-cli --version "$BINDGEN_VER" ||
		die "cargo install bindgen-cli $BINDGEN_VER failed"
fi

log "ready: Linux $LINUX_VER in $SRC, rust-src $RUSTC_VER, bindgen $BINDGEN_VER"
