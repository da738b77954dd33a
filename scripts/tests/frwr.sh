# SPDX-License-Identifier: GPL-2.0
#
# Kernel consumers, one guest: the rrxe_frwr KUnit suite (rrxe_frwr_test.ko) runs two kernel
# RC QPs of rrxe0 (loopback) through fast registration over DMA-mapped scatterlists, RDMA
# WRITE and READ through the registered key, SEND with invalidate and LOCAL_INV (after
# which the old key fails and changes nothing), re-registration under a new key, rdma_rw
# contexts with multi-entry scatterlists and ib_post_send()'s bad_wr contract. The suite's
# cases are counted with the driver's, once each (scripts/kunit-tally.py: every case in the
# source must report, and scripts/check.sh fails the run when the frwr group ran and the
# suite did not); this script loads it and checks that the device and the module can then
# be removed.
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
rdma statistic show link rrxe0/1
if rmmod rrxe_frwr_test; then ok frwr_module_unload; else bad frwr_module_unload rmmod; fi
if rdma link del rrxe0; then ok frwr_link_del; else bad frwr_link_del "rdma link del"; fi
if rmmod rdma_rrxe; then ok frwr_rmmod; else bad frwr_rmmod rmmod; fi
exit $FAILED
