# SPDX-License-Identifier: GPL-2.0
#
# Helpers for rrxe guest scripts (run by /bin/sh, which is bash in the guest). Installed as
# /usr/local/lib/rrxe/lib.sh; use with `. /usr/local/lib/rrxe/lib.sh`. The environment from
# /init is available: $RRXE_NAME, $RRXE_IP, $RRXE_PEER.

log() { echo ">> $*"; }
die() { echo ">> FAIL: $*"; exit 1; }

# rdma_link MODULE TYPE NAME [NETDEV]: load the driver and create a soft-RoCE device.
rdma_link() {
	modprobe "$1" || die "modprobe $1"
	rdma link add "$3" type "$2" netdev "${4:-eth0}" || die "rdma link add $3 type $2"
}

# rrxe_gid_index DEV [IPV4] [PORT]: prints the index of the RoCE v2 GID that holds the
# IPv4-mapped address (default $RRXE_IP). Waits up to 5 s for the GID table to fill.
rrxe_gid_index() {
	local dev=$1 ip=${2:-$RRXE_IP} port=${3:-1} want d f n try=0
	want=$(echo "$ip" | awk -F. '{printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", $1, $2, $3, $4}')
	d=/sys/class/infiniband/$dev/ports/$port
	while [ $try -lt 50 ]; do
		for f in $(grep -lx "$want" "$d"/gids/* 2>/dev/null); do
			n=${f##*/}
			[ "$(cat "$d/gid_attrs/types/$n" 2>/dev/null)" = "RoCE v2" ] || continue
			echo "$n"
			return 0
		done
		try=$((try + 1))
		sleep 0.1
	done
	echo "no RoCE v2 GID for $ip on $dev port $port" >&2
	return 1
}

# wait_ipv6_dad [DEV] [SECS]: waits until DEV (default eth0) has an IPv6 link-local address
# and none of its addresses is still tentative (duplicate address detection done; default
# 30 s). Until then the kernel will not use the address as a source, and a RoCE route from
# it (modify QP to RTR) fails, with rdma_rxe as with rrxe.
wait_ipv6_dad() {
	local dev=${1:-eth0} secs=${2:-30} i=0
	while [ $i -lt $((secs * 10)) ]; do
		if ip -6 addr show dev "$dev" scope link | grep -q 'inet6 fe80' &&
			[ -z "$(ip -6 addr show dev "$dev" tentative)" ]; then
			return 0
		fi
		i=$((i + 1))
		sleep 0.1
	done
	ip -6 addr show dev "$dev" >&2
	echo "IPv6 duplicate address detection on $dev not done after $secs s" >&2
	return 1
}

# retry TRIES DELAY CMD...: runs CMD until it succeeds, at most TRIES times.
retry() {
	local tries=$1 delay=$2 i=1
	shift 2
	until "$@"; do
		[ $i -ge "$tries" ] && return 1
		i=$((i + 1))
		sleep "$delay"
	done
}

# wait_for_port HOST PORT [SECS]: waits until a TCP connect succeeds (default 30 s).
# The probe is a real connection: do not use it on one-shot servers (ibv_*_pingpong,
# perftest); retry the client instead.
wait_for_port() {
	local host=$1 port=$2 secs=${3:-30} i=0
	while [ $i -lt $((secs * 5)) ]; do
		nc -w 1 "$host" "$port" </dev/null >/dev/null 2>&1 && return 0
		i=$((i + 1))
		sleep 0.2
	done
	echo "timeout waiting for $host:$port" >&2
	return 1
}

# nsrun NS CMD...: runs CMD in namespace NS ("" for the initial one).
nsrun() {
	local ns=$1
	shift
	if [ -n "$ns" ]; then ip netns exec "$ns" "$@"; else "$@"; fi
}
# has_dev NS DEV: whether DEV is an RDMA device of namespace NS.
has_dev() { nsrun "$1" rdma dev show 2>/dev/null | grep -q "^[0-9]*: $2:"; }
# gid NS DEV ADDR: the GID index of ADDR on DEV, read in NS (sysfs is per namespace).
gid() { nsrun "$1" bash -c ". /usr/local/lib/rrxe/lib.sh; rrxe_gid_index $2 $3"; }
# wait_listen_ns NS PORT PID: wait_listen in namespace NS (60 s), for a server started there.
wait_listen_ns() { nsrun "$1" bash -c ". /usr/local/lib/rrxe/lib.sh; wait_listen $2 60 $3"; }
# xfer_ns NAME SNS SDEV SGIDADDR CNS CDEV CGIDADDR TCPADDR XFER_OPTS...: one byte-exact
# xfer test within this guest: the server on SDEV in namespace SNS ("" for the initial one;
# GID of SGIDADDR), the client on CDEV in CNS (GID of CGIDADDR), connecting to TCPADDR; TCP
# ports from XP_PORT up. Judged by the caller's ok/bad.
xfer_ns() {
	local name=$1 sns=$2 sdev=$3 sa=$4 cns=$5 cdev=$6 ca=$7 tcp=$8 sg cg srv src rc
	shift 8
	XP_PORT=$((XP_PORT + 1))
	sg=$(gid "$sns" "$sdev" "$sa") && cg=$(gid "$cns" "$cdev" "$ca") ||
		{ bad "$name" "no GID ($sdev in ${sns:-init}: '$sg', $cdev in ${cns:-init}: '$cg')"; return; }
	nsrun "$sns" timeout 120 xfer server -d "$sdev" -g "$sg" -p $XP_PORT "$@" >/tmp/xns-srv 2>&1 &
	srv=$!
	connect_to() { nsrun "$cns" timeout 120 xfer client -d "$cdev" -g "$cg" -p $XP_PORT "$@" "$tcp" >/tmp/xns-cli 2>&1; }
	retry 50 0.2 connect_to "$@"
	rc=$?
	wait $srv
	src=$?
	sed 's/^/   server: /' /tmp/xns-srv
	sed 's/^/   client: /' /tmp/xns-cli
	if [ $rc = 0 ] && [ $src = 0 ]; then ok "$name"; else bad "$name" "client $rc, server $src"; fi
}

# veth_to_ns NS DEV ADDR PEER PEERADDR: a veth pair, DEV here with ADDR/24 and PEER in the
# existing namespace NS with PEERADDR/24, both up (and NS's loopback).
veth_to_ns() {
	ip link add "$2" type veth peer name "$4" netns "$1" || die "no veth $2/$4"
	ip addr add "$3/24" dev "$2"
	ip link set "$2" up
	ip -n "$1" link set lo up
	ip -n "$1" addr add "$5/24" dev "$4"
	ip -n "$1" link set "$4" up
}

# rping_client ADDR: rping's verifying client (-V, 20 rounds of 1 KiB) against ADDR, tried
# again while the server does not listen yet (rdma_connect refused: REJ, consumer defined,
# or unreachable), for up to 20 s. Output in /tmp/rping; returns rping's exit status.
rping_client() {
	local i=0 rc
	while :; do
		timeout 120 rping -c -a "$1" -V -C 20 -S 1024 >/tmp/rping 2>&1
		rc=$?
		grep -q "rdma_connect\|connect error\|wait for CONNECTED\|cma event RDMA_CM_EVENT_REJECTED\|RDMA_CM_EVENT_UNREACHABLE" /tmp/rping || break
		i=$((i + 1))
		[ $i -lt 40 ] || break
		sleep 0.5
	done
	return $rc
}

# wait_listen PORT [SECS] [PID]: waits until a TCP socket of this guest listens on PORT
# (default 30 s), without connecting to it: for one-shot servers (ibv_*_pingpong, perftest)
# started in the background in the same guest, before their client starts. With PID (the
# server's), gives up as soon as that process has ended.
wait_listen() {
	local i=0 n=$((${2:-30} * 10))
	while [ $i -lt $n ]; do
		ss -Hltn "sport = :$1" | grep -q . && return 0
		if [ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null; then
			echo "the server on port $1 ended before it listened" >&2
			return 1
		fi
		i=$((i + 1))
		sleep 0.1
	done
	echo "nothing listens on port $1 after ${2:-30} s" >&2
	return 1
}

# kmemleak_clear: forget the objects allocated so far (boot noise); call before a test.
kmemleak_clear() { echo clear >/sys/kernel/debug/kmemleak; }

# kmemleak_check [WAIT]: fails if kmemleak reports a leak. Objects younger than 5 s are
# never reported, hence the wait (default 5.5 s) before scanning.
kmemleak_check() {
	local k=/sys/kernel/debug/kmemleak
	[ -e $k ] || die "kmemleak not available"
	sleep "${1:-5.5}"
	echo scan >$k
	echo scan >$k
	if grep -q . $k; then
		cat $k
		echo "kmemleak: leaks found" >&2
		return 1
	fi
}

# dmesg_check: fails (printing the offending lines) if the kernel log shows a warning,
# a bug, an oops, a refcount or KASAN report, a kmemleak report or a call trace.
dmesg_check() {
	local pat='WARNING:|BUG:|Oops|general protection|KASAN|refcount_t|suspected memory leak|Call Trace'
	if dmesg | grep -E "$pat"; then
		echo "dmesg: kernel problems found" >&2
		return 1
	fi
}

# rdma_use DRIVER: loads DRIVER (rrxe: rdma_rrxe, rxe: the C rdma_rxe), creates its device
# on eth0 (rrxe0 or rxe0) and sets DEV to its name and GID to its RoCE v2 IPv4 GID index.
rdma_use() {
	case "$1" in
	rrxe) rdma_link rdma_rrxe rrxe rrxe0; DEV=rrxe0 ;;
	rxe) rdma_link rdma_rxe rxe rxe0; DEV=rxe0 ;;
	*) die "unknown driver '$1' (rrxe or rxe)" ;;
	esac
	GID=$(rrxe_gid_index "$DEV") || die "no RoCE v2 GID on $DEV"
}

# dump_counters [WHY]: prints every non-zero port counter of $DEV (hw_counters, rrxe's and
# rdma_rxe's alike), one `RRXE-COUNTERS <guest> <dev> <name>=<value>` line each: called on
# every traffic failure, so that a stall or an error explains itself from both sides.
dump_counters() {
	local f v d=/sys/class/infiniband/${DEV:-}/ports/1/hw_counters
	[ -d "$d" ] || return 0
	echo "RRXE-COUNTERS $RRXE_NAME $DEV (${1:-after a failure})"
	for f in "$d"/*; do
		v=$(cat "$f" 2>/dev/null) || continue
		[ "$v" = 0 ] || echo "RRXE-COUNTERS $RRXE_NAME $DEV ${f##*/}=$v"
	done
}

# connect_retry TRIES OUT CMD...: runs a one-shot client (ibv_*_pingpong, rc_rnr) with its
# output in OUT until it got through to its server (no "Couldn't connect"), at most TRIES
# times 0.2 s apart. Returns the client's exit status of the last try.
connect_retry() {
	local tries=$1 out=$2 i=1 rc
	shift 2
	while :; do
		"$@" >"$out" 2>&1
		rc=$?
		grep -q "Couldn't connect" "$out" || return $rc
		[ $i -ge "$tries" ] && return $rc
		i=$((i + 1))
		sleep 0.2
	done
}

# tell_peer PORT WORDS...: sends WORDS to the peer's `hear PORT` (retried for 30 s).
tell_peer() {
	local port=$1
	shift
	retry 150 0.2 sh -c "echo '$*' | nc $RRXE_PEER $port"
}

# hear PORT [SECS]: prints what the peer sends with tell_peer PORT (waits up to 120 s).
hear() { timeout "${2:-120}" nc -l -p "$1"; }

# absorb_client PORT SERVER_OUT: after a one-shot server failed before any client got
# through (no "remote address" in SERVER_OUT), accept and drop the client that keeps
# retrying on PORT, so that it fails (and reports) now rather than after its retries.
absorb_client() {
	grep -q "remote address" "$2" || timeout 3 nc -l -p "$1" </dev/null >/dev/null 2>&1
}

# rc_pingpong NAME SIZE ITERS [OPTS...]: one ibv_rc_pingpong exchange of SIZE-byte SENDs
# on $DEV/$GID with data checking (-c) and path MTU 1024, the server on guest a and the
# client on guest b (both call it, in the same order). TCP port $PP_PORT (incremented for
# the next call; $PP_PORT+100 carries the client's result to the server); each side is
# killed after $PP_TIMEOUT s (default 45). Guest a judges: both sides exit 0 and print
# their "bytes in ... seconds" line, and the server found no "invalid data" (rdma-core's
# -c only prints it, checking the first byte of each page of what the client sent). Prints
# `RRXE-TEST NAME ok|FAIL` on guest a and returns 1 on failure; rdma-core's output is
# shown, and on guest a /tmp/server.out keeps it. Once guest b failed to report a result
# (PEER_GONE), later calls on guest a FAIL at once instead of waiting for it.
rc_pingpong() {
	local name=$1 size=$2 iters=$3 port=${PP_PORT:-18600} tmo=${PP_TIMEOUT:-45} rc crc= cbytes= l
	shift 3
	PP_PORT=$((port + 1))
	# Line-buffered (stdbuf -oL): a tool killed by `timeout` keeps what it printed.
	local cmd=(stdbuf -oL ibv_rc_pingpong -d "$DEV" -g "$GID" -m 1024 -c -p "$port" -s "$size" -n "$iters" "$@")
	if [ "$RRXE_NAME" != a ]; then
		# The server for this run starts once the previous one exited: retry the connect
		# (the first run also waits for guest a to boot and set up its device).
		log "client: ${cmd[*]} $RRXE_PEER"
		connect_retry 150 /tmp/client.out timeout "$tmo" "${cmd[@]}" "$RRXE_PEER"
		rc=$?
		sed 's/^/   client: /' /tmp/client.out
		[ $rc = 0 ] || dump_counters "$name: client exit status $rc"
		tell_peer $((port + 100)) "$rc" "$(grep -c 'bytes in .* seconds' /tmp/client.out)" ||
			die "cannot report to guest a"
		return 0
	fi
	if [ -n "${PEER_GONE:-}" ]; then
		echo "RRXE-TEST $name FAIL: not run, guest b stopped answering"
		return 1
	fi
	hear $((port + 100)) $((2 * tmo + 15)) >/tmp/client.result &
	l=$!
	log "server: ${cmd[*]}"
	timeout "$tmo" "${cmd[@]}" >/tmp/server.out 2>&1
	rc=$?
	[ $rc = 0 ] || absorb_client "$port" /tmp/server.out
	sed 's/^/   server: /' /tmp/server.out
	wait "$l"
	read -r crc cbytes </tmp/client.result
	[ -n "$crc" ] || PEER_GONE=1
	set --
	if [ "$rc" != 0 ]; then set -- "server exit status $rc$([ "$rc" = 124 ] && echo ' (timeout)'): $(tail -1 /tmp/server.out)"
	elif ! grep -q "bytes in .* seconds" /tmp/server.out; then set -- "server printed no bytes/seconds line"
	elif grep -q "invalid data" /tmp/server.out; then set -- "server: $(grep -m1 'invalid data' /tmp/server.out)"
	elif [ -z "$crc" ]; then set -- "no result from the client"
	elif [ "$crc" != 0 ]; then set -- "client exit status $crc$([ "$crc" = 124 ] && echo ' (timeout)')"
	elif [ "$cbytes" != 1 ]; then set -- "client printed no bytes/seconds line"
	fi
	if [ $# = 0 ]; then
		echo "RRXE-TEST $name ok"
	else
		echo "RRXE-TEST $name FAIL: $1"
		dump_counters "$name: $1"
		return 1
	fi
}

# pair_run NAME PORT TMO SERVER_CMD... -- CLIENT_CMD...: runs SERVER_CMD on guest a and
# CLIENT_CMD $RRXE_PEER on guest b (both call it, in the same order), each killed after
# TMO s; the client is retried until it got through to its server (connect_retry), and
# reports its exit status on TCP port PORT+100. Guest a prints `RRXE-TEST NAME ok` if both
# exited 0, else FAIL, and returns 1; both show the commands' output (on guest a
# /tmp/server.out keeps it). PEER_GONE as for rc_pingpong. With PAIR_EXPECT_FAIL=REGEX the
# run must fail instead: both sides exit 1 and the server's output matches REGEX.
pair_run() {
	local name=$1 port=$2 tmo=$3 scmd=() rc crc= l
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do scmd+=("$1"); shift; done
	shift
	if [ "$RRXE_NAME" != a ]; then
		log "client: $* $RRXE_PEER"
		connect_retry 150 /tmp/client.out timeout "$tmo" stdbuf -oL "$@" "$RRXE_PEER"
		rc=$?
		sed 's/^/   /' /tmp/client.out
		[ $rc = 0 ] || [ -n "${PAIR_EXPECT_FAIL:-}" ] || dump_counters "$name: client exit status $rc"
		tell_peer $((port + 100)) "$rc" || die "cannot report to guest a"
		return 0
	fi
	if [ -n "${PEER_GONE:-}" ]; then
		echo "RRXE-TEST $name FAIL: not run, guest b stopped answering"
		return 1
	fi
	hear $((port + 100)) $((2 * tmo + 15)) >/tmp/client.result &
	l=$!
	log "server: ${scmd[*]}"
	timeout "$tmo" stdbuf -oL "${scmd[@]}" >/tmp/server.out 2>&1
	rc=$?
	[ $rc = 0 ] || absorb_client "$port" /tmp/server.out
	sed 's/^/   /' /tmp/server.out
	wait "$l"
	read -r crc </tmp/client.result
	[ -n "$crc" ] || PEER_GONE=1
	set --
	if [ -n "${PAIR_EXPECT_FAIL:-}" ]; then
		# A negative test: both sides must fail (exit 1: no timeout, no crash) and the
		# server must say why, matching PAIR_EXPECT_FAIL.
		if [ "$rc" != 1 ]; then set -- "server exit status $rc, expected 1"
		elif [ "$crc" != 1 ]; then set -- "client exit status ${crc:-none}, expected 1"
		elif ! grep -q "$PAIR_EXPECT_FAIL" /tmp/server.out; then set -- "server did not report '$PAIR_EXPECT_FAIL'"
		fi
	elif [ "$rc" != 0 ]; then set -- "server exit status $rc$([ "$rc" = 124 ] && echo ' (timeout)'): $(tail -1 /tmp/server.out)"
	elif [ -z "$crc" ]; then set -- "no result from the client"
	elif [ "$crc" != 0 ]; then set -- "client exit status $crc$([ "$crc" = 124 ] && echo ' (timeout)') (see guest b)"
	elif [ -n "${PAIR_CHECK:-}" ]; then
		# The run's own data check (a function that prints why it failed), part of the
		# same result: one run, one check.
		local why
		why=$("$PAIR_CHECK")
		[ -z "$why" ] || set -- "$why"
	fi
	if [ $# = 0 ]; then
		echo "RRXE-TEST $name ok"
	else
		echo "RRXE-TEST $name FAIL: $1"
		dump_counters "$name: $1"
		return 1
	fi
}

# xfer_pair NAME PORT [XFER_OPTS...]: one byte-exact transfer test (tools/testing/rrxe/xfer.c:
# every byte of every message checked against a pattern of its side, sequence number and
# offset, both directions, both sides' exit status judged), xfer's server on guest a and its
# client on guest b on $DEV/$GID, through pair_run (both guests call it in the same order).
# XFER_TIMEOUT (default 90) bounds each side.
xfer_pair() {
	local name=$1 port=$2
	shift 2
	pair_run "$name" "$port" "${XFER_TIMEOUT:-90}" xfer server -d "$DEV" -g "$GID" -p "$port" "$@" -- \
		xfer client -d "$DEV" -g "$GID" -p "$port" "$@"
}

# nvmet_export NQN [PORT]: exports a memory-backed null_blk (/dev/nullb0) as namespace 1 of
# subsystem NQN (made once, any host may connect) through nvmet-rdma port PORT (default 1)
# on $RRXE_IP, TCP-style service 4419 + PORT. The export is not undone through configfs:
# unlinking a port from its subsystem makes upstream nvmet report a lock inversion
# (nvmet_config_sem, then the RDMA CM's handler_mutex in rdma_destroy_id; the CM's handler
# takes them the other way round), a long-standing upstream report that is not the
# device's. Removing the RDMA device (rdma link del, rmmod) lets the port go instead
# (RDMA_CM_EVENT_DEVICE_REMOVAL destroys its listener, which nvmet-rdma does not rebind):
# export on a new PORT for the next device.
nvmet_export() {
	local nqn=$1 port=${2:-1} cfg=/sys/kernel/config/nvmet
	if [ ! -d "$cfg/subsystems/$nqn" ]; then
		modprobe null_blk nr_devices=1 memory_backed=1 gb=1 bs=4096 || return 1
		# NVMET_RDMA_OPTS: module parameters, e.g. use_srq=1 (shared receive queues).
		modprobe nvmet-rdma ${NVMET_RDMA_OPTS:-} || return 1
		[ -d "$cfg" ] || mount -t configfs none /sys/kernel/config || return 1
		mkdir "$cfg/subsystems/$nqn" &&
			echo 1 >"$cfg/subsystems/$nqn/attr_allow_any_host" &&
			mkdir "$cfg/subsystems/$nqn/namespaces/1" &&
			echo -n /dev/nullb0 >"$cfg/subsystems/$nqn/namespaces/1/device_path" &&
			echo 1 >"$cfg/subsystems/$nqn/namespaces/1/enable" || return 1
	fi
	mkdir "$cfg/ports/$port" &&
		echo rdma >"$cfg/ports/$port/addr_trtype" &&
		echo ipv4 >"$cfg/ports/$port/addr_adrfam" &&
		echo "$RRXE_IP" >"$cfg/ports/$port/addr_traddr" &&
		echo $((4419 + port)) >"$cfg/ports/$port/addr_trsvcid" &&
		ln -s "$cfg/subsystems/$nqn" "$cfg/ports/$port/subsystems/$nqn"
}

# nvme_connect NQN [PORT]: connects nvme-rdma to subsystem NQN on guest a's nvmet_export
# PORT (default 1) on $RRXE_PEER (the connect string written to /dev/nvme-fabrics, retried
# for 30 s) and waits for /dev/nvme0n1.
nvme_connect() {
	local nqn=$1 port=${2:-1} i=0
	modprobe nvme-rdma || return 1
	while [ $i -lt 30 ]; do
		echo "transport=rdma,traddr=$RRXE_PEER,trsvcid=$((4419 + port)),nqn=$nqn" >/dev/nvme-fabrics 2>/tmp/nvme-err &&
			break
		i=$((i + 1))
		sleep 1
	done
	for i in $(seq 100); do
		[ -b /dev/nvme0n1 ] && return 0
		sleep 0.2
	done
	cat /tmp/nvme-err >&2
	return 1
}

# nvme_disconnect: deletes controller nvme0.
nvme_disconnect() { echo 1 >/sys/class/nvme/nvme0/delete_controller; }
