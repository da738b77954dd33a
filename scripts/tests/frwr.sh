# SPDX-License-Identifier: GPL-2.0
#
# Kernel consumers, one guest: the rrxe_frwr KUnit suite (rrxe_frwr_test.ko) runs two kernel
# RC QPs of rrxe0 (loopback) through fast registration over DMA-mapped scatterlists, RDMA
# WRITE and READ through the registered key, SEND with invalidate and LOCAL_INV (after
# which the old key fails and changes nothing), re-registration under a new key, rdma_rw
# contexts with multi-entry scatterlists and ib_post_send()'s bad_wr contract. The suite's
# cases are tallied with the driver's (scripts/kunit-tally.py); this script checks that the
# suite ran, passed, and left the device and the module removable.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }

rdma_link rdma_rrxe rrxe rrxe0
rrxe_gid_index rrxe0 >/dev/null || die "no RoCE v2 GID"
if timeout 300 modprobe rrxe_frwr_test device=rrxe0; then ok frwr_module_load; else bad frwr_module_load modprobe; fi
# The whole log (the driver's own suites ran at its load): the harness tallies every suite.
dmesg >/tmp/frwr.log
sed -n '/Subtest: rrxe_frwr/,/ rrxe_frwr$/p' /tmp/frwr.log
# The suite's own verdict line (KTAP: "ok N rrxe_frwr" at the outer level).
if grep -qE '^\[ *[0-9.]+\] ok [0-9]+ rrxe_frwr$' /tmp/frwr.log; then
	ok frwr_suite_passed
elif grep -qE 'not ok [0-9]+ rrxe_frwr' /tmp/frwr.log; then
	bad frwr_suite_passed "$(grep -E 'not ok|Expected|ASSERT' /tmp/frwr.log | head -5 | tr '\n' ' ')"
else
	bad frwr_suite_passed "the suite did not report"
fi
# The cases of the rrxe_frwr suite itself (its block of the log, not the driver's other
# suites, which ran at its load): as many passed as its plan ("1..N") announced, at least 10.
sed -nE '/Subtest: rrxe_frwr$/,/^\[ *[0-9.]+\] (not )?ok [0-9]+ rrxe_frwr$/p' /tmp/frwr.log >/tmp/frwr.suite
plan=$(grep -oE '^\[ *[0-9.]+\]     1\.\.[0-9]+$' /tmp/frwr.suite | grep -oE '[0-9]+$' | head -1)
n=$(grep -cE '^\[ *[0-9.]+\]     ok [0-9]+ ' /tmp/frwr.suite)
if [ -n "$plan" ] && [ "$n" = "$plan" ] && [ "$n" -ge 10 ]; then
	ok frwr_cases_reported
else
	bad frwr_cases_reported "$n cases of rrxe_frwr passed, its plan announced ${plan:-none}"
fi
rdma statistic show link rrxe0/1
if rmmod rrxe_frwr_test; then ok frwr_module_unload; else bad frwr_module_unload rmmod; fi
if rdma link del rrxe0; then ok frwr_link_del; else bad frwr_link_del "rdma link del"; fi
if rmmod rdma_rrxe; then ok frwr_rmmod; else bad frwr_rmmod rmmod; fi
exit $FAILED
