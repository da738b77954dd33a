# SPDX-License-Identifier: GPL-2.0
#
# RoCE over a VLAN, two guests. Each guest adds VLAN 100 on eth0 (eth0.100, 198.51.100.x)
# and creates its RDMA device on eth0, as upstream intends (the device on the real device;
# the VLAN device's address becomes a GID of its port). VL_A / VL_B (rrxe or rxe; default
# rrxe) pick each guest's driver. Guest a judges:
#  - vlan_xfer_*: xfer (every byte checked, both ways) from the VLAN GID to the peer's VLAN
#    GID: RC SEND, WRITE with immediate and READ, UC SEND, UD SEND;
#  - vlan_tagged_*: that traffic went tagged: eth0.100 on guest a received and sent at least
#    as many packets as the transfers needed;
#  - vlan_rping_*: the RDMA CM over the VLAN (rping with its data checks): its MADs travel
#    on QP1, a kernel UD QP, and the passive side picks the reply's source GID by the VLAN
#    its completion reports (IB_WC_WITH_VLAN, wc.vlan_id);
#  - vlan_base_refused_rrxe: `rdma link add` on the VLAN device itself is refused (EPERM,
#    as rdma_rxe: a device goes on the real device), and leaves no device behind.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok${2:+ $2}"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
VL_A=${VL_A:-rrxe} VL_B=${VL_B:-rrxe}
tag=${VL_A}_${VL_B}
if [ "$RRXE_NAME" = a ]; then DRV=$VL_A; else DRV=$VL_B; fi
VIP=198.51.100.${RRXE_IP##*.}
VPEER=198.51.100.${RRXE_PEER##*.}

ip link add link eth0 name eth0.100 type vlan id 100 || die "no VLAN device"
ip addr add "$VIP/24" dev eth0.100
ip link set eth0.100 up
rdma_use "$DRV"
GID=$(rrxe_gid_index "$DEV" "$VIP") || die "no RoCE v2 GID for $VIP on $DEV"
log "$DEV: VLAN GID index $GID ($VIP)"

if [ "$RRXE_NAME" = a ] && [ "$tag" = rrxe_rrxe ]; then
	out=$(rdma link add rrxe1 type rrxe netdev eth0.100 2>&1)
	rc=$?
	if [ $rc != 0 ] && ! [ -e /sys/class/infiniband/rrxe1 ] && dmesg | grep -q "real device only"; then
		ok vlan_base_refused_rrxe "($out)"
	else
		bad vlan_base_refused_rrxe "rdma link add on eth0.100: exit $rc ($out), device $([ -e /sys/class/infiniband/rrxe1 ] && echo created || echo absent)"
	fi
fi

stat() { cat "/sys/class/net/eth0.100/statistics/$1"; }
rx0=$(stat rx_packets) tx0=$(stat tx_packets)
port=18900
XFER_TIMEOUT=120
xfer_pair "vlan_xfer_send_${tag}_65536" $((port += 1)) -s 65536 -n 10 -S 2 || FAILED=1
xfer_pair "vlan_xfer_write_imm_${tag}_65536" $((port += 1)) -o write_imm -s 65536 -n 10 || FAILED=1
xfer_pair "vlan_xfer_read_${tag}_65536" $((port += 1)) -o read -s 65536 -n 10 -S 3 || FAILED=1
xfer_pair "vlan_xfer_uc_${tag}_65536" $((port += 1)) -t uc -s 65536 -n 10 || FAILED=1
xfer_pair "vlan_xfer_ud_${tag}_1024" $((port += 1)) -t ud -s 1024 -n 20 || FAILED=1
rx=$(($(stat rx_packets) - rx0)) tx=$(($(stat tx_packets) - tx0))

if [ "$RRXE_NAME" = a ]; then
	# Each direction carries at least the 640 packets (10 x 64 at MTU 1024) of each RC/UC
	# transfer's data: 4 transfers, each with data one way or both.
	if [ "$rx" -ge 1000 ] && [ "$tx" -ge 1000 ]; then
		ok "vlan_tagged_$tag" "(eth0.100: $rx packets in, $tx out)"
	else
		bad "vlan_tagged_$tag" "eth0.100 saw $rx packets in and $tx out during the transfers"
	fi
	timeout 120 rping -s -a "$VIP" -V -C 20 -S 1024 >/tmp/rping 2>&1
	rc=$?
	cat /tmp/rping
	crc=$(hear 4102 150)
	if [ $rc = 0 ] && [ "$crc" = 0 ]; then
		ok "vlan_rping_$tag"
	else
		bad "vlan_rping_$tag" "server exit $rc, client exit ${crc:-none}: $(tail -1 /tmp/rping)"
		dump_counters "vlan_rping_$tag"
	fi
else
	rping_client "$VPEER"
	rc=$?
	cat /tmp/rping
	tell_peer 4102 "$rc" || die "cannot report to guest a"
fi
rdma statistic show link "$DEV/1"
exit $FAILED
