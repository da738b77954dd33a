# SPDX-License-Identifier: GPL-2.0
#
# Guest script (one guest): the rrxe device as rdma-core and ib_core see it, through its whole
# life: module load (KUnit suites run then), rdma link add/del, netdevice MTU changes, link
# down/up, netdevice removal, module unload with devices, exclusion of rdma_rxe, leaks.
# Prints `RRXE-TEST <name> ok|FAIL ...` per check; exits non-zero if any failed.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
# check NAME CMD...: one test per command.
check() { local n=$1; shift; if "$@"; then ok "$n"; else bad "$n" "$*"; fi; }
# devinfo_has PATTERN: ibv_devinfo -v of rrxe0 (through rdma-core's rxe provider) matches.
devinfo_has() { ibv_devinfo -v -d rrxe0 >/tmp/devinfo 2>&1 && grep -Eq "$1" /tmp/devinfo || { cat /tmp/devinfo; return 1; }; }
listed() { ibv_devices 2>&1 | grep -qw "$1"; }
not_listed() { ! listed "$1"; }
sysfs() { [ "$(cat "$1" 2>/dev/null)" = "$2" ] || { echo "$1: '$(cat "$1" 2>&1)' != '$2'"; return 1; }; }
wait_gone() { retry 50 0.1 not_listed "$1"; }
mtu_is() { ip link set eth0 mtu "$1" && retry 20 0.1 devinfo_has "active_mtu:[[:space:]]+$2 "; }


# Module load: KUnit suites of the driver run and print KTAP to the console.
check module_load modprobe rdma_rrxe
check link_add rdma link add rrxe0 type rrxe netdev eth0
check ibv_devices_lists_rrxe0 listed rrxe0
# Listing alone proves rdma-core bound its rxe provider: "rrxe0" does not match the
# provider's name pattern, only RDMA_DRIVER_RXE does.
check uverbs_abi_version sysfs /sys/class/infiniband_verbs/uverbs0/abi_version 2
check node_type sysfs /sys/class/infiniband/rrxe0/node_type "1: CA"
check port_active devinfo_has "state:[[:space:]]+PORT_ACTIVE \(4\)"
check phys_state_link_up devinfo_has "phys_state:[[:space:]]+LINK_UP \(5\)"
check link_layer_ethernet devinfo_has "link_layer:[[:space:]]+Ethernet"
check transport_ib devinfo_has "transport:[[:space:]]+InfiniBand \(0\)"
check active_mtu_from_netdev devinfo_has "active_mtu:[[:space:]]+1024 \(3\)"
check max_mtu_4096 devinfo_has "max_mtu:[[:space:]]+4096 \(5\)"
check vendor_id devinfo_has "vendor_id:[[:space:]]+0xffffff"
# Attributes kernel consumers and rdma-core act on: a READ scatter list (the core divides by
# max_sge_rd), atomics (rdma_rxe's IB_ATOMIC_HCA), address handles (UD).
check max_sge_rd_32 devinfo_has "max_sge_rd:[[:space:]]+32$"
check atomic_cap_hca devinfo_has "atomic_cap:[[:space:]]+ATOMIC_HCA \(1\)"
check max_ah_32767 devinfo_has "max_ah:[[:space:]]+32767$"
mac=$(cat /sys/class/net/eth0/address)
set -- $(echo "$mac" | tr : ' ')
guid=$(printf '%02x%s:%sff:fe%s:%s%s' $((0x$1 ^ 2)) "$2" "$3" "$4" "$5" "$6")
check node_guid_eui64 devinfo_has "node_guid:[[:space:]]+$guid"
check roce_v2_gid_ipv4 rrxe_gid_index rrxe0
check gid_in_devinfo devinfo_has "GID\[ *[0-9]+\]:.*::ffff:$RRXE_IP, RoCE v2"
check pkey_default sysfs /sys/class/infiniband/rrxe0/ports/1/pkeys/0 0xffff
check one_pkey_only test ! -e /sys/class/infiniband/rrxe0/ports/1/pkeys/1
check rdma_dev_show sh -c 'rdma dev show rrxe0 | grep -q "node_guid $guid"'
check duplicate_link_rejected sh -c '! rdma link add rrxe9 type rrxe netdev eth0 2>/dev/null'
check core_missing_netdev_rejected sh -c '! rdma link add rrxe9 type rrxe netdev nosuch0 2>/dev/null'
check hw_counters_exposed sh -c 'rdma statistic show link rrxe0/1 | grep -q "rcvd_icrc_err 0"'
# The node description is the device's to change (ib_modify_device through sysfs).
ND=/sys/class/infiniband/rrxe0/node_desc
check node_desc_default sysfs $ND rrxe
check node_desc_writable sh -c "echo -n 'rrxe test node' > $ND && [ \"\$(cat $ND)\" = 'rrxe test node' ] && echo -n rrxe > $ND"
check many_contexts sh -c 'for i in $(seq 30); do ibv_devinfo -d rrxe0 >/dev/null || exit 1; done'
# Verbs objects through libibverbs and the rxe provider (PDs, CQs with their mapped rings).
verbs_objects rrxe0 "$(rrxe_gid_index rrxe0)" "$RRXE_IP" || FAILED=1
# Queue pairs: rings, the state machine and its attribute checks, limits, QP numbers.
verbs_qp rrxe0 "$(rrxe_gid_index rrxe0)" || FAILED=1
# What a QP keeps in flight, past what it asked for (its private state is sized by the send
# queue depth and max_dest_rd_atomic it asked for): a full ring of WRITEs, queued READs.
# An idle RC QP of 64 WRs at most 72 KiB (measured 62.2 since its WQE copies are made at its
# first doorbell; 74.7 before, 80-83 while a WQE copy carried the 88 bytes of a legacy UD AV,
# 150.6 before its state followed what it asked for); KASAN's shadow and redzones add about
# a quarter (101.6 with the larger copy, so 128; not measured again since).
qp_kib=72
dmesg | grep -q 'KernelAddressSanitizer initialized' && qp_kib=128
qp_depth rrxe0 "$(rrxe_gid_index rrxe0)" $qp_kib || FAILED=1
# A shared receive queue taken from by two QPs: attributes, the limit event (once), a QP in
# ERR leaving its WQEs, destroy refused while in use.
srq_limit rrxe0 "$(rrxe_gid_index rrxe0)" || FAILED=1
# Memory windows: bounds and rights, type 2B ownership and invalidation, the binding rules,
# the region busy while windows are bound to it; re-registration of rights and PD.
mr_rules rrxe0 "$(rrxe_gid_index rrxe0)" || FAILED=1
# A process scribbling over the SQ, RQ and CQ rings it shares with the driver (storms of
# 1.5 s): error completions or ERR, no hang; then a fresh context's RC pair still works.
hostile rrxe0 "$(rrxe_gid_index rrxe0)" || FAILED=1
# Memory regions: access rules, keys, bad ranges.
verbs_mr rrxe0 || FAILED=1
# The objects they left open were destroyed when their contexts closed (restrack holds only
# the MAD layer's own QP1, its PD and CQ, owned by [ib_core]).
check no_pd_left sh -c '[ -z "$(rdma resource show pd dev rrxe0 | grep -v "comm \[ib_core\]")" ]'
check no_cq_left sh -c '[ -z "$(rdma resource show cq dev rrxe0 | grep -v "comm \[ib_core\]")" ]'
check no_qp_left sh -c '[ -z "$(rdma resource show qp link rrxe0/1 2>&1 | grep -v "comm \[ib_core\]")" ]'
check no_mr_left sh -c '[ -z "$(rdma resource show mr dev rrxe0 | grep -v "comm \[ib_core\]")" ]'

# Netdevice changes.
check mtu_4200_gives_4096 mtu_is 4200 4096
check mtu_2200_gives_2048 mtu_is 2200 2048
check mtu_1500_gives_1024 mtu_is 1500 1024
ip link set eth0 down
check link_down_port_down retry 20 0.1 devinfo_has "state:[[:space:]]+PORT_DOWN \(1\)"
check link_down_phys_disabled devinfo_has "phys_state:[[:space:]]+DISABLED \(3\)"
ip link set eth0 up
check link_up_port_active retry 50 0.1 devinfo_has "state:[[:space:]]+PORT_ACTIVE \(4\)"
# The same changes as asynchronous events (IBV_EVENT_PORT_ERR, then PORT_ACTIVE, once each).
async_events rrxe0 eth0 || FAILED=1
retry 50 0.1 devinfo_has "state:[[:space:]]+PORT_ACTIVE \(4\)" || log "port not active after async_events"

# rdma link del, then a device whose netdevice disappears.
check link_del rdma link del rrxe0
check link_del_gone wait_gone rrxe0
check link_readd rdma link add rrxe0 type rrxe netdev eth0
ip link add rrxed0 type dummy && ip link set rrxed0 up
check link_add_dummy rdma link add rrxe1 type rrxe netdev rrxed0
check dummy_listed listed rrxe1
ip link del rrxed0
check netdev_removal_unregisters wait_gone rrxe1
check other_device_survives listed rrxe0

# The device goes away under an open user context (disassociate_ucontext): a process holds
# a context with a PD, MR, CQ and QP (an ibv_rc_pingpong server waiting for its client)
# while its device is removed by netdevice removal, `rdma link del` and module unload.
# None of them waits for the process (they complete within 30 s); the process lives on
# (its verbs would fail with EIO) and exits when killed, and its objects are gone.
# hold DEV PORT [IPV4]: starts the holder on DEV (whose address is IPV4, default eth0's);
# returns once its QP exists.
hold() {
	ibv_rc_pingpong -d "$1" -g "$(rrxe_gid_index "$1" "${3:-$RRXE_IP}")" -p "$2" >/tmp/holder.out 2>&1 &
	HOLDER=$!
	retry 100 0.1 sh -c "rdma resource show qp link $1/1 | grep -q ibv_rc_pingpong" ||
		{ cat /tmp/holder.out; return 1; }
}
# release: the holder is still alive, and exits (within 10 s) once killed.
release() {
	kill -0 "$HOLDER" 2>/dev/null || { echo "holder died: $(cat /tmp/holder.out)"; return 1; }
	kill "$HOLDER"
	for _ in $(seq 100); do kill -0 "$HOLDER" 2>/dev/null || { wait "$HOLDER"; return 0; }; sleep 0.1; done
	echo "holder still alive 10 s after SIGTERM"; kill -9 "$HOLDER"; return 1
}
# mapped_words PID: the first 32-bit word of each of PID's mappings of its uverbs file, read
# through /proc/PID/mem. A queue's header starts with log2_elem_size, never 0 while the
# queue is mapped; once the device is gone, the core has zapped the mappings and the process
# reads zeroes there, not the freed queues.
mapped_words() {
	grep /dev/infiniband/uverbs "/proc/$1/maps" | while read -r range _; do
		dd if="/proc/$1/mem" bs=4096 skip=$((0x${range%-*} / 4096)) count=1 2>/dev/null |
			od -An -tu4 -N4 | tr -d ' '
	done
}
# queues_mapped: the holder maps its queues (a CQ, the send and the receive queue).
queues_mapped() {
	local w
	w=$(mapped_words "$HOLDER")
	echo "first words of the holder's uverbs mappings: $(echo $w)"
	[ "$(echo "$w" | grep -c '^[1-9]')" -ge 3 ]
}
# queues_zapped: the holder's uverbs mappings read as zeroes.
queues_zapped() {
	local w
	w=$(mapped_words "$HOLDER")
	echo "first words of the holder's uverbs mappings: $(echo $w)"
	[ -n "$w" ] && ! echo "$w" | grep -qv '^0$'
}
ip link add rrxed1 type dummy && ip addr add 10.99.0.1/24 dev rrxed1 && ip link set rrxed1 up
rdma link add rrxe2 type rrxe netdev rrxed1
check holder_on_dummy hold rrxe2 18990 10.99.0.1
check netdev_removal_with_open_context timeout 30 ip link del rrxed1
check netdev_removal_with_open_context_gone wait_gone rrxe2
check holder_released_after_netdev_removal release
check holder_on_rrxe0 hold rrxe0 18991
check holder_queues_mapped queues_mapped
check link_del_with_open_context timeout 30 rdma link del rrxe0
check holder_mappings_zapped queues_zapped
check holder_released_after_link_del release
check link_readd_after_disassociate rdma link add rrxe0 type rrxe netdev eth0
check holder_before_unload hold rrxe0 18992
check rmmod_with_open_context timeout 30 rmmod rdma_rrxe
check holder_released_after_unload release
check reload_after_disassociate modprobe rdma_rrxe
check link_after_disassociate rdma link add rrxe0 type rrxe netdev eth0

# Module unload with a live device; the C driver is kept out while rrxe is loaded.
check rdma_rxe_refused sh -c '! modprobe rdma_rxe 2>/dev/null'
check rmmod_with_device rmmod rdma_rrxe
check rmmod_gone not_listed rrxe0
check env_rdma_rxe_loads modprobe rdma_rxe
check rrxe_refused_beside_rdma_rxe sh -c '! modprobe rdma_rrxe 2>/dev/null'
check env_rdma_rxe_unloads rmmod rdma_rxe
check module_reload modprobe rdma_rrxe
check link_after_reload rdma link add rrxe0 type rrxe netdev eth0
check devinfo_after_reload devinfo_has "state:[[:space:]]+PORT_ACTIVE"
check final_rmmod rmmod rdma_rrxe

exit $FAILED
