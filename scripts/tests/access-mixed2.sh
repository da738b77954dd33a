# SPDX-License-Identifier: GPL-2.0
#
# access.sh, interop: an rrxe server (guest a) and a C rdma_rxe client (guest b).
AC_A=rrxe AC_B=rxe
. /usr/local/bin/access.sh
