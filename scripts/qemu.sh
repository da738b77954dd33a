#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boots one or two QEMU (TCG) guests on build/bzImage + build/initramfs.cpio and runs a
# command script in each (as /run.sh, see scripts/guest/init).
#
#   qemu.sh [options] --out DIR SCRIPT_A [SCRIPT_B]
#   qemu.sh --interactive [options]              one guest, shell on this terminal
#                                                (Ctrl-A X quits QEMU)
# Options:
#   --out DIR        results: <g>.console (serial console), <g>.dmesg (full dmesg at the
#                    end of the run; scripts/ktap.sh extracts KUnit results from either),
#                    <g>.qemu.log (QEMU's stderr)
#   --timeout SECS   kill the guests after SECS (default 300)
#   --pcap FILE      capture the wire (guest a's netdev)
#   --mem MB         guest memory (default 1024)
#   --smp N          virtual CPUs per guest (default 1), one per socket: without ACPI the
#                    guest kernel finds CPUs in SeaBIOS's MP table, which lists one per socket
#   --append ARGS    extra kernel command line arguments
#   --file FILE      add FILE to /usr/local/bin of every guest (repeatable)
#   --cpio FILE      append the cpio archive FILE to every guest's initramfs (repeatable;
#                    e.g. build/pyverbs.cpio from scripts/pyverbs-cpio.sh)
#   --quiet          do not echo the consoles to stdout
# Environment: RRXE_KERNEL (default build/bzImage), EXTRA_FILES (see initramfs.sh),
#   RRXE_TSC_KHZ (guest TSC frequency, default: the host's; 0: none, time from jiffies),
#   RRXE_WIRE (udp or tcp: see below).
#
# Guest a is 192.0.2.1/24; with SCRIPT_B, guest b is 192.0.2.2/24 on the same wire: each
# QEMU sends the other its Ethernet frames as UDP datagrams on 127.0.0.1 (RRXE_WIRE=udp, the
# default), or both share one TCP stream (RRXE_WIRE=tcp, which holds small frames back
# ~40 ms behind Nagle and delayed ACKs). The scripts synchronise themselves (see
# scripts/guest/lib.sh).
# Prints one result line per guest; exits 0 only if every script exited 0.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

WIRE=${RRXE_WIRE:-udp}
case "$WIRE" in udp | tcp) ;; *) rrxe_die "RRXE_WIRE is udp or tcp, not '$WIRE'" ;; esac
TIMEOUT=300 PCAP= MEM=1024 SMP=1 APPEND= INTERACTIVE= QUIET= OUT= FILES=() CPIOS=()
while [ $# -gt 0 ]; do
	case "$1" in
	--timeout) TIMEOUT=$2; shift 2 ;;
	--pcap) PCAP=$(realpath -m "$2"); shift 2 ;;
	--mem) MEM=$2; shift 2 ;;
	--smp) SMP=$2; shift 2 ;;
	--append) APPEND=$2; shift 2 ;;
	--file) FILES+=("$(realpath "$2")"); shift 2 ;;
	--cpio) CPIOS+=("$(realpath "$2")"); shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--interactive) INTERACTIVE=1; shift ;;
	--quiet) QUIET=1; shift ;;
	-h | --help) sed -n '3,/^set/{/^set/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	-*) rrxe_die "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
done
if [ -n "$INTERACTIVE" ]; then
	[ $# = 0 ] || rrxe_die "--interactive takes no script"
	[ -n "$OUT" ] || { OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT; }
else
	[ $# = 1 ] || [ $# = 2 ] || rrxe_die "usage: qemu.sh [options] --out DIR SCRIPT_A [SCRIPT_B]"
	[ -n "$OUT" ] || rrxe_die "--out DIR is required"
fi
KERNEL=${RRXE_KERNEL:-$BUILD/bzImage}
[ -e "$KERNEL" ] || rrxe_die "no $KERNEL: build the kernel first (scripts/kernel.sh)"
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
NAMES=(a) IPS=(192.0.2.1) SCRIPTS=("${1:-}")
[ $# -lt 2 ] || { NAMES+=(b); IPS+=(192.0.2.2); SCRIPTS+=("$2"); }

# mk_initrd NAME [SCRIPT]: the shared initramfs + a small archive with /run.sh and --file's.
mk_initrd() {
	local stage f
	stage=$(mktemp -d)
	mkdir -p "$stage/usr/local/bin"
	[ -z "${2:-}" ] || install -m 755 "$2" "$stage/run.sh"
	for f in "${FILES[@]}"; do install -m 755 "$f" "$stage/usr/local/bin/"; done
	cat "$BUILD/initramfs.cpio" "${CPIOS[@]}" >"$OUT/$1.initrd"
	(cd "$stage" && find . | cpio -o -H newc --owner=0:0 --quiet) >>"$OUT/$1.initrd"
	rm -rf "$stage"
}

# Concurrent runs may want different initramfs contents (EXTRA_FILES): build and copy
# under a lock.
exec 9>"$BUILD/.initramfs.lock"
flock 9
"$REPO/scripts/initramfs.sh"
for i in "${!NAMES[@]}"; do mk_initrd "${NAMES[$i]}" "${SCRIPTS[$i]}"; done
exec 9>&-

# The guest kernel has no reference clock (no ACPI, so no HPET/PM timer) and would keep
# time in jiffies, which lag under TCG. Its TSC is the host's: pass the host frequency.
tsc_khz() {
	local mhz
	[ -z "${RRXE_TSC_KHZ:-}" ] || { echo "$RRXE_TSC_KHZ"; return; }
	grep -qw constant_tsc /proc/cpuinfo || { echo 0; return; }
	mhz=$(dmesg 2>/dev/null | sed -n 's/.*tsc: Detected \([0-9.]*\) MHz.*/\1/p
		s/.*tsc: Refined TSC clocksource calibration: \([0-9.]*\) MHz.*/\1/p' | tail -1)
	[ -n "$mhz" ] || mhz=$(awk '/^cpu MHz/ {print $4; exit}' /proc/cpuinfo)
	awk -v m="${mhz:-0}" 'BEGIN {printf "%d\n", m * 1000}'
}
TSC=$(tsc_khz)
[ "$TSC" = 0 ] || APPEND="tsc_early_khz=$TSC tsc=reliable $APPEND"
# The KASAN kernel boots with 4-level paging. -cpu max offers LA57, and 7.3's identify_cpu()
# clears the boot CPU's feature words (LA57 with them) before reading them again: an interrupt
# in that window makes KASAN compute its shadow for 47-bit addresses while the direct map is
# 5-level ("BUG: KASAN: wild-memory-access in do_raw_spin_lock" from handle_edge_irq, at
# boot, in guests with or without rrxe).
[ "$VARIANT" = kasan ] && APPEND="no5lvl $APPEND"
# Guests of a slower kernel stretch their own timeouts as the host stretches theirs
# (CHECK_TIMEOUT_SCALE, scripts/check.sh): scripts/guest/init exports it as RRXE_TSCALE.
[ "${CHECK_TIMEOUT_SCALE:-1}" = 1 ] || APPEND="rrxe.tscale=$CHECK_TIMEOUT_SCALE $APPEND"

# qemu_args NAME IP PEER NETDEV: the command line of one guest.
qemu_args() {
	local mac=52:54:00:00:00:0${2##*.}
	Q=(qemu-system-x86_64 -nodefaults -no-user-config -accel tcg -cpu max -smp "$SMP,sockets=$SMP,cores=1,threads=1" -m "$MEM"
	   -display none -no-reboot -kernel "$KERNEL" -initrd "$OUT/$1.initrd"
	   -append "console=ttyS0 panic=-1 loglevel=7 printk.devkmsg=on rrxe.name=$1 rrxe.ip=$2/24${3:+ rrxe.peer=$3} rrxe.timeout=$((TIMEOUT + 10)) $APPEND"
	   -netdev "$4" -device virtio-net-pci,netdev=n0,mac="$mac")
	[ -z "$PCAP" ] || [ "$1" != a ] || Q+=(-object filter-dump,id=f0,netdev=n0,file="$PCAP")
}

if [ -n "$INTERACTIVE" ]; then
	qemu_args a 192.0.2.1 "" user,id=n0,restrict=on
	"${Q[@]}" -serial mon:stdio
	exit
fi

# --- batch run -------------------------------------------------------------------------
declare -A SPID=() DONE=()
cleanup() {
	local n p
	for n in "${!SPID[@]}"; do
		[ -n "${DONE[$n]:-}" ] && continue
		for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s "$OUT/$n.pid" ] && break; sleep 0.1; done
		p=$(cat "$OUT/$n.pid" 2>/dev/null) && kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -f "$OUT"/*.initrd
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# run_guest NAME: QEMU with the console piped to <name>.console (and stdout); background.
run_guest() {
	local n=$1
	rm -f "$OUT/$n".{pid,console,dmesg,timeout}
	(
		set +o pipefail
		"${Q[@]}" -pidfile "$OUT/$n.pid" -serial stdio -serial "file:$OUT/$n.dmesg" \
			</dev/null 2>"$OUT/$n.qemu.log" |
			# Unbuffered: a guest that hangs or is killed leaves its whole console.
			if [ -n "$QUIET" ]; then sed -u 's/\r$//' >"$OUT/$n.console"
			else sed -u 's/\r$//' | tee "$OUT/$n.console" | sed -u "s/^/[$n] /"; fi
	) &
	SPID[$n]=$!
}

# free_port tcp|udp [EXCEPT]: a port nothing on this host listens on.
free_port() {
	local p=
	while [ -z "$p" ] || [ "$p" = "${2:-}" ] || [ -n "$(ss -Hl"${1:0:1}"n "sport = :$p")" ]; do
		p=$((20000 + RANDOM % 30000))
	done
	echo "$p"
}
port= ports=()
if [ ${#NAMES[@]} = 2 ]; then
	if [ "$WIRE" = udp ]; then
		ports[0]=$(free_port udp)
		ports[1]=$(free_port udp "${ports[0]}")
		port=${ports[0]}
	else
		port=$(free_port tcp)
	fi
fi
t0=$SECONDS t0r=$EPOCHREALTIME
for i in "${!NAMES[@]}"; do
	n=${NAMES[$i]} peer=
	[ -z "$port" ] || peer=${IPS[1 - i]}
	if [ -z "$port" ]; then net=user,id=n0,restrict=on
	elif [ "$WIRE" = udp ]; then
		# Each QEMU sends its frames as datagrams to the other's port: no stream between
		# them, so no Nagle/delayed-ACK stalls, and a frame can be lost like on a wire.
		net=socket,id=n0,udp=127.0.0.1:${ports[1 - i]},localaddr=127.0.0.1:${ports[i]}
	elif [ "$n" = a ]; then net=socket,id=n0,listen=127.0.0.1:$port
	else
		# guest b connects: wait until guest a's QEMU listens
		for _ in $(seq 100); do [ -n "$(ss -Hltn "sport = :$port")" ] && break; sleep 0.05; done
		net=socket,id=n0,connect=127.0.0.1:$port
	fi
	qemu_args "$n" "${IPS[$i]}" "$peer" "$net"
	run_guest "$n"
done

declare -A T=()
while [ ${#DONE[@]} -lt ${#NAMES[@]} ]; do
	for n in "${NAMES[@]}"; do
		[ -z "${DONE[$n]:-}" ] && ! kill -0 "${SPID[$n]}" 2>/dev/null && { DONE[$n]=1; T[$n]=$EPOCHREALTIME; }
	done
	if [ $((SECONDS - t0)) -ge "$TIMEOUT" ]; then
		for n in "${NAMES[@]}"; do [ -n "${DONE[$n]:-}" ] || touch "$OUT/$n.timeout"; done
		cleanup
		for n in "${NAMES[@]}"; do [ -n "${T[$n]:-}" ] || T[$n]=$EPOCHREALTIME; DONE[$n]=1; done
	fi
	sleep 0.1
done
wait

status=0
for n in "${NAMES[@]}"; do
	c=$OUT/$n.console rc=$(grep -ao 'RRXE-EXIT [0-9]*' "$OUT/$n.console" 2>/dev/null | tail -1 | cut -d' ' -f2) || true
	if [ -e "$OUT/$n.timeout" ]; then res=TIMEOUT
	elif [ "$rc" = 0 ]; then res=PASS
	elif [ -n "$rc" ]; then res="FAIL (exit $rc)"
	elif grep -aq 'Kernel panic' "$c"; then res=PANIC
	else res="NO-EXIT $(tail -1 "$OUT/$n.qemu.log" 2>/dev/null)"
	fi
	grep -aqE 'WARNING:|BUG:|Oops|Call Trace' "$c" 2>/dev/null && res+=" [kernel warnings in console]"
	[ "$rc" = 0 ] && [ ! -e "$OUT/$n.timeout" ] || status=1
	printf 'guest %s: %s in %.1f s (%s)\n' "$n" "$res" "$(echo "${T[$n]} - $t0r" | bc)" "$c"
done
exit $status
