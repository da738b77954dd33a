# SPDX-License-Identifier: GPL-2.0
#
# Per-QP counters through the core's counter API (`rdma statistic qp`), one guest, rrxe on
# eth0, loopback (ibv_rc_pingpong server and client on the same device):
#  - counters_auto_mode: `rdma statistic qp set link rrxe0/1 auto type on` is accepted and
#    `rdma statistic qp mode` reads it back;
#  - counters_auto_bound: while a pingpong runs, one counter holds both of its RC QPs;
#  - counters_auto_counts: that counter's rdma_sends grows while it runs;
#  - counters_auto_released: once the pingpong exits, no counter is left;
#  - counters_port_exact: the port's rdma_sends and rdma_recvs (sysfs: the port's own plus
#    every counter's, running or gone) grew by exactly the 2 x N messages of the pingpong
#    (a QP's events counted in its counter and on the port, or in neither, would not add up);
#  - counters_qp_error: a QP's error in its own counter. rc_rnr (tools/testing/rrxe: a SEND
#    to a QP with no receive posted, rnr_retry 1) between two processes on this device, in
#    auto mode by process and type (`auto pid,type on`), each holding its QP once the
#    outcome is known: the client's QP is in state
#    ERR (`rdma resource show qp`), its counter (its process's, holding that QP alone) reads
#    retry_rnr_exceeded_err 1 and rcvd_rnr_err 2 (the first try and its one retry refused),
#    and the server's counter send_rnr_err 2 and retry_rnr_exceeded_err 0;
#  - counters_manual_bind: with auto off, `rdma statistic qp bind ... lqpn Q` makes a counter
#    for one QP of a running pingpong, whose rdma_sends grows;
#  - counters_rebind_refused: binding that QP again is refused (the core frees the new
#    counter without telling the driver: kmemleak, checked by the harness, sees a leak);
#  - counters_manual_unbind: `rdma statistic qp unbind` leaves no counter, and the port's
#    rdma_sends still grows (the QP counts on the port again).
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok${2:+ $2}"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
PORT=19100

rdma_use rrxe
L=$DEV/1
HW=/sys/class/infiniband/$DEV/ports/1/hw_counters
port_stat() { cat "$HW/$1"; }
qp_stats() { rdma statistic qp show link "$L" 2>&1; }
# counter_value NAME: NAME's value in the first counter `rdma statistic qp show` lists (empty
# if there is none).
counter_value() { qp_stats | grep -o "$1 [0-9]*" | head -1 | cut -d' ' -f2; }

# pingpong N: an ibv_rc_pingpong server and client of N 64-byte messages on this device, in
# the background (PIDS).
pingpong() {
	PORT=$((PORT + 1))
	ibv_rc_pingpong -d "$DEV" -g "$GID" -s 64 -n "$1" -p $PORT >/tmp/cnt-srv 2>&1 &
	SRV=$!
	wait_listen $PORT 30 $SRV || die "pingpong server did not listen"
	ibv_rc_pingpong -d "$DEV" -g "$GID" -s 64 -n "$1" -p $PORT "$RRXE_IP" >/tmp/cnt-cli 2>&1 &
	CLI=$!
}
stop_pingpong() {
	kill -9 $SRV $CLI 2>/dev/null
	wait $SRV $CLI 2>/dev/null
}
# wait_counter NAME: polls until the first counter's NAME is non-zero (at most 30 s).
wait_counter() {
	local v end=$((SECONDS + 30))
	while [ $SECONDS -lt $end ]; do
		v=$(counter_value "$1")
		[ "${v:-0}" -gt 0 ] && return 0
		sleep 0.2
	done
	return 1
}

# Auto mode: one counter per QP type.
if rdma statistic qp set link "$L" auto type on &&
	rdma statistic qp mode link "$L" | tee /dev/stderr | grep -q 'auto type on'; then
	ok counters_auto_mode
else
	bad counters_auto_mode "$(rdma statistic qp mode link "$L" 2>&1)"
fi

N=3000
s0=$(port_stat rdma_sends)
r0=$(port_stat rdma_recvs)
pingpong $N
if wait_counter rdma_sends; then
	out=$(qp_stats)
	echo "$out" | sed 's/^/   stat: /'
	lqpns=$(echo "$out" | grep -o 'LQPN[^>]*>\?' | head -1)
	n=$(echo "$out" | grep -c 'cntn')
	if [ "$n" = 1 ] && echo "$out" | grep -q 'qp-type RC' &&
		[ "$(echo "$lqpns" | grep -o '[0-9][0-9]*' | wc -l)" = 2 ]; then
		ok counters_auto_bound "($lqpns)"
	else
		bad counters_auto_bound "$n counters, QPs '$lqpns'"
	fi
	a=$(counter_value rdma_sends)
	sleep 1
	b=$(counter_value rdma_sends)
	if [ "${b:-0}" -gt "${a:-0}" ]; then
		ok counters_auto_counts "($a then $b)"
	else
		bad counters_auto_counts "rdma_sends $a then $b"
	fi
else
	bad counters_auto_bound "no counter counted a send: $(qp_stats)"
	bad counters_auto_counts "no counter"
fi
wait $SRV
src=$?
wait $CLI
crc=$?
[ $src = 0 ] && [ $crc = 0 ] || log "pingpong: server $src, client $crc: $(cat /tmp/cnt-srv /tmp/cnt-cli)"
if qp_stats | grep -q cntn; then
	bad counters_auto_released "$(qp_stats)"
else
	ok counters_auto_released
fi
ds=$(($(port_stat rdma_sends) - s0))
dr=$(($(port_stat rdma_recvs) - r0))
if [ $src = 0 ] && [ $crc = 0 ] && [ $ds = $((2 * N)) ] && [ $dr = $((2 * N)) ]; then
	ok counters_port_exact "(rdma_sends +$ds, rdma_recvs +$dr)"
else
	bad counters_port_exact "rdma_sends +$ds, rdma_recvs +$dr for 2 x $N messages"
fi

# A QP's error in its counter: auto mode by process and type, so that each rc_rnr side's QP
# has a counter of its own; both sides hold their QPs for 20 s after the outcome.
rdma statistic qp set link "$L" auto pid,type on || bad counters_qp_error "auto pid,type refused"
PORT=$((PORT + 1))
rc_rnr server -d "$DEV" -g "$GID" -p $PORT -r 1 -H 20 >/tmp/rnr-srv 2>&1 &
SRV=$!
wait_listen $PORT 30 $SRV || die "rc_rnr server did not listen"
rc_rnr client -d "$DEV" -g "$GID" -p $PORT -r 1 -H 20 "$RRXE_IP" >/tmp/rnr-cli 2>&1 &
CLI=$!
for i in $(seq 150); do
	grep -q holding /tmp/rnr-srv && grep -q holding /tmp/rnr-cli && break
	sleep 0.2
done
cat /tmp/rnr-srv /tmp/rnr-cli | sed 's/^/   /'
cq=$(grep -o 'holding QP 0x[0-9a-f]*' /tmp/rnr-cli | grep -o '0x.*')
sq=$(grep -o 'holding QP 0x[0-9a-f]*' /tmp/rnr-srv | grep -o '0x.*')
# qp_counter QPN NAME: NAME in the counter of QP QPN, if that counter holds QPN alone.
qp_counter() {
	local out
	out=$(rdma statistic qp show link "$L" lqpn $(($1)) 2>&1)
	[ "$(echo "$out" | grep -o 'LQPN[^>]*>\?' | grep -o '[0-9][0-9]*' | tr '\n' ' ')" = "$(($1)) " ] ||
		return 0
	echo "$out" | grep -o " $2 [0-9]*" | head -1 | cut -d' ' -f3
}
if [ -n "$cq" ] && [ -n "$sq" ]; then
	qp_stats | sed 's/^/   stat: /'
	state=$(rdma resource show qp link "$L" lqpn $((cq)) 2>&1 | grep -o ' state [A-Z]*' | head -1 | cut -d' ' -f3)
	ce=$(qp_counter "$cq" retry_rnr_exceeded_err) cr=$(qp_counter "$cq" rcvd_rnr_err)
	ss=$(qp_counter "$sq" send_rnr_err) se=$(qp_counter "$sq" retry_rnr_exceeded_err)
	if [ "$state" = ERR ] && [ "$ce" = 1 ] && [ "$cr" = 2 ] && [ "$ss" = 2 ] && [ "$se" = 0 ]; then
		ok counters_qp_error "(client QP $cq in ERR: retry_rnr_exceeded_err $ce, rcvd_rnr_err $cr; server QP $sq: send_rnr_err $ss)"
	else
		bad counters_qp_error "client QP $cq state '$state', retry_rnr_exceeded_err '$ce', rcvd_rnr_err '$cr'; server QP $sq send_rnr_err '$ss', retry_rnr_exceeded_err '$se'"
	fi
else
	bad counters_qp_error "rc_rnr did not reach its outcome (client QP '$cq', server QP '$sq')"
fi
stop_pingpong

# Manual mode: a counter per bind.
rdma statistic qp set link "$L" auto off || bad counters_manual_bind "auto off refused"
pingpong 1000000
for i in $(seq 100); do
	qpn=$(rdma resource show qp link "$L" 2>/dev/null | grep ibv_rc_pingpong | grep -o 'lqpn [0-9]*' | head -1 | cut -d' ' -f2)
	[ -n "$qpn" ] && [ "$(port_stat rdma_sends)" -gt "$((s0 + 2 * N))" ] && break
	sleep 0.2
done
if [ -n "$qpn" ] && rdma statistic qp bind link "$L" lqpn "$qpn" && wait_counter rdma_sends; then
	cntn=$(qp_stats | grep -o 'cntn [0-9]*' | head -1 | cut -d' ' -f2)
	a=$(counter_value rdma_sends)
	sleep 1
	b=$(counter_value rdma_sends)
	if [ -n "$cntn" ] && [ "${b:-0}" -gt "${a:-0}" ]; then
		ok counters_manual_bind "(qp $qpn, counter $cntn: $a then $b)"
	else
		bad counters_manual_bind "counter '$cntn': rdma_sends $a then $b"
	fi
	if rdma statistic qp bind link "$L" lqpn "$qpn" 2>/dev/null; then
		bad counters_rebind_refused "a bound QP was bound again"
	else
		ok counters_rebind_refused
	fi
	rdma statistic qp unbind link "$L" cntn "$cntn" lqpn "$qpn"
	a=$(port_stat rdma_sends)
	sleep 1
	b=$(port_stat rdma_sends)
	if ! qp_stats | grep -q cntn && [ "$b" -gt "$a" ] && kill -0 $SRV $CLI; then
		ok counters_manual_unbind "(port rdma_sends $a then $b)"
	else
		bad counters_manual_unbind "port rdma_sends $a then $b, left: $(qp_stats)"
	fi
else
	bad counters_manual_bind "qp '$qpn': $(qp_stats)"
	bad counters_rebind_refused "not bound"
	bad counters_manual_unbind "not bound"
fi
stop_pingpong
exit $FAILED
