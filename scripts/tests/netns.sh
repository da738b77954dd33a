# SPDX-License-Identifier: GPL-2.0
#
# Network namespaces, two guests. Guest a moves eth0 into a namespace (`rns`) and runs its
# RDMA device there (created with `ip netns exec rns rdma link add`); guest b stays in its
# initial namespace. NS_A / NS_B (rrxe or rxe; default rrxe) pick each guest's driver.
#  - netns_port_rrxe_rrxe: port 4791 is open in rns and not in guest a's initial
#    namespace (the sockets live in the netdevice's namespace);
#  - netns_xfer_*: xfer (every byte checked, both ways) between the namespace and guest b:
#    RC SEND, WRITE with immediate and READ, UD SEND;
#  - netns_netdev_leaves_rrxe_rrxe: eth0 moved back to the initial namespace while a process
#    in rns holds a user context with a QP (ibv_rc_pingpong waiting for its peer): the
#    device goes (the netdevice was unregistered from rns) without waiting for the process,
#    and the port closes in rns;
#  - netns_deleted_rrxe: a second namespace with a dummy netdevice, a device on it and a
#    process holding QPs there; the namespace is deleted, then its last process killed:
#    the namespace goes, its netdevice and device with it, and its port (the kernel-clean
#    check then looks for leaks and warnings).
# Guest a prints the checks.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok${2:+ $2}"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
NS_A=${NS_A:-rrxe} NS_B=${NS_B:-rrxe}
export NS_A NS_B
tag=${NS_A}_${NS_B}

# port_open [NS]: whether UDP port 4791 has a socket in NS (default: this namespace).
port_open() {
	if [ -n "${1:-}" ]; then
		ip netns exec "$1" ss -Huln 'sport = :4791' | grep -q ':4791'
	else
		ss -Huln 'sport = :4791' | grep -q ':4791'
	fi
}

# The traffic part, run in rns on guest a and as usual on guest b.
traffic() {
	rdma_use "$1"
	local port=18800
	XFER_TIMEOUT=120
	xfer_pair "netns_xfer_send_${tag}_65536" $((port += 1)) -s 65536 -n 10 -S 2 || FAILED=1
	xfer_pair "netns_xfer_write_imm_${tag}_65536" $((port += 1)) -o write_imm -s 65536 -n 10 || FAILED=1
	xfer_pair "netns_xfer_read_${tag}_65536" $((port += 1)) -o read -s 65536 -n 10 -S 3 || FAILED=1
	xfer_pair "netns_xfer_ud_${tag}_1024" $((port += 1)) -t ud -s 1024 -n 20 || FAILED=1
	rdma statistic show link "$DEV/1"
}

if [ "$RRXE_NAME" = b ]; then
	traffic "$NS_B"
	exit $FAILED
fi

if [ "${1:-}" = inner ]; then
	# Inside rns: the device, its port, the traffic.
	traffic "$NS_A"
	[ "$NS_A$NS_B" = rrxerrxe ] || exit $FAILED
	if port_open && ! port_open init; then
		ok "netns_port_$tag"
	else
		bad "netns_port_$tag" "4791 in rns: $(port_open && echo open || echo closed), in the initial namespace: $(port_open init && echo open || echo closed)"
	fi
	exit $FAILED
fi

case $NS_A in rrxe) MOD=rdma_rrxe TYPE=rrxe ;; *) MOD=rdma_rxe TYPE=rxe ;; esac
modprobe $MOD || die "modprobe $MOD"
ip netns add rns || die "ip netns add"
ip netns attach init 1 || die "ip netns attach init 1"
ip link set eth0 netns rns || die "eth0 to rns"
ip -n rns link set lo up
ip -n rns addr add "$RRXE_IP/24" dev eth0
ip -n rns link set eth0 up
ip netns exec rns bash /usr/local/bin/netns.sh inner
FAILED=$?
DEV=${TYPE}0
if [ "$NS_A$NS_B" != rrxerrxe ]; then
	# Against rdma_rxe the traffic is the check; the rest, which involves no peer, is
	# checked once, with rrxe on both guests. The namespace goes only once the device
	# has: ib_core (7.3.4) unregisters a device from a work item, whose removal of the
	# device's per-namespace compat device races with the namespace's exit (the exit
	# finds the compat device already taken and goes on to free the namespace while the
	# work still announces the removal in it: an oops in netlink_broadcast, with either
	# driver).
	ip -n rns link set eth0 netns 1
	for i in $(seq 100); do
		# Gone from sysfs: unregistered (compat devices included), not only hidden.
		[ -e "/sys/class/infiniband/$DEV" ] || break
		sleep 0.1
	done
	ip netns del rns
	ip netns del init
	exit $FAILED
fi

# The netdevice leaves the namespace under a live user context.
# A pingpong server listens only once its device is open, its QP created and its receives
# posted: the readiness to wait for before taking the netdevice away (a fixed sleep was not
# enough on a loaded machine).
ip netns exec rns ibv_rc_pingpong -d "$DEV" -g "$(gid rns "$DEV" "$RRXE_IP")" -p 18899 >/tmp/pp.out 2>&1 &
pp=$!
wait_listen_ns rns 18899 $pp || log "the pingpong server is not listening: $(cat /tmp/pp.out)"
ip -n rns link set eth0 netns 1 || die "eth0 back"
gone= closed=
for i in $(seq 100); do
	rdma link show 2>/dev/null | grep -q "^link $DEV/" || gone=1
	ip netns exec rns rdma link show 2>/dev/null | grep -q "^link $DEV/" && gone=
	port_open rns || closed=1
	[ -n "$gone" ] && [ -n "$closed" ] && break
	sleep 0.1
done
# The process still holds its (now disassociated) context: the device went without it.
if kill -0 $pp 2>/dev/null; then held=1; else held=; fi
kill -KILL $pp 2>/dev/null
wait $pp
log "pingpong server: $(tail -2 /tmp/pp.out | tr '\n' ' ')"
if [ -n "$gone" ] && [ -n "$closed" ] && [ -n "$held" ]; then
	ok "netns_netdev_leaves_$tag"
else
	bad "netns_netdev_leaves_$tag" "device $([ -n "$gone" ] && echo gone || echo 'still there after 10 s'), 4791 in rns $([ -n "$closed" ] && echo closed || echo open), the process $([ -n "$held" ] && echo 'held its context' || echo 'had ended before')"
fi
ip addr add "$RRXE_IP/24" dev eth0 2>/dev/null
ip link set eth0 up

# A namespace deleted under its last process, which holds QPs of a device in it.
ip netns add rns2 || die "ip netns add rns2"
ip -n rns2 link set lo up
ip -n rns2 link add d0 type dummy
ip -n rns2 addr add 10.99.0.1/24 dev d0
ip -n rns2 link set d0 up
ip netns exec rns2 rdma link add ${TYPE}9 type $TYPE netdev d0 || bad "netns_deleted_$NS_A" "rdma link add in rns2"
ip netns exec rns2 ibv_rc_pingpong -d ${TYPE}9 -g "$(gid rns2 ${TYPE}9 10.99.0.1)" -p 18898 >/tmp/pp2.out 2>&1 &
pp=$!
wait_listen_ns rns2 18898 $pp || log "the pingpong server in rns2 is not listening: $(cat /tmp/pp2.out)"
open2=$(port_open rns2 && echo open || echo closed)
ip netns del rns2
kill -KILL $pp
wait $pp 2>/dev/null
gone=
for i in $(seq 150); do
	rdma link show 2>/dev/null | grep -q "^link ${TYPE}9/" || { gone=1; break; }
	sleep 0.1
done
if [ -n "$gone" ] && [ "$open2" = open ]; then
	ok "netns_deleted_$NS_A"
else
	bad "netns_deleted_$NS_A" "4791 in rns2 was $open2 with the device; the device $([ -n "$gone" ] && echo went || echo "was still there 15 s after the namespace's last process")"
fi
rdma link show
ip netns del rns 2>/dev/null
ip netns del init 2>/dev/null
exit $FAILED
