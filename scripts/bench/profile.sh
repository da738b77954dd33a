# SPDX-License-Identifier: GPL-2.0
#
# `make profile` guest script (both guests): where the CPU time of a perftest run goes, in
# each guest, for each driver. For each driver in $PROFILE_DRIVERS (default "rrxe rxe") and
# each test in $PROFILE_TESTS (default "ib_write_bw ib_read_bw"), with $PROFILE_SIZE-byte
# messages (default 64 KiB) for $PROFILE_DURATION seconds (default 14): guest a runs the
# server and guest b the client, and 3 s into the run both record `perf record -a -g -e
# cpu-clock` for 8 s (TCG has no PMU: cpu-clock samples at 4 kHz from an hrtimer); every
# message is signalled (-Q 1, see run() in guest.sh). Then each guest prints its profile:
#   PROF <driver> <test> <guest> bw <MB/s>            (guest b: perftest's average)
#   PROF <driver> <test> <guest> comm <pct> <command>  (share of all samples, idle included)
#   PROF <driver> <test> <guest> sym <pct> <symbol>    (self time, >= 0.5%)
#   PROF <driver> <test> <guest> count <delta> <name>  (port hw_counters and eth0
#                                                       statistics that moved in the run)
# The perf binary is the host's (EXTRA_FILES=/usr/bin/perf, see scripts/profile.sh).
. /usr/local/lib/rrxe/lib.sh

DUR=${PROFILE_DURATION:-14}
PORT=21000
ARGS="-F -Q 1 -s ${PROFILE_SIZE:-65536} -D $DUR"
command -v perf >/dev/null || die "no perf in the guest (EXTRA_FILES=/usr/bin/perf)"

# counts: every port hw_counter of $DEV and every eth0 statistic, "name value" lines.
counts() {
	local f
	for f in /sys/class/infiniband/$DEV/ports/1/hw_counters/* /sys/class/net/eth0/statistics/*; do
		[ "${f##*/}" = lifespan ] || echo "${f##*/} $(cat "$f")"
	done
}

# report DRV TEST: this guest's profile lines from /tmp/p.data.
report() {
	local pre="PROF $1 $2 $RRXE_NAME"
	perf report -i /tmp/p.data --stdio --no-children --sort comm -g none 2>/dev/null |
		awk -v p="$pre" '$1 ~ /%$/ { sub(/%/, "", $1); print p, "comm", $1, $2 }' | head -8
	perf report -i /tmp/p.data --stdio --no-children --sort sym -g none --percent-limit 0.5 2>/dev/null |
		awk -v p="$pre" '$1 ~ /%$/ { sub(/%/, "", $1); $2 = ""; sub(/^ +/, "", $0); print p, "sym", $0 }' |
		sed 's/  */ /g' | head -45
}

for drv in ${PROFILE_DRIVERS:-rrxe rxe}; do
	rdma_use "$drv"
	for t in ${PROFILE_TESTS:-ib_write_bw ib_read_bw}; do
		PORT=$((PORT + 1))
		go=$((7000 + PORT % 1000)) fin=$((8000 + PORT % 1000))
		counts >/tmp/c.0
		if [ "$RRXE_NAME" = a ]; then
			# shellcheck disable=SC2086
			timeout $((DUR + 60)) "$t" -d "$DEV" -x "$GID" -p $PORT $ARGS >/tmp/prof.out 2>&1 &
			srv=$!
			wait_listen $PORT 30 && tell_peer $go go
		else
			hear $go 120 >/dev/null
			# shellcheck disable=SC2086
			connect_retry 25 /tmp/prof.out timeout $((DUR + 60)) "$t" -d "$DEV" -x "$GID" \
				-p $PORT $ARGS "$RRXE_PEER" &
			srv=$!
		fi
		sleep 3
		perf record -a -g -e cpu-clock -o /tmp/p.data -- sleep 8 >/dev/null 2>&1 ||
			log "perf record failed"
		wait $srv
		counts >/tmp/c.1
		if [ "$RRXE_NAME" = b ]; then
			tell_peer $fin done
			echo "PROF $drv $t b bw $(awk '$1 ~ /^[0-9]+$/ && NF >= 4 { v = $4 } END { print (v == "" ? "nan" : v) }' /tmp/prof.out) MB/s"
		else
			hear $fin 120 >/dev/null
		fi
		report "$drv" "$t"
		awk -v p="PROF $drv $t $RRXE_NAME count" 'FNR == NR { v[$1] = $2; next }
			$2 != v[$1] { print p, $2 - v[$1], $1 }' /tmp/c.0 /tmp/c.1
		rm -f /tmp/p.data
	done
	rdma link del "$DEV" || die "rdma link del $DEV"
	modprobe -r "$([ "$drv" = rrxe ] && echo rdma_rrxe || echo rdma_rxe)" || die "rmmod"
done
