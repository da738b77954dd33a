# SPDX-License-Identifier: GPL-2.0
#
# Memory protection and memory layout of RC operations, two guests
# (tools/testing/rrxe/rc_access.c): guest a's rc_access server registers regions with
# chosen access flags inside larger patterned buffers; guest b's client issues RDMA
# WRITE/READ, atomics, SENDs and WRITE WITH IMMEDIATE against them (in bounds, past the
# end, wrong rkeys, missing access rights, scatter/gather lists at unaligned addresses,
# zero lengths, a bad lkey, a too long SEND), each case on a fresh QP pair. Both check
# their side (completion statuses, receive completions, every byte of their buffers).
# AC_A / AC_B (default rrxe) pick each guest's driver: rrxe or rxe (the C rdma_rxe; its
# rc_access side then also accepts the C driver's known deviations from the IBA, printed
# as NOTE lines). Guest a prints `RRXE-TEST access_<A>_<B>_<id>_<case> ok|FAIL` per case
# (the combined verdict of both sides); the harness checks each rrxe guest's kernel log
# and leaks at the end (scripts/guest/init). AC_CASES (e.g. "2,10b", both guests) runs only those cases.
. /usr/local/lib/rrxe/lib.sh

AC_A=${AC_A:-rrxe} AC_B=${AC_B:-rrxe}
SEL=()
[ -z "${AC_CASES:-}" ] || SEL=(-c "$AC_CASES")
PORT=18800
FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }

if [ "$RRXE_NAME" = a ]; then drv=$AC_A; else drv=$AC_B; fi
case "$drv" in
rrxe) rdma_link rdma_rrxe rrxe rrxe0; DEV=rrxe0 ;;
rxe) rdma_link rdma_rxe rxe rxe0; DEV=rxe0 ;;
*) die "unknown driver '$drv' (rrxe or rxe)" ;;
esac
GID=$(rrxe_gid_index "$DEV") || die "no RoCE v2 GID on $DEV"
DRV=${AC_A}_${AC_B}
log "$RRXE_NAME: $DEV ($drv), GID index $GID"

if [ "$RRXE_NAME" != a ]; then
	# The server starts once guest a is up: retry the connection for up to a minute. The
	# timeouts keep the whole run within check.sh's 300 s even if a case hangs.
	i=0
	while :; do
		timeout 210 rc_access client -d "$DEV" -g "$GID" -p $PORT -k "$drv" "${SEL[@]}" "$RRXE_PEER" \
			>/tmp/client.out 2>&1
		rc=$?
		grep -q "Couldn't connect" /tmp/client.out || break
		i=$((i + 1))
		[ $i -lt 300 ] || break
		sleep 0.2
	done
	sed 's/^/   client: /' /tmp/client.out
	log "client exit status $rc"
	retry 150 0.2 sh -c "echo $rc | nc $RRXE_PEER $((PORT + 100))" || bad "access_${DRV}_report" "cannot reach guest a"
else
	timeout 240 nc -l -p $((PORT + 100)) >/tmp/client.result &
	l=$!
	timeout 220 rc_access server -d "$DEV" -g "$GID" -p $PORT -k "$drv" "${SEL[@]}" >/tmp/server.out 2>&1
	rc=$?
	sed 's/^/   server: /' /tmp/server.out
	wait "$l"
	read -r crc </tmp/client.result
	log "server exit status $rc, client exit status ${crc:-none}"
	grep '^NOTE ' /tmp/server.out | sed 's/^/>> /'
	# One line per case, from the server's combined verdicts; a case without one failed.
	rc_access list >/tmp/cases
	while read -r id name; do
		[ -z "${AC_CASES:-}" ] || case ",$AC_CASES," in *",$id,"*) ;; *) continue ;; esac
		line=$(grep -m1 "^CASE $id $name " /tmp/server.out)
		case "$line" in
		"CASE $id $name ok") ok "access_${DRV}_${id}_$name" ;;
		"CASE $id $name FAIL: "*) bad "access_${DRV}_${id}_$name" "${line#"CASE $id $name FAIL: "}" ;;
		*) bad "access_${DRV}_${id}_$name" "no result (server exit $rc, client exit ${crc:-none})" ;;
		esac
	done </tmp/cases
	# Both tools exit 0 when every case passed: must hold, but is not a check of its own.
	if [ "$rc" = 0 ] && [ "$crc" = 0 ]; then ok "env_access_${DRV}_exit_status"
	else bad "env_access_${DRV}_exit_status" "server exit $rc, client exit ${crc:-none}"; fi
fi

exit $FAILED
