# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own rxe selftests (tools/testing/selftests/rdma of the pinned tree, with
# kselftest's ktap_helpers.sh), one guest, as upstream runs them: each script runs as root,
# loads its modules itself and ends with exit status 0 (pass), 4 (KSFT_SKIP) or another
# (fail). Each runs against rrxe, then against rdma_rxe in the same kernel. For rrxe the
# scripts are unmodified but for the driver's names: `rdma_rxe` becomes `rdma_rrxe` and
# `type rxe` becomes `type rrxe` (rrxe is its own module and link type; see
# Documentation/rrxe.rst, "The kernel's rxe selftests").
#
# `RRXE-TEST selftest_<script>` is rrxe's result (a failure shows the script's trace);
# `RRXE-REF selftest_<script> rdma_rxe <result>` is the C driver's, for reference (not a check).
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok${2:+ $2}"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
skip() { echo "RRXE-TEST $1 SKIP: $2"; }

ST=/tmp/selftests
mkdir -p $ST/rdma $ST/kselftest
cp /usr/local/bin/ktap_helpers.sh $ST/kselftest/ || die "no ktap_helpers.sh"
SCRIPTS="rxe_rping_between_netns rxe_ipv6 rxe_socket_with_netns rxe_test_NETDEV_UNREGISTER
	rxe_sent_rcvd_bytes rxe_netns_names"

# run SCRIPT DRIVER: runs one script against DRIVER (rrxe or rxe); prints its exit status.
run() {
	local t=$1 drv=$2 f=$ST/rdma/$1-$2.sh rc
	if [ "$drv" = rrxe ]; then
		sed -e 's/rdma_rxe/rdma_rrxe/g' -e 's/type rxe\b/type rrxe/g' /usr/local/bin/$t.sh >"$f"
	else
		cp /usr/local/bin/$t.sh "$f"
	fi
	t0=$SECONDS
	(cd $ST/rdma && timeout 240 bash -x "$f" >/tmp/st.out 2>/tmp/st.err)
	rc=$?
	log "$t on $drv: exit $rc in $((SECONDS - t0)) s"
	# Whatever the script left (a killed one skips its cleanup).
	rdma link show 2>/dev/null | grep -q . && { rdma link show; for l in $(rdma link show | awk '{print $2}' | cut -d/ -f1); do rdma link del "$l"; done; }
	modprobe -r rdma_rrxe 2>/dev/null; modprobe -r rdma_rxe 2>/dev/null
	return $rc
}

for t in $SCRIPTS; do
	[ -f /usr/local/bin/$t.sh ] || { bad "selftest_$t" "not in the guest"; continue; }
	run "$t" rrxe
	rc=$?
	case $rc in
	0) ok "selftest_$t" ;;
	4) skip "selftest_$t" "$(grep -m1 -i skip /tmp/st.err /tmp/st.out | cut -d: -f2-)" ;;
	*)
		echo "--- $t on rrxe (exit $rc), its trace:"
		tail -40 /tmp/st.err | sed 's/^/   /'
		bad "selftest_$t" "exit $rc$([ $rc = 124 ] && echo ' (timeout)'): $(grep -v '^+' /tmp/st.err | tail -1)"
		;;
	esac
	run "$t" rxe
	rc=$?
	case $rc in
	0) echo "RRXE-REF selftest_$t rdma_rxe pass" ;;
	4) echo "RRXE-REF selftest_$t rdma_rxe skip" ;;
	*) echo "RRXE-REF selftest_$t rdma_rxe fail (exit $rc): $(grep -v '^+' /tmp/st.err | tail -1)" ;;
	esac
done
exit $FAILED
