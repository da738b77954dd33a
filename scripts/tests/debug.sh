# SPDX-License-Identifier: GPL-2.0
#
# The driver says why (dynamic debug), one guest, rrxe on eth0, loopback (rc_access server
# and client on the same device):
#  - debug_sites_listed: /proc/dynamic_debug/control lists rdma_rrxe's call sites, each
#    with its .rs file, line, Rust module path and format (printed as RRXE-DYNDBG lines:
#    check.sh compares every file:line with the sources);
#  - debug_off_by_default: a remote access error with the sites as loaded prints nothing;
#  - with `module rdma_rrxe +p`: rc_access cases 3a (WRITE with a flipped rkey), 4 (WRITE
#    into a read-only region) and 10a (SEND from an invalid lkey) leave their reasons in the
#    kernel log: the responder's refusal with the rkey and why (debug_rkey_stale,
#    debug_rkey_no_right), the responder QP's entry into the error state and why
#    (debug_qp_error_reason), the requester's failed completion with its status
#    (debug_completion_status) and the refused send work request (debug_send_wr_refused);
#  - debug_off_again: after `-p`, the same errors print nothing.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok${2:+ $2}"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
CTL=/proc/dynamic_debug/control
PORT=18900

rdma_use rrxe
log "$DEV, GID index $GID"

# rc_access CASES: the cases on a loopback pair; the client's verdict is what counts here
# only as far as the cases must have run (each error is expected by rc_access).
access() {
	local cases=$1
	PORT=$((PORT + 1))
	timeout 120 rc_access server -d "$DEV" -g "$GID" -p $PORT -c "$cases" >/tmp/dbg-srv 2>&1 &
	local srv=$!
	wait_listen $PORT 30 $srv || return 1
	timeout 120 rc_access client -d "$DEV" -g "$GID" -p $PORT -c "$cases" "$RRXE_IP" >/tmp/dbg-cli 2>&1
	local rc=$?
	wait $srv
	sed 's/^/   client: /' /tmp/dbg-cli
	return $rc
}

# since_mark: the kernel log since the last `mark` (the log is not cleared: the harness
# reads all of it for warnings), timestamps stripped.
mark() { MARK=$(dmesg | wc -l); }
since_mark() { dmesg | tail -n +$((MARK + 1)) | sed 's/^\[ *[0-9.]*\] //'; }

# found NAME PATTERN: the kernel log since the last `mark` has a rdma_rrxe debug line
# matching PATTERN (extended regular expression).
found() {
	local l
	l=$(since_mark | grep -E "^rdma_rrxe: [^ ]+: $2" | head -1)
	if [ -n "$l" ]; then ok "$1" "($l)"; else bad "$1" "no message matching '$2'"; fi
}

# silent NAME WHEN: rc_access case 4 (a remote access error) runs, and rdma_rrxe prints no
# QP message meanwhile (WHEN says in which state of the sites, for the failure).
silent() {
	mark
	access 4
	if ! grep -q '^CASE 4 .* ok' /tmp/dbg-cli; then
		bad "$1" "rc_access case 4 (the remote access error) did not run"
	elif since_mark | grep -q '^rdma_rrxe: .*qp 0x'; then
		bad "$1" "printed $2: $(since_mark | grep '^rdma_rrxe' | head -1)"
	else
		ok "$1"
	fi
}

sites=$(grep -E '\[rdma_rrxe\]' $CTL)
n=$(printf '%s\n' "$sites" | grep -c '\.rs:[0-9]* \[rdma_rrxe\]rdma_rrxe')
printf '%s\n' "$sites" | sed 's/^/RRXE-DYNDBG /'
if [ "$n" -ge 8 ] && ! printf '%s\n' "$sites" | grep -q 'class'; then
	ok debug_sites_listed "($n sites)"
else
	bad debug_sites_listed "$n sites with a .rs file and a module path, or a class set"
fi

silent debug_off_by_default "while off"

echo 'module rdma_rrxe +p' >$CTL || die "dynamic debug control"
mark
access 3a,4,10a || log "rc_access reported a failure (see above)"
since_mark | grep '^rdma_rrxe' | sed 's/^/   log: /'
found debug_rkey_stale "qp 0x[0-9a-f]+: rkey 0x[0-9a-f]+ refused for RemoteWrite of [0-9]+ bytes at 0x[0-9a-f]+: (the key is stale or invalidated|no region or window has this key)"
found debug_rkey_no_right "qp 0x[0-9a-f]+: rkey 0x[0-9a-f]+ refused for RemoteWrite .*: the region does not grant the access"
found debug_qp_error_reason "qp 0x[0-9a-f]+: to the error state: the responder failed a request"
found debug_completion_status "qp 0x[0-9a-f]+: send work request 0x[0-9a-f]+ completed with RemAccessErr"
found debug_send_wr_refused "qp 0x[0-9a-f]+: send work request refused: LocProtErr"

echo 'module rdma_rrxe -p' >$CTL || die "dynamic debug control"
silent debug_off_again "after -p"
exit $FAILED
