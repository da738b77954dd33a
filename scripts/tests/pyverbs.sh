# SPDX-License-Identifier: GPL-2.0
#
# Guest script (two guests, same kernel): rdma-core's own pyverbs suite (v44, its tests/)
# on rdma_rxe in guest a and on rrxe in guest b, each guest alone on its device (the suite
# runs both ends of its traffic on one device). scripts/pyverbs-compare.py judges the two
# runs on the host from their PYVERBS lines; this script only reports that the suite ran.
# Needs build/pyverbs.cpio (qemu.sh --cpio).
. /usr/local/lib/rrxe/lib.sh

if [ "$RRXE_NAME" = a ]; then
	rdma_link rdma_rxe rxe rxe0; dev=rxe0
else
	rdma_link rdma_rrxe rrxe rrxe0; dev=rrxe0
fi
# The suite takes the device's first GID with an address: the IPv6 link-local one must be
# usable (duplicate address detection done), as for every RoCE route.
wait_ipv6_dad || die "IPv6 DAD"
[ -x /usr/local/bin/pyverbs-run.py ] || die "no pyverbs archive in this initramfs"
timeout 800 python3 /usr/local/bin/pyverbs-run.py /usr/local/lib/rrxe/pyverbs/tests "$dev" 2>&1 |
	tee /tmp/pyverbs.log
# The results again, from the log (which holds only the suite's own output), as one block
# for scripts/pyverbs-compare.py: on the console the live lines above can be cut by a
# kernel message printed in their middle, so the console's log level is lowered for the
# block (the kernel's messages still reach dmesg, which the kernel-clean check reads).
dmesg -n 1
echo PYVERBS-RESULTS-BEGIN
grep -a '^PYVERBS' /tmp/pyverbs.log
echo PYVERBS-RESULTS-END
dmesg -n 7
if grep -q '^PYVERBS-DONE ' /tmp/pyverbs.log; then
	echo "RRXE-TEST env_suite_ran ok $(grep '^PYVERBS-DONE ' /tmp/pyverbs.log | cut -d' ' -f2-) on $dev"
else
	echo "RRXE-TEST env_suite_ran FAIL: the suite did not finish on $dev ($(grep -c '^PYVERBS ' /tmp/pyverbs.log) results)"
	exit 1
fi
