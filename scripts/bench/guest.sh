# SPDX-License-Identifier: GPL-2.0
#
# `make bench` guest script (both guests). For each driver in $BENCH_DRIVERS (default
# "rrxe rxe"), both guests load it, create its device on eth0 and run the same perftest set
# in lockstep (guest a the servers, guest b the clients, which retry until their server
# listens), then unload it. Guest b prints one line per result:
#   BENCH <driver> <test> <value> <unit>
# Then guest b writes and reads an NVMe namespace of guest a over NVMe/RDMA on the same
# driver. Finally iperf3 measures raw TCP between the guests (the wire's ceiling).
. /usr/local/lib/rrxe/lib.sh

DUR=${BENCH_DURATION:-8}
PORT=20000
SIZE=65536

# run TEST EXTRA-ARGS...: one perftest run; guest b prints its output to /tmp/bench.out.
run() {
	local t=$1
	shift
	PORT=$((PORT + 1))
	if [ "$RRXE_NAME" = a ]; then
		timeout $((DUR * 4 + 60)) "$t" -d "$DEV" -x "$GID" -p $PORT -F "$@" >/tmp/bench.out 2>&1
	else
		local i=0
		while :; do
			timeout $((DUR * 4 + 60)) "$t" -d "$DEV" -x "$GID" -p $PORT -F "$@" "$RRXE_PEER" >/tmp/bench.out 2>&1
			grep -q "Couldn't connect\|Unable to init the socket" /tmp/bench.out || break
			i=$((i + 1))
			[ $i -lt 150 ] || break
			sleep 0.2
		done
	fi
}

# pp SIZE ITERS: one ibv_rc_pingpong run (server on guest a); true on guest b.
pp() {
	PORT=$((PORT + 1))
	if [ "$RRXE_NAME" = a ]; then
		timeout 300 ibv_rc_pingpong -d "$DEV" -g "$GID" -s "$1" -n "$2" -p $PORT >/tmp/bench.out 2>&1
		return 1
	fi
	local i=0
	while :; do
		timeout 300 ibv_rc_pingpong -d "$DEV" -g "$GID" -s "$1" -n "$2" -p $PORT "$RRXE_PEER" >/tmp/bench.out 2>&1
		grep -q "Couldn't connect" /tmp/bench.out || break
		i=$((i + 1))
		[ $i -lt 150 ] || break
		sleep 0.2
	done
	return 0
}

# result LINE-PATTERN FIELD: the FIELD-th number of perftest's result line.
result() {
	awk -v f="$2" '$1 ~ /^[0-9]+$/ && NF >= 4 { v = $f } END { print (v == "" ? "nan" : v) }' /tmp/bench.out
}

for drv in ${BENCH_DRIVERS:-rrxe rxe}; do
	case $drv in
	rrxe) rdma_link rdma_rrxe rrxe rrxe0; DEV=rrxe0; MOD=rdma_rrxe ;;
	rxe) rdma_link rdma_rxe rxe rxe0; DEV=rxe0; MOD=rdma_rxe ;;
	esac
	GID=$(rrxe_gid_index "$DEV") || die "no RoCE v2 GID on $DEV"
	for t in ib_write_bw ib_read_bw ib_send_bw; do
		run $t -s $SIZE -D "$DUR"
		[ "$RRXE_NAME" = b ] && echo "BENCH $drv $t $(result x 4) MB/s"
	done
	run ib_atomic_bw -D "$DUR"
	[ "$RRXE_NAME" = b ] && echo "BENCH $drv ib_atomic_bw $(result x 5) Mpps"
	run ib_write_lat -D "$DUR"
	[ "$RRXE_NAME" = b ] && echo "BENCH $drv ib_write_lat $(result x 3) usec"
	# ibv_rc_pingpong (SEND/RECV round trips): latency at 64 B, throughput at 1 MiB.
	pp 64 200 && echo "BENCH $drv rc_pingpong_64B $(awk '/iters in/ {print $(NF-1)}' /tmp/bench.out) usec/iter"
	pp 1048576 10 && echo "BENCH $drv rc_pingpong_1MiB $(awk '/bytes in/ {print $(NF-1)}' /tmp/bench.out) Mbit/s"
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
		[ "$(hear $((4400 + 2 * NVPORT)) 300)" = ready ] || die "NVMe target not ready"
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
	# Guest a starts its server once it has unloaded the last driver (tens of seconds).
	retry 300 0.2 sh -c "timeout 30 iperf3 -c $RRXE_PEER -t 5 -J >/tmp/iperf.json 2>/dev/null" || die "iperf3"
	bps=$(grep -o '"bits_per_second":[[:space:]]*[0-9.e+]*' /tmp/iperf.json | tail -1 | awk -F: '{print $2}')
	[ -n "$bps" ] || { cat /tmp/iperf.json; die "iperf3: no result"; }
	echo "BENCH tcp iperf3 $(awk -v b="$bps" 'BEGIN { printf "%.2f", b / 8 / 1e6 }') MB/s"
fi
dmesg_check || die "kernel log"
