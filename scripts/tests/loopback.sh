# SPDX-License-Identifier: GPL-2.0
#
# Loopback, one guest: QPs of the same rrxe device talk to each other (the packets go to
# this host's own address; rrxe hands them to its receive path from softirq work instead
# of the IP layer, which would deliver them on the loopback device). xfer (every byte of
# every message checked, both ways: RC SEND, WRITE with immediate and READ through scatter
# lists, UC, UD) and the stock tools; then the device and the module go away (the harness
# checks for leaks and warnings at the end).
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }

rdma_link rdma_rrxe rrxe rrxe0
gid=$(rrxe_gid_index rrxe0) || die "no RoCE v2 GID"
port=18600
# pair NAME SERVER-CMD...: runs the tool as server and client on this host (the client's
# command is the server's, with "client" for a "server" subcommand, and this host's address).
pair() {
	local name=$1 srv rc cli
	shift
	port=$((port + 1))
	timeout 120 "$@" -p $port >/tmp/lo-srv 2>&1 &
	srv=$!
	cli=("$@")
	[ "${cli[1]}" != server ] || cli[1]=client
	connect_to() { timeout 120 "$@" -p $port "$RRXE_IP" >/tmp/lo-cli 2>&1; }
	retry 50 0.2 connect_to "${cli[@]}"
	rc=$?
	wait $srv
	local src=$?
	cat /tmp/lo-cli
	if grep -q "invalid data" /tmp/lo-srv /tmp/lo-cli; then
		bad "loopback_$name" "$(grep -h -m1 'invalid data' /tmp/lo-srv /tmp/lo-cli)"
	elif [ $rc = 0 ] && [ $src = 0 ]; then ok "loopback_$name"; else bad "loopback_$name" "client $rc, server $src"; fi
}
# xpair NAME XFER_OPTS...: xfer's server and client on this host (port via -p).
xpair() {
	local name=$1
	shift
	pair "$name" xfer server -d rrxe0 -g "$gid" "$@"
}
xpair xfer_rc_send_65536_sges -s 65536 -n 10 -S 3
xpair xfer_rc_write_imm_65536 -o write_imm -s 65536 -n 10 -S 2
xpair xfer_rc_read_65536 -o read -s 65536 -n 10 -S 4
xpair xfer_rc_send_1m_events -s 1048576 -n 2 -e
xpair xfer_uc_send_4096 -t uc -s 4096 -n 20
xpair xfer_ud_send_1024 -t ud -s 1024 -n 20 -S 2
pair pingpong_64k ibv_rc_pingpong -d rrxe0 -g "$gid" -s 65536 -n 20 -c
pair pingpong_1m_events ibv_rc_pingpong -d rrxe0 -g "$gid" -s 1048576 -n 3 -c -e
pair read_bw ib_read_bw -d rrxe0 -x "$gid" -n 50 -F
pair atomic_bw ib_atomic_bw -d rrxe0 -x "$gid" -n 50 -F
pair write_lat ib_write_lat -d rrxe0 -x "$gid" -n 50 -F

# The counters rrxe shares with rdma_rxe, both ends of each exchange on rrxe0: a SEND the
# server refuses with RNR NAKs until the client's rnr_retry (1) runs out, then one the
# server takes (RNR NAKs, if the SEND comes before its receive, until it does).
#  - counters_rnr: send_rnr_err and rcvd_rnr_err grew alike, by 2 at least (the refused
#    SEND's first try and its retry), retry_rnr_exceeded_err by exactly 1;
#  - counters_sends_recvs: rdma_sends and rdma_recvs grew by exactly 1 (the SEND that got
#    through, and its receive);
#  - counters_bytes: sent_bytes and rcvd_bytes grew alike (both count IP datagrams, as
#    rdma_rxe does): every packet sent (sent_pkts + retransmits) came back in whole.
hw() { cat "/sys/class/infiniband/rrxe0/ports/1/hw_counters/$1"; }
COUNTERS="send_rnr_err rcvd_rnr_err retry_rnr_exceeded_err rdma_sends rdma_recvs sent_bytes
	rcvd_bytes sent_pkts retransmits rcvd_pkts"
hw_snap() { for c in $COUNTERS; do echo "$c $(hw $c)"; done; }
hw_delta() { awk -v n="$1" '$1 == n { v[FILENAME] = $2 } END { print v["/tmp/hw.1"] - v["/tmp/hw.0"] }' /tmp/hw.0 /tmp/hw.1; }
hw_snap >/tmp/hw.0
pair rnr_retry_exceeded rc_rnr server -d rrxe0 -g "$gid" -r 1
pair rnr_then_send rc_rnr server -d rrxe0 -g "$gid" -P -w 0 -r 7
hw_snap >/tmp/hw.1
for c in $COUNTERS; do printf '%s +%s ' "$c" "$(hw_delta "$c")"; done
echo
sent_rnr=$(hw_delta send_rnr_err) rcvd_rnr=$(hw_delta rcvd_rnr_err)
if [ "$sent_rnr" = "$rcvd_rnr" ] && [ "$sent_rnr" -ge 2 ] && [ "$(hw_delta retry_rnr_exceeded_err)" = 1 ]; then
	ok counters_rnr
else
	bad counters_rnr "send_rnr_err +$sent_rnr, rcvd_rnr_err +$rcvd_rnr, retry_rnr_exceeded_err +$(hw_delta retry_rnr_exceeded_err)"
fi
if [ "$(hw_delta rdma_sends)" = 1 ] && [ "$(hw_delta rdma_recvs)" = 1 ]; then
	ok counters_sends_recvs
else
	bad counters_sends_recvs "rdma_sends +$(hw_delta rdma_sends), rdma_recvs +$(hw_delta rdma_recvs)"
fi
npkts=$(($(hw_delta sent_pkts) + $(hw_delta retransmits)))
if [ "$npkts" -gt 0 ] && [ "$npkts" = "$(hw_delta rcvd_pkts)" ] &&
	[ "$(hw_delta sent_bytes)" = "$(hw_delta rcvd_bytes)" ]; then
	ok counters_bytes
else
	bad counters_bytes "$npkts packets sent, $(hw_delta rcvd_pkts) received, sent_bytes +$(hw_delta sent_bytes), rcvd_bytes +$(hw_delta rcvd_bytes)"
fi
# counters_pma: the port's Performance Management agent (process_mad; the core reads it for
# the ports/1/counters/ files) reports what the hw_counters say: data in 4-octet units,
# every packet unicast here, link_downed, and the receive errors (bad ICRC or malformed).
# Read once the counters stand still (a late ACK can still be on its way).
pma() { cat "/sys/class/infiniband/rrxe0/ports/1/counters/$1"; }
pma_snap() {
	echo "$(pma port_xmit_packets) $(pma port_rcv_packets) $(pma port_xmit_data) $(pma port_rcv_data)" \
		"$(pma unicast_xmit_packets) $(pma multicast_xmit_packets) $(pma unicast_rcv_packets)" \
		"$(pma multicast_rcv_packets) $(pma link_downed) $(pma port_rcv_errors)"
}
hw_want() {
	echo "$(hw sent_pkts) $(hw rcvd_pkts) $(($(hw sent_bytes) / 4)) $(($(hw rcvd_bytes) / 4))" \
		"$(hw sent_pkts) 0 $(hw rcvd_pkts) 0 $(hw link_downed)" \
		"$(($(hw rcvd_icrc_err) + $(hw rcvd_malformed)))"
}
for i in $(seq 20); do
	want=$(hw_want) got=$(pma_snap)
	[ "$want" = "$(hw_want)" ] && break
	sleep 0.2
done
echo "PMA (xmit/rcv packets, data, unicast/multicast, link_downed, rcv_errors): $got"
if [ "$got" = "$want" ] && [ "$(pma port_xmit_packets)" -gt 0 ] && [ "$(pma symbol_error)" = 0 ]; then
	ok counters_pma
else
	bad counters_pma "ports/1/counters: $got; hw_counters say: $want"
fi
rdma statistic show link rrxe0/1
if rdma link del rrxe0; then ok loopback_link_del; else bad loopback_link_del "rdma link del"; fi
if rmmod rdma_rrxe; then ok loopback_rmmod; else bad loopback_rmmod rmmod; fi
exit $FAILED
