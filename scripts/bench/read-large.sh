# SPDX-License-Identifier: GPL-2.0
#
# `make bench-read-large` guest script (both guests): one RDMA READ of $READ_SIZE bytes
# (default 1 GiB) at the smallest MTU (256), checked byte for byte by xfer, for each driver
# in $READ_DRIVERS (default "rrxe rxe"), while the responder's guest (a) is watched:
#  - guest b pings guest a once a second; guest a's and guest b's ICMP counters
#    (/proc/net/snmp) tell a ping that guest a never received (the wire dropped the
#    request), one it did not answer (the guest was not responsive) and one whose answer
#    the wire dropped;
#  - guest a runs a timer loop (a 100 ms wait, with no fork) and records how late each
#    wake-up was: the worst and the 99th percentile lateness, independent of the wire.
# rdma_rxe of 7.3 cannot register the 2 GiB region of a 1 GiB xfer (its page_info array
# is one kzalloc of 16 bytes a page, and kmalloc stops at 4 MiB: ENOMEM above 1 GiB); it is
# then reported as skipped, and READ_SIZE=268435456 compares the two drivers.
# Each guest prints, per driver:
#   READ <driver> b rc <xfer exit status> secs <elapsed> MBps <MB/s> verified <bytes>
#   READ <driver> b ping sent <n> answered <n> rtt_max_ms <ms>
#   READ <driver> b icmp out_echos <n> in_echo_reps <n>
#   READ <driver> a icmp in_echos <n> out_echo_reps <n>
#   READ <driver> a timer wakeups <n> late_max_ms <ms> late_p99_ms <ms>
#   READ <driver> a counters <name> <value> ...   (responder pacing counters, rrxe only)
. /usr/local/lib/rrxe/lib.sh

SIZE=${READ_SIZE:-1073741824}
TMO=${READ_TIMEOUT:-3000}
PORT=23100

# icmp FIELD...: the named fields of the Icmp line of /proc/net/snmp, in order.
icmp() {
	awk -v want="$*" '$1 == "Icmp:" && !h { for (i = 2; i <= NF; i++) col[$i] = i; h = 1; next }
		$1 == "Icmp:" { n = split(want, w, " "); for (k = 1; k <= n; k++) printf "%s ", $col[w[k]]; print "" }' \
		/proc/net/snmp
}

# timer_loop FILE: every 100 ms (read -t, no fork) appends the wake-up's lateness in µs.
timer_loop() {
	local t0 t1 fifo=/tmp/timer.fifo
	rm -f "$fifo"; mkfifo "$fifo"
	exec 9<>"$fifo"
	while :; do
		t0=${EPOCHREALTIME/./}
		read -r -t 0.1 -u 9
		t1=${EPOCHREALTIME/./}
		echo $((t1 - t0 - 100000)) >>"$1"
	done
}

for drv in ${READ_DRIVERS:-rrxe rxe}; do
	rdma_use "$drv"
	MOD=rdma_$drv
	PORT=$((PORT + 1))
	args=(-d "$DEV" -g "$GID" -p "$PORT" -t rc -o read -s "$SIZE" -n 1 -m 256 -T "$TMO" -q)
	if [ "$RRXE_NAME" = a ]; then
		rm -f /tmp/late.us
		timer_loop /tmp/late.us &
		tl=$!
		set -- $(icmp InEchos OutEchoReps)
		timeout $((TMO + 60)) xfer server "${args[@]}" >/tmp/srv.out 2>&1 &
		srv=$!
		if wait_listen "$PORT" 60 $srv; then
			tell_peer $((PORT + 200)) go
			wait $srv
			echo "READ $drv a server rc $?"
			hear $((PORT + 300)) 120 >/dev/null
		else
			# e.g. a region too large for the driver: guest b goes on to the next one.
			tell_peer $((PORT + 200)) skip
			wait $srv
			echo "READ $drv a server rc $? (did not start)"
		fi
		set -- $(icmp InEchos OutEchoReps) "$@"
		echo "READ $drv a icmp in_echos $(($1 - $3)) out_echo_reps $(($2 - $4))"
		kill $tl; wait $tl 2>/dev/null
		sort -n /tmp/late.us | awk '{ v[NR] = $1 } END { if (!NR) exit;
			i = int(NR * 0.99); if (i < 1) i = 1
			printf "READ '"$drv"' a timer wakeups %d late_max_ms %.1f late_p99_ms %.1f\n", NR, v[NR] / 1000, v[i] / 1000 }'
		if [ "$drv" = rrxe ]; then
			rdma statistic show link "$DEV/1" | tr ' ' '\n' |
				grep -A1 -x -E 'send_err|tx_paused|retransmits|replies_dropped|duplicate_request|seq_naks' |
				grep -v -- -- | paste -sd' ' | sed "s/^/READ $drv a counters /"
		fi
		sed 's/^/   /' /tmp/srv.out
	else
		msg=$(hear $((PORT + 200)) 300) || die "guest a never answered"
		if [ "$msg" != go ]; then
			echo "READ $drv b skipped: guest a's server did not start"
			rdma link del "$DEV"
			rmmod "$MOD"
			continue
		fi
		set -- $(icmp OutEchos InEchoReps)
		ping -i 1 "$RRXE_PEER" >/tmp/ping.out 2>&1 &
		pp=$!
		t0=$EPOCHREALTIME
		connect_retry 50 /tmp/cli.out timeout $((TMO + 30)) xfer client "${args[@]}" "$RRXE_PEER"
		rc=$?
		t1=$EPOCHREALTIME
		kill -INT $pp; wait $pp
		set -- $(icmp OutEchos InEchoReps) "$@"
		ver=$(sed -n 's/.*: \([0-9]*\) bytes verified.*/\1/p' /tmp/cli.out)
		awk -v d="$drv" -v rc=$rc -v t0="$t0" -v t1="$t1" -v v="${ver:-0}" 'BEGIN {
			printf "READ %s b rc %d secs %.1f MBps %.3f verified %d\n", d, rc, t1 - t0, v / (t1 - t0) / 1e6, v }'
		sent=$(sed -n 's/^\([0-9]*\) packets transmitted.*/\1/p' /tmp/ping.out)
		got=$(sed -n 's/.* \([0-9]*\) packets received.*/\1/p' /tmp/ping.out)
		max=$(sed -n 's|.*min/avg/max = [0-9.]*/[0-9.]*/\([0-9.]*\) ms.*|\1|p' /tmp/ping.out)
		echo "READ $drv b ping sent ${sent:-0} answered ${got:-0} rtt_max_ms ${max:--}"
		echo "READ $drv b icmp out_echos $(($1 - $3)) in_echo_reps $(($2 - $4))"
		sed 's/^/   /' /tmp/cli.out
		tell_peer $((PORT + 300)) done
	fi
	rdma link del "$DEV"
	rmmod "$MOD"
done
