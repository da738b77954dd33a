# SPDX-License-Identifier: GPL-2.0
#
# Guest script (one guest): teardown under traffic, TD_LOOPS times (default 100). Each
# iteration starts an RC ping-pong over loopback (server and client on one rrxe device, on a
# dummy netdevice), waits until its packets flow (the port's rcvd_pkts grows), then tears
# something down under it, in turn:
#   kill      SIGKILL to both processes (uverbs cleanup with packets in flight);
#   linkdel   `rdma link del` (the processes' contexts are disassociated);
#   rmmod     module unload with the device and the processes' contexts open;
#   linkdown  the netdevice down and up again;
#   netdel    the netdevice deleted (its rrxe device goes with it).
# Then it kills what is left, waits for it, and puts the device back. Every command runs
# under a timeout: one that does not return is a hang.
#   teardown_loop_iterations      every iteration's commands returned in time;
#   teardown_loop_under_traffic   traffic flowed before the teardown in every iteration;
#   teardown_loop_device_works    afterwards a fresh ping-pong completes.
# Leaks and warnings: the harness's "kernel clean" check (kmemleak after the final unload).
. /usr/local/lib/rrxe/lib.sh

LOOPS=${TD_LOOPS:-100}
FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
DEV=rrxel NDEV=rrxel0
pkts() { cat /sys/class/infiniband/$DEV/ports/1/hw_counters/rcvd_pkts 2>/dev/null || echo 0; }
setup() {
	grep -q '^rdma_rrxe ' /proc/modules || timeout 30 modprobe rdma_rrxe || return 1
	if [ ! -e /sys/class/net/$NDEV ]; then
		ip link add $NDEV type dummy && ip addr add 10.98.0.1/24 dev $NDEV || return 1
	fi
	ip link set $NDEV up
	[ -e /sys/class/infiniband/$DEV ] || timeout 30 rdma link add $DEV type rrxe netdev $NDEV || return 1
	retry 50 0.1 sh -c "ibv_devinfo -d $DEV 2>/dev/null | grep -q PORT_ACTIVE" || return 1
	GID=$(rrxe_gid_index $DEV 10.98.0.1)
}
# pingpong PORT: a server and its client on $DEV over loopback, endless; sets SRV and CLI.
pingpong() {
	ibv_rc_pingpong -d $DEV -g "$GID" -p "$1" -s 4096 -n 100000000 >/dev/null 2>&1 &
	SRV=$!
	wait_listen "$1" 10 "$SRV"
	ibv_rc_pingpong -d $DEV -g "$GID" -p "$1" -s 4096 -n 100000000 127.0.0.1 >/dev/null 2>&1 &
	CLI=$!
}
# reap: SIGKILL what is left of the pair and wait for it (30 s at most).
reap() {
	kill -9 "$SRV" "$CLI" 2>/dev/null
	for _ in $(seq 300); do
		kill -0 "$SRV" 2>/dev/null || kill -0 "$CLI" 2>/dev/null || return 0
		sleep 0.1
	done
	echo "ping-pong processes still there 30 s after SIGKILL"
	return 1
}

setup || die "setup"
hung=0 quiet=0 t0=$(date +%s)
for i in $(seq "$LOOPS"); do
	setup || { hung=$((hung + 1)); log "iteration $i: setup failed"; continue; }
	before=$(pkts)
	pingpong $((19000 + i % 500))
	# Under traffic: wait (5 s at most) until packets flow.
	if ! retry 50 0.1 sh -c "[ \$(cat /sys/class/infiniband/$DEV/ports/1/hw_counters/rcvd_pkts) -gt $((before + 20)) ]"; then
		quiet=$((quiet + 1))
		log "iteration $i: no traffic within 5 s"
	fi
	case $((i % 5)) in
	0) what=kill; kill -9 "$SRV" "$CLI" ;;
	1) what=linkdel; timeout 30 rdma link del $DEV ;;
	2) what=rmmod; timeout 30 rmmod rdma_rrxe ;;
	3) what=linkdown; timeout 30 ip link set $NDEV down && sleep 0.2 && timeout 30 ip link set $NDEV up ;;
	4) what=netdel; timeout 30 ip link del $NDEV ;;
	esac
	rc=$?
	if [ $rc != 0 ]; then
		hung=$((hung + 1))
		log "iteration $i ($what): exit status $rc$([ $rc = 124 ] && echo ' (timed out)')"
	fi
	reap || hung=$((hung + 1))
done
secs=$(($(date +%s) - t0))
echo "# teardown loop: $LOOPS iterations (kill, linkdel, rmmod, linkdown, netdel in turn) in $secs s: $hung failed or hung, $quiet without traffic"
if [ $hung = 0 ]; then ok teardown_loop_iterations; else bad teardown_loop_iterations "$hung of $LOOPS iterations failed or hung"; fi
if [ $quiet = 0 ]; then ok teardown_loop_under_traffic; else bad teardown_loop_under_traffic "$quiet of $LOOPS iterations had no traffic before the teardown"; fi

setup || die "final setup"
ibv_rc_pingpong -d $DEV -g "$GID" -p 18998 -s 65536 -n 50 >/tmp/pps.out 2>&1 &
srv=$!
wait_listen 18998
timeout 60 ibv_rc_pingpong -d $DEV -g "$GID" -p 18998 -s 65536 -n 50 127.0.0.1 >/tmp/ppc.out 2>&1
crc=$?
wait $srv
src=$?
if [ $crc = 0 ] && [ $src = 0 ]; then
	ok teardown_loop_device_works
else
	tail -3 /tmp/pps.out /tmp/ppc.out
	bad teardown_loop_device_works "ping-pong after the loop: server $src, client $crc"
fi
exit $FAILED
