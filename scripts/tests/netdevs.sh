# SPDX-License-Identifier: GPL-2.0
#
# rrxe on the netdevices soft-RoCE is used on besides a NIC, one guest:
#  - veth: a pair with one end in a namespace (`p`), an rrxe device on each end; xfer (every
#    byte checked, both ways) between them over the pair: RC SEND and READ, UD SEND;
#  - dummy, tun (no Ethernet address: rrxe gives it a random, locally administered one, as
#    rdma_rxe does) and macvlan: a device on each, traffic between two QPs of it (loopback);
#    the tun device's node GUID comes from its random address and stays across link
#    down/up (netdevs_tun_guid_stable);
#  - core_link_add_other_netns_refused: `rdma link add` naming a netdevice of another
#    namespace fails (ib_core resolves the name in the caller's namespace; not counted).
# The harness then checks the unload for leaks and warnings.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok${2:+ $2}"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
modprobe rdma_rrxe || die "modprobe rdma_rrxe"

XP_PORT=18700
guid() { cat "/sys/class/infiniband/$1/node_guid"; }

# veth, across namespaces.
ip netns add p || die "ip netns add p"
veth_to_ns p v0 10.77.0.1 v1 10.77.0.2
rdma link add rrxe0 type rrxe netdev v0 || die "rdma link add on v0"
ip netns exec p rdma link add rrxe1 type rrxe netdev v1 || die "rdma link add on v1 (in p)"
if out=$(rdma link add rrxe9 type rrxe netdev v1 2>&1); then
	bad core_link_add_other_netns_refused "accepted: $(rdma link show)"
	rdma link del rrxe9
else
	ok core_link_add_other_netns_refused "($out)"
fi
xfer_ns netdevs_veth_send_65536 p rrxe1 10.77.0.2 "" rrxe0 10.77.0.1 10.77.0.2 -s 65536 -n 10 -S 2
xfer_ns netdevs_veth_read_65536 "" rrxe0 10.77.0.1 p rrxe1 10.77.0.2 10.77.0.1 -o read -s 65536 -n 10 -S 3
xfer_ns netdevs_veth_ud_1024 p rrxe1 10.77.0.2 "" rrxe0 10.77.0.1 10.77.0.2 -t ud -s 1024 -n 20

# dummy.
ip link add d0 type dummy
ip addr add 10.79.0.1/24 dev d0
ip link set d0 up
rdma link add rrxe2 type rrxe netdev d0 || die "rdma link add on d0"
xfer_ns netdevs_dummy_send_65536 "" rrxe2 10.79.0.1 "" rrxe2 10.79.0.1 10.79.0.1 -s 65536 -n 10 -S 2

# tun: no Ethernet address.
ip tuntap add dev tun0 mode tun || die "no tun"
ip addr add 10.78.0.1/24 dev tun0
ip link set tun0 up
if rdma link add rrxe3 type rrxe netdev tun0; then
	g0=$(guid rrxe3)
	ip link set tun0 down
	ip link set tun0 up
	g1=$(guid rrxe3)
	# From a random unicast, locally administered address (the 02 bit of its first byte,
	# which the EUI-64 GUID carries inverted): a GUID that is not zero and does not change.
	if [ "$g0" = "$g1" ] && [ "$g0" != 0000:0000:0000:0000 ]; then
		ok netdevs_tun_guid_stable "($g0)"
	else
		bad netdevs_tun_guid_stable "node GUID $g0, after down/up $g1"
	fi
	xfer_ns netdevs_tun_send_65536 "" rrxe3 10.78.0.1 "" rrxe3 10.78.0.1 10.78.0.1 -s 65536 -n 10 -S 2
else
	bad netdevs_tun_guid_stable "rdma link add on tun0 failed"
fi

# macvlan (on a second dummy).
ip link add d1 type dummy
ip link set d1 up
ip link add mv0 link d1 type macvlan mode bridge
ip addr add 10.80.0.1/24 dev mv0
ip link set mv0 up
rdma link add rrxe4 type rrxe netdev mv0 || die "rdma link add on mv0"
xfer_ns netdevs_macvlan_send_65536 "" rrxe4 10.80.0.1 "" rrxe4 10.80.0.1 10.80.0.1 -s 65536 -n 10 -S 2

rdma link show
for d in rrxe4 rrxe3 rrxe2 rrxe0; do rdma link del $d; done
ip netns exec p rdma link del rrxe1
ip netns del p
exit $FAILED
