#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Writes the rrxe kernel patch series for a Linux 7.3 tree into DIR (default build/series),
# as `git format-patch` output, one logical change per patch:
#   1. RDMA/core: a fix: a failed GET_CONTEXT releases the task reference (patches/0008)
#   2. RDMA/core: the software transport tracepoints                (patches/0006 + rdma_sw)
#   3. RDMA/core: rdma_user_mmap_vmalloc()                          (patches/0007)
#   4. rust: bindings: the RDMA, networking, crc32, rdma_sw headers (patches/0001)
#   5. rust: rdma: the module, its helpers and Kconfig, and the pieces that know nothing
#      of RDMA: timers and work embedded in objects, BH locking, process-context proof,
#      dynamic debug call sites                                     (patches/0002-0004)
#   6. rust: rdma: RoCEv2 networking: UDP tunnel port, routes, skbs, netdevices
#   7. rust: rdma: the verbs abstractions
#   8. RDMA/rrxe: the driver, its Kconfig and Makefile              (patches/0005 + drivers/)
#   9. Documentation: infiniband: the rrxe design page              (Documentation/rrxe.rst)
#   10. MAINTAINERS: the rrxe and kernel::rdma entry
# Patches 5 and 6 carry a mod.rs that declares only their modules (made here from the full
# one), so each builds on its own; make series-check compiles the kernel crate at each.
# The commits are made in a scratch git repository whose base holds the pristine 7.3.4
# copies of every file the series modifies, so the `index` lines name the real blobs and
# `git am` (3-way included) applies the series to a 7.3.4 tree.
#
# Author and Signed-off-by: RRXE_SIGNOFF="Name <email>" (default: your git identity; a
# placeholder if there is none, which you must replace before sending: the Developer's
# Certificate of Origin is yours to give).
#
# Then: checkpatch.pl --strict on each patch (report in DIR/checkpatch.txt), and `git apply`
# of the series, patch by patch, onto copies of the pristine files (exit status 1 if it does
# not apply). Apply with `git am DIR/*.patch`, then enable CONFIG_RUST_RDMA_ABSTRACTIONS and
# CONFIG_RDMA_RRXE (see scripts/config/rrxe.config).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
DIR=$(realpath -m "${1:-$BUILD/series}")
ORIG=$CACHE/orig-$LINUX_VER
[ -f "$KSRC/.rrxe-extracted" ] || rrxe_die "no kernel tree at $KSRC: run scripts/setup.sh (make setup)"
rm -rf "$DIR" && mkdir -p "$DIR"

signoff=${RRXE_SIGNOFF:-}
if [ -z "$signoff" ]; then
	n=$(git config user.name 2>/dev/null || true) e=$(git config user.email 2>/dev/null || true)
	if [ -n "$n" ] && [ -n "$e" ]; then signoff="$n <$e>"; fi
fi
[ -n "$signoff" ] || { signoff="Your Name <you@example.org>"; rrxe_log "no identity: Signed-off-by is a placeholder (set RRXE_SIGNOFF)"; }
name=${signoff% <*} email=${signoff##*<} email=${email%>}

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
export GIT_AUTHOR_NAME=$name GIT_AUTHOR_EMAIL=$email GIT_COMMITTER_NAME=$name GIT_COMMITTER_EMAIL=$email
export GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z'
g() { git -C "$W" -c core.autocrlf=false -c commit.gpgsign=false "$@"; }

# The base: pristine copies of the files the series modifies.
pristine() {
	local f=$1
	if [ -f "$ORIG/$f" ]; then cat "$ORIG/$f"
	else
		# Not patched by the overlay, so the cached tree holds the pristine file.
		cat "$KSRC/$f"
	fi
}
g init -q
mapfile -t MODIFIED < <({ sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$REPO"/patches/*.patch
	echo MAINTAINERS; echo Documentation/infiniband/index.rst; } | sort -u)
for f in "${MODIFIED[@]}"; do
	mkdir -p "$W/$(dirname "$f")"
	pristine "$f" >"$W/$f"
done
g add -A && g commit -q -m "base: Linux $LINUX_VER (the files this series modifies)"
BASE=$(g rev-parse HEAD)

# commit SUBJECT BODY PATCHES -- NEWPATHS...: applies PATCHES (from patches/) and copies the
# tracked files under NEWPATHS, then commits with a Signed-off-by.
commit() {
	local subj=$1 body=$2 f
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		patch -s -p1 -d "$W" --no-backup-if-mismatch <"$REPO/patches/$1" || rrxe_die "patches/$1 does not apply"
		shift
	done
	[ $# -gt 0 ] && shift
	if [ $# -gt 0 ]; then
		for f in $(cd "$REPO" && git ls-files "$@"); do
			mkdir -p "$W/$(dirname "$f")"
			cp "$REPO/$f" "$W/$f"
		done
	fi
	g add -A
	g commit -q -s -F - <<-EOF
	$subj

	$body
	EOF
}
pf() { (cd "$REPO/patches" && ls $1); }

commit "RDMA/core: release the context's restrack entry when GET_CONTEXT fails" \
"ib_alloc_ucontext() attaches the calling task to the new context's
restrack entry, which takes a reference on the task. The write() path
drops it with rdma_restrack_put() when ib_init_ucontext() fails; the
ioctl path only frees the context, so every failed
UVERBS_METHOD_GET_CONTEXT leaks a reference on the caller's task_struct.
Any process can do that without privilege: a second GET_CONTEXT on a
uverbs file that already has a context fails with -EINVAL, and the
task_struct, its signal_struct and creds are never freed after the
process exits (kmemleak reports them). A driver whose alloc_ucontext
fails does the same.

Release the entry as the write() path does." \
	$(pf '0008-*.patch') --

commit "RDMA/core: add tracepoints for software RDMA transports" \
"Queue pair state changes (with the reason), requester retries and the
NAKs a QP sends and receives, for drivers that run the transport in
software, named by the netdevice and the QP number, defined in ib_core
with their entry points for Rust drivers." \
	$(pf '0006-*.patch') -- include/trace/events/rdma_sw.h drivers/infiniband/core/sw_trace.c

commit "RDMA/core: add rdma_user_mmap_vmalloc()" \
"Software drivers share their queues with user space in vmalloc_user()
memory. rdma_user_mmap_vmalloc() maps such memory and tracks the mapping
as rdma_user_mmap_io() does for IO memory (a reference on the mmap entry
until it is unmapped, zapped on disassociation), so a driver outside the
core needs nothing from core_priv.h to do it." \
	$(pf '0007-*.patch') --

commit "rust: bindings: add RDMA, UDP tunnel, routing and crc32 headers" \
"Expose ib_core, uverbs, ib_umem, rdma netlink, UDP tunnel, IPv4/IPv6
routing, vmalloc and crc32 declarations to the kernel crate, and give the
enums that appear in ib_device_ops signatures a CFI encoding so that
indirect calls from ib_core into Rust callbacks pass kCFI." \
	$(pf '0001-*.patch') --

# rdma_mod MODULE...: the kernel::rdma mod.rs of the tree, declaring only MODULEs (their
# `pub mod`, their `pub use`, their entries in the module documentation's list).
rdma_mod() {
	awk -v keep=" $* " '
		function kept(line,   m) {
			if (match(line, /^\/\/! - \[`[a-z_]+`\]/)) { m = substr(line, 9, RLENGTH - 10); return index(keep, " " m " ") > 0 }
			if (match(line, /^pub mod [a-z_]+;/)) { m = substr(line, 9, RLENGTH - 9); return index(keep, " " m " ") > 0 }
			if (match(line, /^pub use [a-z_]+::/)) { m = substr(line, 9, RLENGTH - 10); return index(keep, " " m " ") > 0 }
			return -1
		}
		{
			k = kept($0)
			if (k == 0) { skip = 1; next }
			if (k == 1) { skip = 0; print; next }
			if (skip && $0 ~ /^\/\/!   /) next
			skip = 0; print
		}' "$REPO/rust/kernel/rdma/mod.rs" >"$W/rust/kernel/rdma/mod.rs"
}
GENERIC="bh bhwork context dbg timer"
NETWORK="net netdev port"
mkdir -p "$W/rust/kernel/rdma"
for m in $GENERIC; do cp "$REPO/rust/kernel/rdma/$m.rs" "$W/rust/kernel/rdma/"; done
rdma_mod $GENERIC
cp "$REPO/rust/helpers/rdma.c" "$W/rust/helpers/rdma.c"
commit "rust: rdma: add the module with its deferred work and BH locking" \
"The start of kernel::rdma: pieces a software RDMA transport needs that
know nothing of RDMA. Timers and work items embedded in driver objects
(impl_deferred! shuts them down before any field drops), a spinlock for
data shared with the receive path (spin_lock_bh(), or spin_lock() for
callers that run with interrupts off, as ib_core consumers may), proof
of process context for calls that sleep, and dynamic debug call sites.
The C helpers of the whole module, and its Kconfig: the kernel crate is
built in, so RUST_RDMA_ABSTRACTIONS needs INFINIBAND=y and
INFINIBAND_USER_ACCESS=y." \
	$(pf '0002-*.patch') $(pf '0003-*.patch') $(pf '0004-*.patch') --

for m in $NETWORK; do cp "$REPO/rust/kernel/rdma/$m.rs" "$W/rust/kernel/rdma/"; done
rdma_mod $GENERIC $NETWORK
commit "rust: rdma: add RoCEv2 networking" \
"The RoCEv2 UDP port in every network namespace with a device (a tunnel
socket per namespace and address family, opened for its first user and
closed with its last or with the namespace), received packets, routes
and transmission of whole IP datagrams, and the netdevices an RDMA
device is bound to with their events." --

commit "rust: rdma: add the verbs abstractions" \
"Safe abstractions for Rust RDMA drivers: devices and their operations,
the objects ib_core allocates (PDs, CQs, QPs, SRQs, MRs, MWs, AHs) with
the driver's data embedded, work requests and completions, memory
registration (umem, on-demand paging, scatterlists, fast registration),
memory shared with userspace through mmap, link types, counters and
transport tracepoints." \
	-- rust/kernel/rdma

commit "RDMA/rrxe: add a soft-RoCE driver in Rust" \
"RoCEv2 over any Ethernet netdevice, created with
'rdma link add NAME type rrxe netdev DEV'. It implements rdma_rxe's user
ABI (rdma-core's rxe provider drives it unmodified) and interoperates
with rdma_rxe on the wire: RC, UC and UD, SRQs, memory windows, atomics,
fast registration and multicast." \
	$(pf '0005-*.patch') -- drivers/infiniband/sw/rrxe

# Documentation: the design page, in the infiniband book.
mkdir -p "$W/Documentation/infiniband"
cp "$REPO/Documentation/rrxe.rst" "$W/Documentation/infiniband/rrxe.rst"
awk '{ print } /^   ipoib$/ { print "   rrxe" }' "$W/Documentation/infiniband/index.rst" >"$W/idx" &&
	mv "$W/idx" "$W/Documentation/infiniband/index.rst"
grep -qx '   rrxe' "$W/Documentation/infiniband/index.rst" || rrxe_die "index.rst: no place for rrxe"
commit "Documentation: infiniband: add the rrxe design page" \
"The data path, object lifetimes and locking of rrxe, and what each file
is for." --

# MAINTAINERS, after the rxe entry.
awk -v who="$name <$email>" '
	{ print }
	/^SOFT-ROCE DRIVER \(rxe\)$/ { inrxe = 1; next }
	inrxe && /^$/ {
		print "SOFT-ROCE DRIVER IN RUST (rrxe)"
		print "M:\t" who
		print "L:\tlinux-rdma@vger.kernel.org"
		print "L:\trust-for-linux@vger.kernel.org"
		print "S:\tMaintained"
		print "F:\tDocumentation/infiniband/rrxe.rst"
		print "F:\tdrivers/infiniband/core/sw_trace.c"
		print "F:\tdrivers/infiniband/sw/rrxe/"
		print "F:\tinclude/trace/events/rdma_sw.h"
		print "F:\trust/helpers/rdma.c"
		print "F:\trust/kernel/rdma/"
		print ""
		inrxe = 0
	}' "$W/MAINTAINERS" >"$W/M" && mv "$W/M" "$W/MAINTAINERS"
grep -q '^SOFT-ROCE DRIVER IN RUST (rrxe)$' "$W/MAINTAINERS" || rrxe_die "MAINTAINERS: no rxe entry"
commit "MAINTAINERS: add an entry for rrxe and kernel::rdma" \
"Add the soft-RoCE driver in Rust and the Rust RDMA abstractions it is
built on." --

g format-patch -q --no-signature -o "$DIR" "$BASE..HEAD"
rrxe_log "wrote $(ls "$DIR"/*.patch | wc -l) patches to $DIR (author and Signed-off-by: $name <$email>)"

# checkpatch --strict, against the cached tree (file paths, MAINTAINERS), one patch at a
# time. spdxcheck.py needs python3-ply, which the kernel build does not: its traceback is
# dropped (checkpatch then skips the SPDX license check only).
: >"$DIR/checkpatch.txt"
for p in "$DIR"/*.patch; do
	b=$(basename "$p")
	perl "$KSRC/scripts/checkpatch.pl" --strict --root="$KSRC" --no-summary --terse "$p" 2>/dev/null |
		sed "s|^$p:|$b:|" >>"$DIR/checkpatch.txt" || true
	n_err=$(grep -c "^$b:.*: ERROR:" "$DIR/checkpatch.txt" || true)
	n_warn=$(grep -c "^$b:.*: WARNING:" "$DIR/checkpatch.txt" || true)
	n_chk=$(grep -c "^$b:.*: CHECK:" "$DIR/checkpatch.txt" || true)
	echo "checkpatch --strict $b: $n_err errors, $n_warn warnings, $n_chk checks"
done | tee "$DIR/checkpatch-summary.txt"

# The series applies to the pristine files.
A=$(mktemp -d)
for f in "${MODIFIED[@]}"; do mkdir -p "$A/$(dirname "$f")"; pristine "$f" >"$A/$f"; done
if (cd "$A" && for p in "$DIR"/*.patch; do git apply "$p" || exit 1; done) >"$DIR/apply.txt" 2>&1; then
	rrxe_log "the series applies to Linux $LINUX_VER (git apply, patch by patch)"
	rm -rf "$A"
else
	rm -rf "$A"; cat "$DIR/apply.txt"; rrxe_die "the series does not apply to Linux $LINUX_VER"
fi
