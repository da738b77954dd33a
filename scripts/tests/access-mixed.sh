# SPDX-License-Identifier: GPL-2.0
#
# access.sh, interop: a C rdma_rxe server (guest a) and an rrxe client (guest b).
AC_A=rxe AC_B=rrxe
. /usr/local/bin/access.sh
