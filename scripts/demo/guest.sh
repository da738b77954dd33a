# SPDX-License-Identifier: GPL-2.0
#
# Demo guest script (both guests): load rrxe, create rrxe0 on eth0, show it through stock
# rdma-core tools, then run rdma-core's ibv_rc_pingpong over it between the two guests
# (guest a the server, guest b the client), with data verification (-c), printing the
# tool's own output, and the port counters afterwards.
. /usr/local/lib/rrxe/lib.sh

modprobe rdma_rrxe || die "modprobe rdma_rrxe"
rdma link add rrxe0 type rrxe netdev eth0 || die "rdma link add"
echo "== [$RRXE_NAME] rdma link show"
rdma link show
echo "== [$RRXE_NAME] ibv_devinfo -d rrxe0 (rdma-core's rxe provider)"
ibv_devinfo -d rrxe0 | grep -E 'hca_id|transport|node_guid|vendor_id|port:|state|mtu|link_layer'
gid=$(rrxe_gid_index rrxe0) || die "no RoCE v2 GID"
echo "== [$RRXE_NAME] RoCE v2 GID index $gid for $RRXE_IP"
retry 100 0.2 ping -c 1 -W 1 "$RRXE_PEER" >/dev/null || die "peer $RRXE_PEER unreachable"
if [ "$RRXE_NAME" = a ]; then
	echo "== [a] ibv_rc_pingpong -d rrxe0 -g $gid -s 4096 -n 100 -c   (server)"
	timeout 120 ibv_rc_pingpong -d rrxe0 -g "$gid" -s 4096 -n 100 -c || die "ibv_rc_pingpong server"
	echo "== [a] ibv_rc_pingpong -d rrxe0 -g $gid -s 1048576 -n 5 -c -e -p 18516   (server, 1 MiB, completion events)"
	timeout 120 ibv_rc_pingpong -d rrxe0 -g "$gid" -s 1048576 -n 5 -c -e -p 18516 ||
		die "ibv_rc_pingpong server (1 MiB)"
	# Tell guest b that both runs are over, so neither powers off under the other.
	retry 100 0.2 sh -c "echo done | nc $RRXE_PEER 4001" || die "cannot reach guest b"
else
	echo "== [b] ibv_rc_pingpong -d rrxe0 -g $gid -s 4096 -n 100 -c $RRXE_PEER   (client)"
	# The server is one-shot: retry the connection until it listens.
	retry 100 0.3 timeout 120 ibv_rc_pingpong -d rrxe0 -g "$gid" -s 4096 -n 100 -c "$RRXE_PEER" ||
		die "ibv_rc_pingpong client"
	echo "== [b] ibv_rc_pingpong -d rrxe0 -g $gid -s 1048576 -n 5 -c -e -p 18516 $RRXE_PEER   (client)"
	retry 100 0.3 timeout 120 ibv_rc_pingpong -d rrxe0 -g "$gid" -s 1048576 -n 5 -c -e -p 18516 "$RRXE_PEER" ||
		die "ibv_rc_pingpong client (1 MiB)"
	timeout 120 nc -l -p 4001 >/dev/null || die "no word from guest a"
fi
echo "== [$RRXE_NAME] rdma statistic show link rrxe0/1"
rdma statistic show link rrxe0/1
rdma link del rrxe0 || die "rdma link del"
rmmod rdma_rrxe || die "rmmod"
dmesg_check || die "kernel log"
echo "== [$RRXE_NAME] demo done"
