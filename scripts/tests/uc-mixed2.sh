# SPDX-License-Identifier: GPL-2.0
#
# ud.sh (UC), interop the other way: a C rdma_rxe server (guest a) and an rrxe client (guest b).
XP=uc XP_A=rxe XP_B=rrxe
. /usr/local/bin/ud.sh
