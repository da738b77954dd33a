# SPDX-License-Identifier: GPL-2.0
#
# The transport's tracepoints (rdma_sw, include/trace/events/rdma_sw.h), one guest, rrxe on
# eth0, loopback (server and client on the same device), read through tracefs:
#  - trace_events_listed: events/rdma_sw/ has the four events (qp_state, retry, nak_sent,
#    nak_rcvd);
#  - with them enabled, rc_access case 4 (a WRITE into a read-only region):
#    trace_qp_state_modify (RESET -> INIT and RTR -> RTS by modify_qp),
#    trace_nak_sent and trace_nak_rcvd (the remote access error NAK, syndrome 0x62, sent by
#    the responder and received by the requester), trace_qp_state_error (the responder's QP
#    to ERR, with the reason);
#  - rc_rnr with rnr_retry 1 (a SEND to a QP without a receive posted): trace_rnr_nak_sent
#    (an RNR NAK, syndrome 0x2N) and trace_retry_rnr (the requester resends once the RNR
#    wait is over, cause "RNR wait"); then the SEND completes with RNR_RETRY_EXC_ERR:
#    trace_qp_state_send_error;
#  - trace_off_silent: with the events disabled, case 4 again leaves no rdma_sw line.
# (Retries on a timeout or a sequence NAK need a lossy wire: loss.sh traces them, loss_retries_traced.)
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok${2:+ $2}"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
PORT=19200
TR=/sys/kernel/tracing

rdma_use rrxe
log "$DEV, GID index $GID"
[ -d $TR/events ] || mount -t tracefs nodev $TR || die "no tracefs"

# pair NAME TOOL SERVER_OPTS... -- CLIENT_OPTS...: TOOL's server and client on this device;
# their outputs are printed (the errors they meet are the point, not their verdicts).
pair() {
	local name=$1 tool=$2 sopts=() srv
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sopts+=("$1"); shift; done
	shift
	PORT=$((PORT + 1))
	timeout 60 $tool server -d "$DEV" -g "$GID" -p $PORT "${sopts[@]}" >/tmp/tr-srv 2>&1 &
	srv=$!
	wait_listen $PORT 30 $srv || { bad "$name" "server did not listen"; return 1; }
	timeout 60 $tool client -d "$DEV" -g "$GID" -p $PORT "$@" "$RRXE_IP" >/tmp/tr-cli 2>&1
	log "$name: client $?"
	wait $srv
	log "$name: server $?"
	sed 's/^/   client: /' /tmp/tr-cli
}

# found NAME PATTERN: the trace since it was last cleared has an rdma_sw event line matching
# PATTERN (extended regular expression, after "rdma_sw_").
found() {
	local l
	l=$(grep -E "rdma_sw_$2" /tmp/tr-out | head -1 | sed 's/^ *//')
	if [ -n "$l" ]; then ok "$1" "($l)"; else bad "$1" "no event matching 'rdma_sw_$2'"; fi
}
take() { cat $TR/trace >/tmp/tr-out; grep rdma_sw_ /tmp/tr-out | sed 's/^/   trace: /'; }

ev=$(ls $TR/events/rdma_sw 2>/dev/null | grep -c '^rdma_sw_\(qp_state\|retry\|nak_sent\|nak_rcvd\)$')
if [ "$ev" = 4 ]; then
	ok trace_events_listed "($(cat $TR/events/rdma_sw/rdma_sw_nak_sent/format | grep -c field:) fields in nak_sent)"
else
	bad trace_events_listed "$ev of the 4 events in $TR/events/rdma_sw: $(ls $TR/events/rdma_sw 2>&1)"
fi

echo 1 >$TR/events/rdma_sw/enable || die "cannot enable the rdma_sw events"
echo >$TR/trace
pair access rc_access -c 4 -- -c 4
take
found trace_qp_state_modify "qp_state: eth0 qpn=0x[0-9a-f]+ RESET -> INIT: modify_qp"
found trace_nak_sent "nak_sent: eth0 qpn=0x[0-9a-f]+ psn=0x[0-9a-f]+ NAK syndrome=0x62"
found trace_nak_rcvd "nak_rcvd: eth0 qpn=0x[0-9a-f]+ psn=0x[0-9a-f]+ NAK syndrome=0x62"
found trace_qp_state_error "qp_state: eth0 qpn=0x[0-9a-f]+ RTS -> ERR: the responder failed a request"
if ! grep -qE 'rdma_sw_qp_state: .* RTR -> RTS: modify_qp' /tmp/tr-out; then
	bad trace_qp_state_modify "no RTR -> RTS"
fi

echo >$TR/trace
pair rnr rc_rnr -- -r 1
take
found trace_rnr_nak_sent "nak_sent: eth0 qpn=0x[0-9a-f]+ psn=0x[0-9a-f]+ RNR NAK syndrome=0x[23][0-9a-f]"
found trace_retry_rnr "retry: eth0 qpn=0x[0-9a-f]+ psn=0x[0-9a-f]+ cause=RNR wait"
found trace_qp_state_send_error "qp_state: eth0 qpn=0x[0-9a-f]+ RTS -> ERR: a send work request completed in error"

echo 0 >$TR/events/rdma_sw/enable
echo >$TR/trace
pair access-off rc_access -c 4 -- -c 4
take
if grep -q 'rdma_sw_' /tmp/tr-out; then
	bad trace_off_silent "events while disabled"
elif ! grep -q '^CASE 4 .* ok' /tmp/tr-cli; then
	bad trace_off_silent "rc_access case 4 did not run"
else
	ok trace_off_silent
fi
exit $FAILED
