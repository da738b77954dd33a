# SPDX-License-Identifier: GPL-2.0
#
# Demo guest script (both guests): load rrxe, create rrxe0 on eth0 and show it through
# stock rdma-core tools. Each guest then waits for the other to get that far.
. /usr/local/lib/rrxe/lib.sh

modprobe rdma_rrxe || die "modprobe rdma_rrxe"
rdma link add rrxe0 type rrxe netdev eth0 || die "rdma link add"
echo "== [$RRXE_NAME] rdma link show"
rdma link show
echo "== [$RRXE_NAME] ibv_devices"
ibv_devices
echo "== [$RRXE_NAME] ibv_devinfo -v -d rrxe0 (rdma-core's rxe provider)"
ibv_devinfo -v -d rrxe0 | grep -E 'hca_id|transport|node_guid|vendor_id|port:|state|mtu|link_layer|GID'
gid=$(rrxe_gid_index rrxe0) || die "no RoCE v2 GID"
echo "== [$RRXE_NAME] RoCE v2 GID index $gid for $RRXE_IP"
# The peer is reachable on the same wire. Guest b waits (on TCP port 4001) until guest a
# has reached it too, so neither powers off under the other.
retry 100 0.2 ping -c 1 -W 1 "$RRXE_PEER" >/dev/null || die "peer $RRXE_PEER unreachable"
echo "== [$RRXE_NAME] peer $RRXE_PEER reachable"
if [ "$RRXE_NAME" = b ]; then
	timeout 120 nc -l -p 4001 >/dev/null || die "no word from guest a"
else
	retry 100 0.2 sh -c "echo done | nc $RRXE_PEER 4001" || die "cannot reach guest b"
fi
rdma link del rrxe0 || die "rdma link del"
rmmod rdma_rrxe || die "rmmod"
dmesg_check || die "kernel log"
echo "== [$RRXE_NAME] demo done"
