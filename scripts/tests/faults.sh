# SPDX-License-Identifier: GPL-2.0
#
# Guest script (one guest): allocation failures injected into rrxe. The verbs programs
# (verbs_objects, verbs_qp, verbs_mr: PDs, CQs with their mapped rings, QPs in every state,
# MRs) and a loopback ibv_rc_pingpong run many times while the kernel's failslab and
# fail_page_alloc fail a share of the allocations made with rdma_rrxe's code on the stack
# (the stack-trace filter, require-start/end, set to the module's memory): the driver's own
# allocations and those of the kernel::rdma abstractions and ib_core it calls, in the verbs
# and in the data path (softirq included). The programs' own checks fail then, which is
# expected and not judged; what is judged:
#   faults_baseline       every program passes with nothing injected;
#   faults_injected       allocations did fail (some runs exited non-zero);
#   faults_kernel_clean   no warning, BUG, oops, refcount or lockdep report meanwhile;
#   faults_nothing_left   no PD, CQ, QP or MR of theirs remains (every failure unwound);
#   faults_device_works   with injection off, the same device passes verbs_objects and an
#                         RC ping-pong.
# Leaks are judged after the run (the guest's "kernel clean" check: kmemleak after unload).
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
D=/sys/kernel/debug
PROBLEMS='WARNING:|BUG:|Oops|general protection|KASAN|refcount_t|soft lockup|hung_task|detected stall|RCU stall|possible circular|inconsistent lock|sleeping function'

[ -d $D/failslab ] || die "no failslab in debugfs (CONFIG_FAILSLAB, CONFIG_FAULT_INJECTION_DEBUG_FS)"
modprobe rdma_rrxe || die "modprobe"
rdma link add rrxe0 type rrxe netdev eth0 || die "rdma link add"
retry 50 0.2 sh -c "ibv_devinfo -d rrxe0 | grep -q PORT_ACTIVE" || die "rrxe0 port not active"
GID=$(rrxe_gid_index rrxe0) || die "no RoCE v2 GID"

# The module's memory, [start, start + size): an allocation fails only if one of the
# stack's frames lies there.
read -r _ msize _ _ _ mbase <<EOF_MOD
$(grep '^rdma_rrxe ' /proc/modules)
EOF_MOD
[ -n "$mbase" ] && [ "$mbase" != 0x0000000000000000 ] || die "no address for rdma_rrxe in /proc/modules"
# Written in hex: the shell's arithmetic is signed, the kernel reads an unsigned long.
mstart=$mbase mend=$(printf '0x%x' $((mbase + msize)))
log "rdma_rrxe at [$mstart, $mend), $msize bytes"

# inject PERCENT: fail PERCENT% of the allocations made with rrxe on the stack.
inject() {
	local f
	for f in failslab fail_page_alloc; do
		# The filter first: without it, every allocation of the system could fail.
		echo 0 >$D/$f/probability
		echo 32 >$D/$f/stacktrace-depth &&
			echo "$mstart" >$D/$f/require-start &&
			echo "$mend" >$D/$f/require-end &&
			[ "$(cat $D/$f/require-start)" != 0 ] ||
			die "cannot set the stack-trace filter of $f"
		echo N >$D/$f/task-filter
		echo 1 >$D/$f/interval
		echo -1 >$D/$f/times
		echo 0 >$D/$f/verbose
		echo 0 >$D/$f/space
		echo "$1" >$D/$f/probability
	done
	echo N >$D/failslab/ignore-gfp-wait
	echo N >$D/fail_page_alloc/ignore-gfp-wait
	echo 0 >$D/fail_page_alloc/min-order
}
# failing CMD...: runs CMD for 60 s at most; its output is kept out of the report (its own
# checks are not this test's).
failing() { timeout 60 "$@" >/tmp/fault.out 2>&1; }
# shown: the lines of the last run that did not pass, indented (not read as results).
shown() { grep -v ' ok$' /tmp/fault.out | tail -"${1:-2}" | sed 's/^/    | /'; }

# Baseline: every workload passes with nothing injected (so a failure below is the
# injection's doing, not a broken workload).
inject 0
base=ok
for w in "verbs_objects rrxe0 $GID $RRXE_IP" "verbs_qp rrxe0 $GID" "verbs_mr rrxe0"; do
	# shellcheck disable=SC2086 # $w is a command line
	if ! failing $w; then
		base="$w failed with nothing injected"
		shown 5
	fi
done
if [ "$base" = ok ]; then ok faults_baseline; else bad faults_baseline "$base"; fi

# What the kernel logged before the injection must be clean by the host's own rule: the
# log is cleared below (the injected failures' reports carry stacks), so it is judged here.
log_from=$(($(dmesg | wc -l) + 1))
before_clean=1
dmesg | head -n $((log_from - 1)) | grep -E "$PROBLEMS" && before_clean=0
# A run that failed counts as a failure the injection caused; one that timed out (exit 124)
# is a hang, never counted as one: a verbs workload that hangs fails the test.
runs=0 failures=0 hangs=0
for pct in 2 10 30; do
	inject $pct
	for i in 1 2 3; do
		for w in "verbs_objects rrxe0 $GID $RRXE_IP" "verbs_qp rrxe0 $GID" "verbs_mr rrxe0"; do
			# shellcheck disable=SC2086 # $w is a command line
			failing $w
			rc=$?
			runs=$((runs + 1))
			case $rc in
			0) ;;
			124) hangs=$((hangs + 1)); log "$w timed out at $pct% (a hang)"; shown ;;
			*) failures=$((failures + 1)); log "$w at $pct%: exit $rc"; shown ;;
			esac
		done
		# RC over loopback (its data path too: packets lost to a failed allocation are
		# retransmitted, or the QPs end in error).
		port=$((18700 + runs))
		failing ibv_rc_pingpong -d rrxe0 -g "$GID" -p $port -s 65536 -n 20 &
		srv=$!
		# (A server that an injected failure ended before it listened: the client fails.)
		wait_listen $port 10 $srv
		timeout 30 ibv_rc_pingpong -d rrxe0 -g "$GID" -p $port -s 65536 -n 20 127.0.0.1 >/dev/null 2>&1
		wait $srv
		rc=$?
		runs=$((runs + 1))
		# (A server whose client an injected failure stopped waits for it until killed:
		# its timeout is no hang of rrxe's, nor a failure the injection caused.)
		case $rc in 0 | 124) ;; *) failures=$((failures + 1)) ;; esac
	done
done
inject 0
log "faults: $runs runs, $failures ended in an error, $hangs verbs workloads hung"
echo "# faults: $runs runs under allocation failure injection, $failures failed as injected"
if [ $hangs -gt 0 ]; then
	bad faults_injected "$hangs verbs workload runs hung (timed out) under injection"
elif [ $failures -gt 0 ]; then
	ok faults_injected
else
	bad faults_injected "no run failed: nothing was injected?"
fi

if dmesg | tail -n +"$log_from" | grep -E "$PROBLEMS"; then
	bad faults_kernel_clean "kernel problems under allocation failures (above)"
elif [ $before_clean = 0 ]; then
	bad faults_kernel_clean "kernel problems before the injection (above)"
else
	ok faults_kernel_clean
fi
log "$(dmesg | tail -n +"$log_from" | grep -cE 'page allocation failure|vmalloc error') allocation failure reports in the log"
# The reports of injected failures carry stacks ("Call Trace"), which the host's kernel-clean
# check would take for problems: they were judged above, and the log starts over.
dmesg -c >/dev/null

# Every object the failing processes created is gone with them (their contexts closed, each
# verb that failed half-way undid its part). The MAD layer's own objects ([ib_core]) stay.
# (Polled for 10 s: a context is released when the last reference to its file goes.)
leftovers() {
	for r in "pd dev rrxe0" "cq dev rrxe0" "qp link rrxe0/1" "mr dev rrxe0"; do
		# shellcheck disable=SC2086
		rdma resource show $r 2>&1 | grep -v 'comm \[ib_core\]'
	done
}
for _ in $(seq 50); do
	left=$(leftovers)
	[ -z "$left" ] && break
	sleep 0.2
done
if [ -z "$left" ]; then ok faults_nothing_left; else bad faults_nothing_left "$left"; fi

ibv_rc_pingpong -d rrxe0 -g "$GID" -p 18699 -s 65536 -n 20 >/tmp/pps.out 2>&1 &
srv=$!
wait_listen 18699
timeout 30 ibv_rc_pingpong -d rrxe0 -g "$GID" -p 18699 -s 65536 -n 20 127.0.0.1 >/tmp/ppc.out 2>&1
crc=$?
wait $srv
src=$?
if verbs_objects rrxe0 "$GID" "$RRXE_IP" >/tmp/after.out 2>&1 && [ $crc = 0 ] && [ $src = 0 ]; then
	ok faults_device_works
else
	grep -v ' ok$' /tmp/after.out | head -5
	tail -3 /tmp/pps.out /tmp/ppc.out
	bad faults_device_works "with injection off: verbs_objects, or ibv_rc_pingpong (server $src, client $crc)"
fi
exit $FAILED
