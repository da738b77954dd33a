# SPDX-License-Identifier: GPL-2.0
#
# access.sh, the reference: the C rdma_rxe on both guests.
AC_A=rxe AC_B=rxe
. /usr/local/bin/access.sh
