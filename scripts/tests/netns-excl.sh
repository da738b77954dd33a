# SPDX-License-Identifier: GPL-2.0
#
# RDMA devices in the core's exclusive namespace mode (`rdma system set netns exclusive`),
# one guest, a veth pair v0 (initial namespace, 10.76.0.1) / v1 (namespace p, 10.76.0.2),
# an rrxe device on each, and a namespace q reached from the initial one by a second veth
# pair (10.75.0.0/24, for xfer's TCP exchange only):
#  - netns_excl_mode: the mode is set (no namespace exists yet);
#  - netns_excl_link_add_in_ns: `rdma link add` run in p creates the device in p, where its
#    netdevice is (rdma_rxe creates it in the initial namespace, out of p's sight);
#  - netns_excl_dev_set: `rdma dev set rrxe0 netns q` moves the device: seen in q, not in
#    the initial namespace, while its netdevice v0 stays where it was;
#  - netns_excl_split_*: xfer (every byte checked, both ways) with neither device in its
#    netdevice's namespace: rrxe0 in q (v0 in the initial one), rrxe1 in the initial
#    namespace (v1 in p). The sockets, routes and transmission follow the netdevice;
#  - netns_excl_held_move: a user context (ibv_rc_pingpong waiting for its peer) on rrxe0
#    in q when the device is moved back: the core disassociates it, the move completes,
#    the process lives on;
#  - netns_excl_container_*: rrxe1 moved into p, with its netdevice (a container's setup),
#    xfer between p and the initial namespace;
#  - netns_excl_exit_rename: q deleted with rrxe0 in it while the initial namespace has
#    another device named rrxe0 (on a dummy): the core moves rrxe0 back under a new name
#    (ibdev%d), and the renamed device carries traffic;
#  - netns_excl_ns_del_with_device: p deleted with its device and netdevice in it: both
#    devices of the veth pair go;
#  - netns_excl_shared_again: the mode goes back to shared once the namespaces are gone.
# Then the same with rdma_rxe, printed for reference (RRXE-REF, not counted). The harness
# then checks the unloads for leaks and warnings.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
# rrxe's results are the checks; rdma_rxe's, run the same way afterwards, are printed for
# reference (RRXE-REF, not counted).
ok() {
	if [ $T = rrxe ]; then echo "RRXE-TEST $1 ok${2:+ $2}"; else echo "RRXE-REF $1 rdma_rxe pass"; fi
}
bad() {
	if [ $T = rrxe ]; then
		echo "RRXE-TEST $1 FAIL: $2"
		FAILED=1
	else
		echo "RRXE-REF $1 rdma_rxe fail: $2"
	fi
}

XP_PORT=18600

run() {
	T=$1
	modprobe rdma_$T || die "modprobe rdma_$T"
	if rdma system set netns exclusive && rdma system show | grep -q "netns exclusive"; then
		ok netns_excl_mode
	else
		bad netns_excl_mode "$(rdma system show)"
		return
	fi
	ip netns attach init 1 || die "ip netns attach init 1"
	ip netns add p || die "ip netns add p"
	ip netns add q || die "ip netns add q"
	veth_to_ns p v0 10.76.0.1 v1 10.76.0.2
	veth_to_ns q m0 10.75.0.1 m1 10.75.0.2
	rdma link add ${T}0 type $T netdev v0 || die "rdma link add on v0"
	# Created from p: rrxe creates the device in its netdevice's namespace, rdma_rxe in the
	# initial one (where p cannot see it).
	ip netns exec p rdma link add ${T}1 type $T netdev v1 || die "rdma link add on v1 (in p)"
	if has_dev p ${T}1 && ! has_dev "" ${T}1; then
		ok netns_excl_link_add_in_ns
	else
		bad netns_excl_link_add_in_ns "in p: $(ip netns exec p rdma dev show | tr '\n' ' '); in init: $(rdma dev show | tr '\n' ' ')"
	fi
	# For the split case below, ${T}1 goes to the initial namespace (v1 stays in p).
	if has_dev p ${T}1; then ip netns exec p rdma dev set ${T}1 netns init; fi
	rdma dev show

	rdma dev set ${T}0 netns q
	if has_dev q ${T}0 && ! has_dev "" ${T}0 && ip link show v0 >/dev/null 2>&1; then
		ok netns_excl_dev_set
	else
		bad netns_excl_dev_set "in q: $(ip netns exec q rdma dev show | tr '\n' ' '); in init: $(rdma dev show | tr '\n' ' ')"
	fi
	xfer_ns netns_excl_split_send_65536 "" ${T}1 10.76.0.2 q ${T}0 10.76.0.1 10.75.0.1 -s 65536 -n 10 -S 2
	xfer_ns netns_excl_split_read_65536 "" ${T}1 10.76.0.2 q ${T}0 10.76.0.1 10.75.0.1 -o read -s 65536 -n 10 -S 3
	xfer_ns netns_excl_split_ud_1024 "" ${T}1 10.76.0.2 q ${T}0 10.76.0.1 10.75.0.1 -t ud -s 1024 -n 20

	# A user context on ${T}0 in q when the device moves back to the initial namespace.
	ip netns exec q ibv_rc_pingpong -d ${T}0 -g "$(gid q ${T}0 10.76.0.1)" -p 18699 >/tmp/ex-pp 2>&1 &
	pp=$!
	wait_listen_ns q 18699 $pp ||
		log "the pingpong server is not listening: $(cat /tmp/ex-pp)"
	# The rdma tool names a device in its own namespace: the move is asked for from q.
	if timeout 30 ip netns exec q rdma dev set ${T}0 netns init; then moved=1; else moved=; fi
	if kill -0 $pp 2>/dev/null; then held=1; else held=; fi
	kill -KILL $pp 2>/dev/null
	wait $pp 2>/dev/null
	if [ -n "$moved" ] && [ -n "$held" ] && has_dev "" ${T}0 && ! has_dev q ${T}0; then
		ok netns_excl_held_move
	else
		bad netns_excl_held_move "move $([ -n "$moved" ] && echo done || echo failed), process $([ -n "$held" ] && echo alive || echo ended): $(tail -2 /tmp/ex-pp | tr '\n' ' ')"
	fi

	# A container's setup: the device joins its netdevice in p.
	rdma dev set ${T}1 netns p
	xfer_ns netns_excl_container_send_65536 p ${T}1 10.76.0.2 "" ${T}0 10.76.0.1 10.76.0.2 -s 65536 -n 10 -S 2
	xfer_ns netns_excl_container_write_imm_65536 "" ${T}0 10.76.0.1 p ${T}1 10.76.0.2 10.76.0.1 -o write_imm -s 65536 -n 10

	# q goes with ${T}0 in it, while the initial namespace has another ${T}0.
	rdma dev set ${T}0 netns q
	ip link add d0 type dummy
	ip addr add 10.74.0.1/24 dev d0
	ip link set d0 up
	rdma link add ${T}0 type $T netdev d0 || log "a second ${T}0 in the initial namespace refused"
	rdma dev show
	ip netns del q
	renamed=
	for i in $(seq 150); do
		renamed=$(rdma dev show | awk '/ibdev[0-9]+:/ { sub(":", "", $2); print $2; exit }')
		[ -n "$renamed" ] && break
		sleep 0.1
	done
	rdma dev show
	if [ -n "$renamed" ] && [ "$(cat /sys/class/infiniband/$renamed/parent 2>/dev/null)" = v0 ]; then
		ok netns_excl_exit_rename "($renamed)"
		xfer_ns netns_excl_renamed_send_65536 p ${T}1 10.76.0.2 "" "$renamed" 10.76.0.1 10.76.0.2 -s 65536 -n 10 -S 2
	else
		bad netns_excl_exit_rename "no ibdev<N> on v0 in the initial namespace: $(rdma dev show | tr '\n' ' ')"
		bad netns_excl_renamed_send_65536 "no renamed device"
	fi

	# p goes with ${T}1 and its netdevice v1 in it: the core moves the device back, the veth
	# pair goes, and the devices on both ends with it.
	ip netns del p
	gone=
	for i in $(seq 150); do
		rdma link show | grep -q "netdev v[01] *$" || { gone=1; break; }
		sleep 0.1
	done
	if [ -n "$gone" ]; then
		ok netns_excl_ns_del_with_device
	else
		bad netns_excl_ns_del_with_device "15 s after: $(rdma link show | tr '\n' ' ')"
	fi
	ip netns del init
	for i in $(seq 100); do
		[ "$(ls /var/run/netns 2>/dev/null)" ] || break
		sleep 0.1
	done
	# The core refuses the change while any namespace other than the initial one exists; a
	# deleted one goes asynchronously.
	if retry 50 0.2 rdma system set netns shared; then
		ok netns_excl_shared_again
	else
		bad netns_excl_shared_again "$(rdma system show)"
	fi
	rdma link show
	for d in $(rdma link show | awk '{ sub("/.*", "", $2); print $2 }'); do rdma link del "$d"; done
	ip link del d0
	modprobe -r rdma_$T
}

run rrxe
run rxe
exit $FAILED
