# SPDX-License-Identifier: GPL-2.0
#
# perftest between the guests: ib_write_bw, ib_read_bw, ib_send_bw (64 KiB), ib_atomic_bw
# and ib_write_lat, guest a the server, guest b the client. PF_A / PF_B pick each guest's
# driver (rrxe or rxe; default rrxe). Each run moves a fixed number of iterations (-n
# PF_ITERS, default 200) and must finish on both sides with a result line that counted all
# of them; guest a judges (the client reports its exit status and iteration count over TCP).
# Iterations, not durations (-D): a duration run counts only the completions that fall in
# its sampling window of the guest's clock, which under TCG can be none at all although
# every message moved; throughput is for make bench.
# PF_Q64=1 adds ib_write_bw_q64: 64 QPs at once (-q 64, 10 messages of 64 KiB each), with
# perftest's own local ACK timeout (67 ms): 8,192 PSNs of full windows overflow the wire's
# queues, and each QP must come through on its congestion window, not end in
# IBV_WC_RETRY_EXC_ERR.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
if [ "$RRXE_NAME" = a ]; then DRV=${PF_A:-rrxe}; else DRV=${PF_B:-rrxe}; fi
rdma_use "$DRV"
tag="${PF_A:-rrxe}_${PF_B:-rrxe}"
N=${PF_ITERS:-200} TMO=180
port=18400
# iters FILE: the iteration count of perftest's result line (0 if none).
iters() { awk '$1 ~ /^[0-9]+$/ && NF >= 4 && $2 ~ /^[0-9]+$/ { n = $2 } END { print n + 0 }' "$1"; }
tests="ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw ib_write_lat"
[ "${PF_Q64:-0}" = 1 ] && tests="$tests ib_write_bw_q64"
for name in $tests; do
	port=$((port + 1))
	t=${name%_q64}
	n=$N
	# -u 18: a local ACK timeout of 1 s (4.096 us * 2^18) instead of perftest's 67 ms
	# (-u 14). Under TCG a responder can take longer than 67 ms to acknowledge a window of
	# 64 KiB messages (rdma_rxe as the responder, queuing each go-back-N retransmission
	# behind the last); rrxe, like a hardware HCA, ends the QP after retry_cnt (7) expiries
	# without progress (IBA 9.7.6.1.3: IBV_WC_RETRY_EXC_ERR, seen as "Failed status 12" and
	# the server's "Did not get Message for 120 Seconds"), where rdma_rxe takes 7 to mean
	# "for ever". The timeout is the environment's, not the protocol's.
	opts=(-d "$DEV" -x "$GID" -F -p $port)
	want=$n
	if [ "$name" = ib_write_bw_q64 ]; then
		# -n is per QP; the result line counts the iterations of all 64.
		n=10 want=640
		opts+=(-q 64)
	else
		opts+=(-u 18)
	fi
	opts+=(-n "$n")
	case $t in *_bw) [ $t = ib_atomic_bw ] || opts+=(-s 65536) ;; esac
	if [ "$RRXE_NAME" = a ]; then
		# Listen for the client's verdict from the start (in the background, as nc needs).
		hear $((port + 100)) $((2 * TMO + 30)) >/tmp/pf.client </dev/null &
		l=$!
		timeout $TMO $t "${opts[@]}" >/tmp/pf 2>&1
		rc=$?
		# All of perftest's output when the run failed (its error says why), else the result.
		if [ $rc = 0 ]; then tail -4 /tmp/pf; else cat /tmp/pf; fi
		wait $l
		read -r crc cn </tmp/pf.client
		if [ $rc = 0 ] && [ "${crc:-x}" = 0 ] && [ "${cn:-0}" = "$want" ]; then
			ok "perftest_${tag}_$name"
		else
			bad "perftest_${tag}_$name" "server exit $rc, client exit ${crc:-none}, client iterations ${cn:-none}"
			rdma statistic show link "$DEV/1"
		fi
	else
		connect_retry 150 /tmp/pf timeout $TMO $t "${opts[@]}" "$RRXE_PEER"
		rc=$?
		if [ $rc = 0 ]; then tail -4 /tmp/pf; else cat /tmp/pf; rdma statistic show link "$DEV/1"; fi
		tell_peer $((port + 100)) "$rc $(iters /tmp/pf)" || die "cannot report to guest a"
	fi
done
rdma statistic show link "$DEV/1"
exit $FAILED
