# SPDX-License-Identifier: GPL-2.0
#
# access.sh, interop: a C rdma_rxe server (guest a) and an rrxe client (guest b).
# Case 2 (a WRITE running past its region) is left out here: it makes rdma_rxe itself warn
# (rxe_receiver() frees the rejected WRITE's trailing packets, page_pool skbs, under
# spin_lock_irqsave; WARNING in page_pool_put_unrefed_netmem and a lockdep report), which is
# a bug of the C driver, not of the rrxe client. access-rrxe and access-mixed2 (rrxe server)
# run it.
AC_A=rxe AC_B=rrxe
AC_CASES=1,3a,3b,4,5a,5b,6,7,8a,8b,8c,8d,9a,9b,10a,10b,11
. /usr/local/bin/access.sh
