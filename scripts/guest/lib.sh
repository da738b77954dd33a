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
