# SPDX-License-Identifier: GPL-2.0
#
# Loopback, one guest: QPs of the same rrxe device talk to each other (the packets go to
# this host's own address; rrxe hands them to its receive path from softirq work instead
# of the IP layer, which would deliver them on the loopback device). Stock tools, data
# checked; then the device and the module go away with nothing leaked.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }

kmemleak_clear
rdma_link rdma_rrxe rrxe rrxe0
gid=$(rrxe_gid_index rrxe0) || die "no RoCE v2 GID"
port=18600
# pair NAME SERVER-CMD...: runs the tool as server and client on this host.
pair() {
	local name=$1 srv rc
	shift
	port=$((port + 1))
	timeout 120 "$@" -p $port >/tmp/lo-srv 2>&1 &
	srv=$!
	connect_to() { timeout 120 "$@" -p $port "$RRXE_IP" >/tmp/lo-cli 2>&1; }
	retry 50 0.2 connect_to "$@"
	rc=$?
	wait $srv
	local src=$?
	cat /tmp/lo-cli
	if [ $rc = 0 ] && [ $src = 0 ]; then ok "loopback_$name"; else bad "loopback_$name" "client $rc, server $src"; fi
}
pair pingpong_64k ibv_rc_pingpong -d rrxe0 -g "$gid" -s 65536 -n 20 -c
pair pingpong_1m_events ibv_rc_pingpong -d rrxe0 -g "$gid" -s 1048576 -n 3 -c -e
pair read_bw ib_read_bw -d rrxe0 -x "$gid" -n 50 -F
pair atomic_bw ib_atomic_bw -d rrxe0 -x "$gid" -n 50 -F
pair write_lat ib_write_lat -d rrxe0 -x "$gid" -n 50 -F
rdma statistic show link rrxe0/1
rdma link del rrxe0 || bad loopback_link_del "rdma link del"
if rmmod rdma_rrxe; then ok loopback_rmmod; else bad loopback_rmmod rmmod; fi
if kmemleak_check; then ok loopback_no_leak; else bad loopback_no_leak kmemleak; fi
if dmesg_check; then ok loopback_dmesg_clean; else bad loopback_dmesg_clean dmesg_check; fi
exit $FAILED
