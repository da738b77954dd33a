# SPDX-License-Identifier: GPL-2.0
#
# Teardown with traffic in flight, two guests: destroying QPs and unloading the module while
# packets flow leaves no leak and no kernel warning.
#
# Guest a (the driver under test) runs an ibv_rc_pingpong server (64 KiB SENDs, endless),
# guest b a client. Once traffic flows (guest a's rcvd_pkts, and sent_pkts if the driver
# counts them, grew), guest a SIGKILLs its server (uverbs cleanup destroys the QP, CQ, MR
# with packets in flight; guest b keeps sending: retries), then tears the device down:
#  round 1 (linkdel): `rdma link del`, then rmmod;
#  round 2 (rmmod):   rmmod with the device still there (the module's exit removes it).
#  Round 2 is not run on the C rdma_rxe: with lockdep (our guest kernel) each of its QPs'
#  send sockets holds a module reference (sock_lock_init_class_and_name in rxe_qp.c), the
#  GSI QP's too, so rdma_rxe cannot be unloaded while it has a device. TD_ROUNDS overrides.
# Leaks and kernel warnings are judged by the harness at the end of each rrxe guest (the
# module is gone by then, so kmemleak sees everything it left). Guest b's client is expected
# to fail (transport retry counter exceeded), or to wait for ever: rdma_rxe treats
# retry_cnt 7 as infinite, and a client whose SEND was acknowledged waits for a receive that
# no timeout ends. It is stopped 5 s after guest a is done, never left to hang, and its end
# only logged. Guest b then removes its own device and module.
# TD_A / TD_B (default rrxe) pick each guest's driver: rrxe or rxe (the C rdma_rxe).
# Prints `RRXE-TEST teardown_<A>_<B>_...` lines on both guests.
. /usr/local/lib/rrxe/lib.sh

TD_A=${TD_A:-rrxe} TD_B=${TD_B:-rrxe}
FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
module_of() { case "$1" in rrxe) echo rdma_rrxe ;; *) echo rdma_rxe ;; esac; }
counter() { cat "/sys/class/infiniband/$DEV/ports/1/hw_counters/$1" 2>/dev/null; }
# children PID: the processes whose parent is PID.
children() {
	local p pp
	for p in /proc/[0-9]*; do
		read -r _ _ _ pp _ <"$p/stat" 2>/dev/null && [ "$pp" = "$1" ] && echo "${p#/proc/}"
	done
}
DRV=${TD_A}_${TD_B}
PORT=18800 CTL=18900
ITERS=100000000 SIZE=65536
if [ "$TD_A" = rrxe ]; then ROUNDS=${TD_ROUNDS:-linkdel rmmod}; else ROUNDS=${TD_ROUNDS:-linkdel}; fi

if [ "$RRXE_NAME" = a ]; then MOD=$(module_of "$TD_A"); else MOD=$(module_of "$TD_B"); fi

# --- guest b: the client ------------------------------------------------------------------
if [ "$RRXE_NAME" = b ]; then
	rdma_use "$TD_B"
	log "b: $DEV, GID index $GID"
	for round in $ROUNDS; do
		cmd=(ibv_rc_pingpong -d "$DEV" -g "$GID" -m 1024 -s $SIZE -n $ITERS -p $PORT "$RRXE_PEER")
		log "client ($round): ${cmd[*]}"
		connect_retry 300 /tmp/client.out timeout 200 "${cmd[@]}" &
		bg=$!
		# Guest a tells when its teardown is over; the client keeps sending until then.
		word=$(hear $CTL 240)
		log "guest a: ${word:-nothing}"
		for _ in $(seq 25); do kill -0 $bg 2>/dev/null || break; sleep 0.2; done
		if kill -0 $bg 2>/dev/null; then
			log "client still running (retrying, or waiting for a reply that will not come): stopping it"
			for p in $(children $bg); do kill "$p" 2>/dev/null; done
		fi
		wait $bg
		rc=$?
		sed 's/^/   client: /' /tmp/client.out
		log "client ended with status $rc"
		PORT=$((PORT + 1)) CTL=$((CTL + 1))
	done
	d=/sys/class/infiniband/$DEV/ports/1/hw_counters
	[ -d $d ] && for f in "$d"/*; do echo "   $(basename "$f") $(cat "$f")"; done
	if timeout 30 rdma link del "$DEV"; then ok "teardown_${DRV}_peer_link_del"; else bad "teardown_${DRV}_peer_link_del" "rdma link del $DEV"; fi
	if timeout 60 rmmod "$MOD"; then ok "teardown_${DRV}_peer_rmmod"; else bad "teardown_${DRV}_peer_rmmod" "rmmod $MOD"; fi
	exit $FAILED
fi

# --- guest a: the driver under test ---------------------------------------------------------
for round in $ROUNDS; do
	name=teardown_${DRV}_${round}
	rdma_use "$TD_A"
	log "a ($round): $DEV, GID index $GID"
	r0=$(counter rcvd_pkts) s0=$(counter sent_pkts)
	ibv_rc_pingpong -d "$DEV" -g "$GID" -m 1024 -s $SIZE -n $ITERS -p $PORT >/tmp/server.out 2>&1 &
	server=$!
	# Traffic flows when both counters moved by 300 packets (~5 messages each way).
	flowing=
	for _ in $(seq 300); do
		r=$(counter rcvd_pkts) s=$(counter sent_pkts)
		if [ -n "$r0" ] && [ $((r - r0)) -ge 300 ] && { [ -z "$s0" ] || [ $((s - s0)) -ge 300 ]; }; then
			flowing=1
			break
		fi
		kill -0 $server 2>/dev/null || break
		sleep 0.2
	done
	log "rcvd_pkts $r0 -> $r, sent_pkts ${s0:-n/a} -> ${s:-n/a}"
	rdma res show qp link "$DEV/1" 2>/dev/null
	if [ -n "$flowing" ]; then
		ok "${name}_traffic"
	elif [ -z "$r0" ]; then
		# No counters: a fixed delay instead, the server still running.
		sleep 10
		if kill -0 $server 2>/dev/null; then ok "${name}_traffic"; else bad "${name}_traffic" "server exited"; fi
	else
		bad "${name}_traffic" "rcvd_pkts $r0 -> $r, sent_pkts ${s0:-n/a} -> ${s:-n/a}"
	fi

	kill -KILL $server 2>/dev/null
	wait $server
	rc=$?
	sed 's/^/   server: /' /tmp/server.out
	if [ $rc = 137 ]; then ok "env_${name}_sigkill"; else bad "env_${name}_sigkill" "server exit status $rc, not killed"; fi
	if [ $round = linkdel ]; then
		if timeout 30 rdma link del "$DEV"; then ok "${name}_link_del"; else bad "${name}_link_del" "rdma link del $DEV"; fi
	fi
	# The last references to the module may go a moment after the process died (deferred
	# object cleanup): rmmod (busybox: O_NONBLOCK, so EAGAIN while in use) is retried for 10 s.
	t=$EPOCHREALTIME tries=0
	log "$MOD refcnt $(cat /sys/module/$MOD/refcnt)"
	until timeout 60 rmmod "$MOD" 2>/tmp/rmmod.err; do
		cp /tmp/rmmod.err /tmp/rmmod.last
		tries=$((tries + 1))
		[ $tries -lt 50 ] || break
		sleep 0.2
	done
	if [ $tries -lt 50 ]; then
		ok "${name}_rmmod"
	else
		bad "${name}_rmmod" "rmmod $MOD: $(tail -1 /tmp/rmmod.last), refcnt $(cat /sys/module/$MOD/refcnt)"
	fi
	log "rmmod took $(awk "BEGIN {printf \"%.1f\", $EPOCHREALTIME - $t}") s, $tries failed tries$([ $tries = 0 ] || echo " ($(tail -1 /tmp/rmmod.last))")"
	if ! grep -q "^$MOD " /proc/modules && [ ! -e "/sys/class/infiniband/$DEV" ]; then
		ok "${name}_gone"
	else
		bad "${name}_gone" "$MOD or $DEV still there"
	fi
	tell_peer $CTL "torn down ($round)" || die "cannot reach guest b"
	PORT=$((PORT + 1)) CTL=$((CTL + 1))
done

exit $FAILED
