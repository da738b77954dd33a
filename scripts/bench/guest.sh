# SPDX-License-Identifier: GPL-2.0
#
# `make bench` guest script (both guests). For each driver in $BENCH_DRIVERS (default
# "rrxe rxe"), both guests load it, create its device on eth0 and run the same perftest set
# in lockstep (guest a the servers, guest b the clients, which retry until their server
# listens), then unload it. Guest b prints one line per result:
#   BENCH <driver> <test> <value> <unit>
# Then guest b writes and reads an NVMe namespace of guest a over NVMe/RDMA on the same
# driver. Finally iperf3 measures raw TCP between the guests (the wire's ceiling).
# BENCH_PARTS (default "main scale sweep qp") picks what runs for each driver:
#  - main: perftest at 64 KiB, write latency, ibv_rc_pingpong, ibv_ud_pingpong (the wire's
#    datagram round trip, no transport), NVMe over RDMA;
#  - scale: ib_write_bw, $BENCH_SCALE_MSGS (default 1,024) messages of 64 KiB over 1, 8 and
#    64 QPs;
#  - sweep: ib_write_bw/ib_read_bw/ib_send_bw over $SWEEP_BW sizes and ib_write_lat/
#    ib_send_lat over $SWEEP_LAT sizes, BENCH_SWEEP_DURATION (default 4) seconds each;
#  - qp: qp_cost (tools/testing/rrxe) in each guest: 1,000 idle RC QPs (memory, create and
#    connect, destroy) and 200 create+connect+destroy cycles.
#  - smp (for guests with 2 vCPUs, see bench.sh): ib_write_bw at 64 KiB over 1 and 8 QPs,
#    and how evenly each guest's CPU time fell on its two CPUs.
# The 64 KiB bandwidth tests of main also give their CPU cost: the CPU time both guests
# spent during the run per GiB that crossed guest b's eth0 (cpu:<test>).
. /usr/local/lib/rrxe/lib.sh

DUR=${BENCH_DURATION:-8}
SDUR=${BENCH_SWEEP_DURATION:-4}
SCALE_MSGS=${BENCH_SCALE_MSGS:-1024}
PARTS=" ${BENCH_PARTS:-main scale sweep qp} "
SWEEP_BW=${BENCH_SWEEP_BW-64 1024 4096 16384 65536 262144 1048576}
SWEEP_LAT=${BENCH_SWEEP_LAT-8 64 1024 4096 65536}
PORT=20000
SIZE=65536
part() { [[ $PARTS == *" $1 "* ]]; }

# lockstep TIMEOUT CMD ARGS...: one server/client run of CMD on port $PORT, the guests kept
# in step by messages, not by timing: guest a starts the server, waits until it listens and
# tells guest b, which runs the client (CMD ARGS... $RRXE_PEER, output in /tmp/bench.out)
# and tells a when it is done; a then gives its server 10 s to end before ending it. A
# server that hangs, or a client that fails, costs one figure, not the rest of the run.
lockstep() {
	local to=$1 go=$((7000 + PORT % 1000)) fin=$((8000 + PORT % 1000)) srv
	shift
	if [ "$RRXE_NAME" = a ]; then
		timeout "$to" "$@" >/tmp/bench.out 2>&1 &
		srv=$!
		wait_listen "$PORT" 30 && tell_peer $go go
		hear $fin $((to + 120)) >/dev/null
		for _ in $(seq 50); do kill -0 $srv 2>/dev/null || break; sleep 0.2; done
		kill $srv 2>/dev/null
		wait $srv 2>/dev/null ||
			{ echo "BENCHOUT a $drv port $PORT: the server failed ($*); its output:"; sed 's/^/BENCHOUT a /' /tmp/bench.out; } >&2
		return 0
	fi
	hear $go $((to + 180)) >/dev/null
	connect_retry 25 /tmp/bench.out timeout "$to" "$@" "$RRXE_PEER"
	tell_peer $fin done
}

# run TEST EXTRA-ARGS...: one perftest run; guest b has its output in /tmp/bench.out.
# Bandwidth tests ask for a completion for every message (-Q 1): by default perftest
# signals one WR in 100 (cq_mod) and, with -D, counts 100 messages for each completion
# that lands in its sampling window (the middle half of the run). At 64 KiB the bench guests
# move 100-200 messages a second, so a figure was a count of 0 to 6 completions: steps of
# about 2 MB/s over a 3 s window, and 0.00 MB/s when none landed in it.
run() {
	local t=$1 q=
	shift
	case $t in *_bw) q="-Q 1" ;; esac
	PORT=$((PORT + 1))
	# shellcheck disable=SC2086
	lockstep $((DUR * 4 + 60)) "$t" -d "$DEV" -x "$GID" -p $PORT -F $q "$@"
}

# pp [-u] SIZE ITERS: one ibv_rc_pingpong run (-u: ibv_ud_pingpong), server on guest a;
# true on guest b.
pp() {
	# A lost datagram ends a UD pingpong (nothing resends it): a short timeout.
	local prog=ibv_rc_pingpong to=300
	[ "$1" = -u ] && { prog=ibv_ud_pingpong to=60; shift; }
	PORT=$((PORT + 1))
	lockstep $to $prog -d "$DEV" -g "$GID" -s "$1" -n "$2" -p $PORT
	[ "$RRXE_NAME" = b ]
}

# busy [N]: this guest's CPU time so far (all CPUs, or CPU N) in USER_HZ (100 Hz) ticks:
# user, nice, system, irq and softirq.
busy() { awk -v c="cpu$1" '$1 == c { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
wire_bytes() { echo $(($(cat /sys/class/net/eth0/statistics/tx_bytes) + $(cat /sys/class/net/eth0/statistics/rx_bytes))); }

# from_a VALUE: guest a sends VALUE, of the run just done, to guest b, which prints it.
from_a() {
	if [ "$RRXE_NAME" = a ]; then
		tell_peer $((9000 + PORT % 1000)) "$1"
	else
		hear $((9000 + PORT % 1000)) 60
	fi
}

# measured TEST ARGS...: `run`, then guest b prints the CPU time both guests spent during
# it per GiB that crossed its eth0, both directions (cpu:TEST, in CPU seconds per GiB);
# guest a sends its share over TCP.
measured() {
	local t=$1 c0 w0 c a
	c0=$(busy) w0=$(wire_bytes)
	run "$@"
	c=$(($(busy) - c0))
	a=$(from_a "$c")
	if [ "$RRXE_NAME" = b ]; then
		echo "BENCH $drv cpu:$t $(awk -v a="$a" -v b="$c" -v w="$(($(wire_bytes) - w0))" \
			'BEGIN { if (a == "" || w <= 0) print "nan"; else printf "%.3f", (a + b) / 100 / (w / 1073741824) }') cpu_s_per_GiB"
	fi
}

# spread_run TEST ARGS...: `run` on guests with 2 vCPUs, then guest b prints, for each
# guest, the CPU time of its less busy CPU as a percentage of its busier one's
# (smp2:spread_<guest>:TEST; 100: the work was spread evenly, 0: one CPU did it all).
spread_run() {
	local t=$1 a0 b0 a1 b1 s a
	shift
	a0=$(busy 0) b0=$(busy 1)
	run "$@"
	a1=$(($(busy 0) - a0)) b1=$(($(busy 1) - b0))
	s=$(awk -v x="$a1" -v y="$b1" 'BEGIN { m = x > y ? x : y; n = x > y ? y : x; if (m <= 0) print "nan"; else printf "%.1f", 100 * n / m }')
	a=$(from_a "$s")
	if [ "$RRXE_NAME" = b ]; then
		echo "BENCH $drv smp2:spread_a:$t ${a:-nan} pct"
		echo "BENCH $drv smp2:spread_b:$t $s pct"
	fi
}

# result LINE-PATTERN FIELD: the FIELD-th number of perftest's result line. A run with no
# figure, or a zero one, leaves perftest's output, the kernel log's tail and the device's
# counters on the console (BENCHOUT lines, which make bench keeps in failures.txt).
result() {
	local v
	v=$(awk -v f="$2" '$1 ~ /^[0-9]+$/ && NF >= 4 { v = $f } END { print (v ~ /^[0-9.]+$/ ? v : "nan") }' /tmp/bench.out)
	if awk -v v="$v" 'BEGIN { exit !(v == "nan" || v + 0 == 0) }'; then
		{
			echo "BENCHOUT b $drv port $PORT: no figure ($v); the client's output:"
			sed 's/^/BENCHOUT b /' /tmp/bench.out
			dmesg | tail -20 | sed 's/^/BENCHOUT b dmesg /'
			# Cumulative since the device was created: compare with the previous dump.
			grep -H . /sys/class/infiniband/"$DEV"/ports/1/hw_counters/* 2>/dev/null |
				sed 's|.*/||; s/^/BENCHOUT b counter /'
		} >&2
	fi
	echo "$v"
}

for drv in ${BENCH_DRIVERS:-rrxe rxe}; do
	case $drv in
	rrxe) rdma_link rdma_rrxe rrxe rrxe0; DEV=rrxe0; MOD=rdma_rrxe ;;
	rxe) rdma_link rdma_rxe rxe rxe0; DEV=rxe0; MOD=rdma_rxe ;;
	esac
	GID=$(rrxe_gid_index "$DEV") || die "no RoCE v2 GID on $DEV"
	if part qp; then
		# Each guest on its own device; guest b reports.
		timeout 600 qp_cost -d "$DEV" -g "$GID" -n 1000 -c 200 >/tmp/qp.out 2>&1 ||
			{ cat /tmp/qp.out; log "qp_cost failed on $DEV"; }
		[ "$RRXE_NAME" = b ] && awk -v d="$drv" '$1 == "BENCH-QP" && $2 != "qps" { print "BENCH", d, $2, $3, $4 }' /tmp/qp.out
	fi
	if part smp; then
		for q in 1 8; do
			spread_run ib_write_bw_q$q ib_write_bw -s $SIZE -D "$DUR" -q $q
			[ "$RRXE_NAME" = b ] && echo "BENCH $drv smp2:ib_write_bw_q$q $(result x 4) MB/s"
		done
	fi
	if part scale; then
		# The same $SCALE_MSGS messages of 64 KiB over 1, 8 and 64 QPs (iterations, not -D:
		# with many QPs, perftest's sampling window under TCG can count no completion at
		# all although every message moved).
		for q in 1 8 64; do
			run ib_write_bw -s $SIZE -n $((SCALE_MSGS / q)) -q $q
			[ "$RRXE_NAME" = b ] && echo "BENCH $drv ib_write_bw_q$q $(result x 4) MB/s"
		done
	fi
	if part sweep; then
		for t in ib_write_bw ib_read_bw ib_send_bw; do
			for s in $SWEEP_BW; do
				run $t -s "$s" -D "$SDUR"
				[ "$RRXE_NAME" = b ] && echo "BENCH $drv sweep:$t:$s $(result x 4) MB/s"
			done
		done
		for t in ib_write_lat ib_send_lat; do
			for s in $SWEEP_LAT; do
				run $t -s "$s" -D "$SDUR"
				[ "$RRXE_NAME" = b ] && echo "BENCH $drv sweep:$t:$s $(result x 3) usec"
			done
		done
	fi
	if ! part main; then
		rdma link del "$DEV" || die "rdma link del $DEV"
		rmmod "$MOD" || die "rmmod $MOD"
		continue
	fi
	for t in ib_write_bw ib_read_bw ib_send_bw; do
		measured $t -s $SIZE -D "$DUR"
		[ "$RRXE_NAME" = b ] && echo "BENCH $drv $t $(result x 4) MB/s"
	done
	run ib_atomic_bw -D "$DUR"
	[ "$RRXE_NAME" = b ] && echo "BENCH $drv ib_atomic_bw $(result x 5) Mpps"
	run ib_write_lat -D "$DUR"
	[ "$RRXE_NAME" = b ] && echo "BENCH $drv ib_write_lat $(result x 3) usec"
	# ibv_rc_pingpong (SEND/RECV round trips): latency at 64 B, throughput at 1 MiB.
	pp 64 200 && echo "BENCH $drv rc_pingpong_64B $(awk '/iters in/ {print $(NF-1)}' /tmp/bench.out) usec/iter"
	pp 1048576 10 && echo "BENCH $drv rc_pingpong_1MiB $(awk '/bytes in/ {print $(NF-1)}' /tmp/bench.out) Mbit/s"
	pp -u 64 200 && echo "BENCH $drv ud_pingpong_64B $(awk '/iters in/ {print $(NF-1)}' /tmp/bench.out) usec/iter"
	[ "$RRXE_NAME" = b ] && { echo "== $drv: last output"; cat /tmp/bench.out; }
	# NVMe over RDMA (nvme-rdma on guest b, nvmet-rdma over a null_blk on guest a):
	# sequential 128 KiB direct I/O, NVME_MB (default 32) MiB written, then read.
	mb=${NVME_MB:-32}
	# A new nvmet port, and new TCP ports to synchronise on, for each round (a port just
	# closed may not be bound again at once).
	NVPORT=$((${NVPORT:-0} + 1))
	if [ "$RRXE_NAME" = a ]; then
		nvmet_export bench $NVPORT || die "nvmet export"
		tell_peer $((4400 + 2 * NVPORT)) ready || die "cannot reach guest b"
		hear $((4401 + 2 * NVPORT)) 900 >/dev/null
	else
		# (Anything but "ready" is logged and waited past, for 300 s in all.)
		t_end=$((SECONDS + 300))
		while m=$(hear $((4400 + 2 * NVPORT)) $((t_end - SECONDS > 1 ? t_end - SECONDS : 1))); [ "$m" != ready ]; do
			log "NVMe sync: heard '$m'"
			[ $SECONDS -lt $t_end ] || die "NVMe target not ready"
		done
		nvme_connect bench $NVPORT || die "nvme connect"
		dd if=/dev/urandom of=/tmp/nv bs=1M count="$mb" 2>/dev/null
		t0=$EPOCHREALTIME
		dd if=/tmp/nv of=/dev/nvme0n1 bs=128k oflag=direct 2>/dev/null || die "nvme write"
		t1=$EPOCHREALTIME
		dd if=/dev/nvme0n1 of=/dev/null bs=128k count=$((mb * 8)) iflag=direct 2>/dev/null || die "nvme read"
		t2=$EPOCHREALTIME
		echo "BENCH $drv nvme_write_128k $(awk -v m="$mb" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", m * 1.048576 / (b - a) }') MB/s"
		echo "BENCH $drv nvme_read_128k $(awk -v m="$mb" -v a="$t1" -v b="$t2" 'BEGIN { printf "%.2f", m * 1.048576 / (b - a) }') MB/s"
		nvme_disconnect
		sleep 1
		rmmod nvme-rdma || die "rmmod nvme-rdma"
		tell_peer $((4401 + 2 * NVPORT)) done || die "cannot reach guest a"
	fi
	rdma link del "$DEV" || die "rdma link del $DEV"
	rmmod "$MOD" || die "rmmod $MOD"
done

if [ "$RRXE_NAME" = a ]; then
	timeout 60 iperf3 -s -1 >/dev/null 2>&1
else
	# Guest a starts its server once it has unloaded the last driver (tens of seconds, and
	# longer than guest b's own parts when only the qp part runs). iperf3 -J can exit 0 with
	# "unable to connect" in its "error" field: that is a try to repeat, not a result.
	retry 600 0.2 sh -c "timeout 30 iperf3 -c $RRXE_PEER -t 5 -J >/tmp/iperf.json 2>/dev/null &&
		! grep -q '\"error\"' /tmp/iperf.json" || die "iperf3"
	bps=$(grep -o '"bits_per_second":[[:space:]]*[0-9.e+]*' /tmp/iperf.json | tail -1 | awk -F: '{print $2}')
	[ -n "$bps" ] || { cat /tmp/iperf.json; die "iperf3: no result"; }
	echo "BENCH tcp iperf3 $(awk -v b="$bps" 'BEGIN { printf "%.2f", b / 8 / 1e6 }') MB/s"
fi
dmesg_check || die "kernel log"
