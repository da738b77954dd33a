# SPDX-License-Identifier: GPL-2.0
#
# Device attributes, one guest: `ibv_devinfo -v` of rrxe0, then of the C rdma_rxe's rxe0 on
# the same netdevice in the same kernel, compared line by line. Every attribute must be
# rdma_rxe's, except the differences listed below, each with its reason; a difference not
# listed fails (and so does a listed one that went away: the list stays true).
# The port counters likewise (counters_match_rdma_rxe): every counter of rdma_rxe is one of
# rrxe's, under its name, but those listed in COUNTERS_MISSING with their reasons. And the
# sysfs files (sysfs_matches_rdma_rxe): the same names, and the parent attribute.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }

# devinfo DEV: ibv_devinfo -v of DEV, the device name and the per-boot values normalised.
# The GID table is left out: it follows eth0's addresses, and one can come between the two
# reads (an IPv6 router advertisement of QEMU's user network gives a fec0::/64 address at
# any time); the device group checks the GIDs.
devinfo() {
	ibv_devinfo -v -d "$1" | sed -e "s/$1/DEV/g" -e 's/[[:space:]]*$//' -e '/^[[:space:]]*GID\[/d'
}

# sysfs DEV: the names of the device's sysfs files, of its port's, and of the port's
# Performance Management counters (which the core creates for a driver with process_mad);
# then the device's parent attribute.
sysfs() {
	local d=/sys/class/infiniband/$1
	ls "$d"
	echo "-- ports/1:"; ls "$d/ports/1"
	echo "-- ports/1/counters:"; ls "$d/ports/1/counters" 2>&1
	echo "-- parent: $(cat "$d/parent" 2>&1)"
}
rdma_link rdma_rrxe rrxe rrxe0
rrxe_gid_index rrxe0 >/dev/null || die "no RoCE v2 GID on rrxe0"
devinfo rrxe0 >/tmp/devinfo.rrxe || die "ibv_devinfo rrxe0"
ls /sys/class/infiniband/rrxe0/ports/1/hw_counters >/tmp/counters.rrxe
sysfs rrxe0 >/tmp/sysfs.rrxe
rdma link del rrxe0 && rmmod rdma_rrxe || die "unload rrxe"
rdma_link rdma_rxe rxe rxe0
rrxe_gid_index rxe0 >/dev/null || die "no RoCE v2 GID on rxe0"
devinfo rxe0 >/tmp/devinfo.rxe || die "ibv_devinfo rxe0"
ls /sys/class/infiniband/rxe0/ports/1/hw_counters >/tmp/counters.rxe
sysfs rxe0 >/tmp/sysfs.rxe
rdma link del rxe0 && rmmod rdma_rxe || die "unload rdma_rxe"

# The differences rrxe keeps on purpose: attribute and reason. A listed attribute may differ
# in any way; nothing else may, and each listed one must still differ.
declare -A ALLOWED=(
	[device_cap_flags]="only what works is announced: no automatic path migration, port changes, P_Key/Q_Key violation counters, UD AV port enforcement, port active event flag or persistent FLUSH; the rest (MEM_MGT_EXTENSIONS, RC_RNR_NAK_GEN, SYS_IMAGE_GUID, SRQ_RESIZE, MEM_WINDOW, MEM_WINDOW_TYPE_2B, FLUSH_GLOBAL, ATOMIC_WRITE) is rdma_rxe's"
	[device_cap_flags_ex]="as device_cap_flags"
	[max_mr]="24-bit key indices (2^24 - 1 regions) where rdma_rxe's pool stops at 2^19 - 1"
	[max_res_rd_atom]="no device-wide pool: every QP has its own max_qp_rd_atom responder resources, so the bound is max_qp times that"
	[max_mw]="2^16 windows; rdma_rxe's pool gives 2^19 - 1"
	[max_pkeys]="one partition, the default P_Key (RoCE uses no other); rdma_rxe lists 64 slots and fills one"
)

# records FILE: one "key=value" line per attribute of ibv_devinfo's output (the flag names
# printed under device_cap_flags, and its "Unknown flags", are joined to it); keys inside a
# port section carry the port number.
records() {
	awk '
		/^[[:space:]]*port:/ { port = $2 }
		# "Unknown flags: ..." belongs to the flags above it.
		/^[[:space:]]*Unknown flags:/ { line = $0; gsub(/^[[:space:]]+/, "", line); rec = rec " " line; next }
		/^[[:space:]]*[A-Za-z_][A-Za-z_0-9 ]*:/ {
			if (rec != "") print rec
			line = $0; sub(/^[[:space:]]*/, "", line)
			k = line; sub(/:.*/, "", k)
			v = line; sub(/^[^:]*:[[:space:]]*/, "", v)
			rec = (port != "" ? "port" port "." : "") k "=" v
			next
		}
		{ line = $0; gsub(/^[[:space:]]+/, "", line); if (line != "") rec = rec " " line }
		END { if (rec != "") print rec }
	' "$1"
}
records /tmp/devinfo.rxe >/tmp/rec.rxe
records /tmp/devinfo.rrxe >/tmp/rec.rrxe
echo "== ibv_devinfo -v: rdma_rxe (-) and rrxe (+)"
diff -u /tmp/devinfo.rxe /tmp/devinfo.rrxe
diff /tmp/rec.rxe /tmp/rec.rrxe | sed -n 's/^[-+<>] \{0,1\}\([^=]*\)=.*/\1/p' | sort -u >/tmp/rec.keys
unlisted= used=
while IFS= read -r k; do
	if [ -n "${ALLOWED[${k#port*.}]+x}" ]; then used="$used ${k#port*.}"; else unlisted="$unlisted '$k'"; fi
done </tmp/rec.keys
n=$(wc -l </tmp/rec.rrxe)
echo "== $n attributes compared; differences, with their reasons:"
for k in $(echo $used | tr ' ' '\n' | sort -u); do echo "  $k: ${ALLOWED[$k]}"; done
stale=
for k in "${!ALLOWED[@]}"; do
	case " $used " in *" $k "*) ;; *) stale="$stale $k" ;; esac
done
if [ "$n" -lt 40 ]; then
	bad devinfo_matches_rdma_rxe "only $n attributes parsed"
elif [ -n "$unlisted" ]; then
	bad devinfo_matches_rdma_rxe "differences not listed:$unlisted"
elif [ -n "$stale" ]; then
	bad devinfo_matches_rdma_rxe "listed but equal now (remove from the list):$stale"
else
	ok devinfo_matches_rdma_rxe
fi

# sysfs_matches_rdma_rxe: the same files in the device's and the port's sysfs directories,
# the same Performance Management counters, and a parent that names the netdevice.
echo "== sysfs: rdma_rxe (-) and rrxe (+)"
if ! grep -qx -- "-- parent: eth0" /tmp/sysfs.rrxe; then
	bad sysfs_matches_rdma_rxe "rrxe0's parent: $(grep -- '-- parent' /tmp/sysfs.rrxe)"
elif ! grep -qx port_xmit_data /tmp/sysfs.rrxe || ! grep -qx multicast_rcv_packets /tmp/sysfs.rrxe; then
	bad sysfs_matches_rdma_rxe "no extended Performance Management counters in ports/1/counters"
elif ! diff -u /tmp/sysfs.rxe /tmp/sysfs.rrxe; then
	bad sysfs_matches_rdma_rxe "the sysfs files differ (diff above)"
else
	ok sysfs_matches_rdma_rxe
fi

declare -A COUNTERS_MISSING=(
	[ack_deferred]="rdma_rxe's completer run from a work item instead of inline; rrxe's always runs inline"
)
echo "== port counters: rdma_rxe: $(echo $(cat /tmp/counters.rxe))"
echo "==                rrxe:     $(echo $(cat /tmp/counters.rrxe))"
missing= stale=
for c in $(cat /tmp/counters.rxe); do
	grep -qx "$c" /tmp/counters.rrxe && continue
	[ -n "${COUNTERS_MISSING[$c]+x}" ] && echo "  $c: ${COUNTERS_MISSING[$c]}" || missing="$missing $c"
done
for c in "${!COUNTERS_MISSING[@]}"; do grep -qx "$c" /tmp/counters.rrxe && stale="$stale $c"; done
if [ "$(wc -l </tmp/counters.rxe)" -lt 10 ]; then
	bad counters_match_rdma_rxe "only $(wc -l </tmp/counters.rxe) counters of rdma_rxe listed"
elif [ -n "$missing$stale" ]; then
	bad counters_match_rdma_rxe "${missing:+missing:$missing}${stale:+ listed but present:$stale}"
else
	ok counters_match_rdma_rxe
fi
exit $FAILED
