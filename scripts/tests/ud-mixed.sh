# SPDX-License-Identifier: GPL-2.0
#
# ud.sh (UD), interop: an rrxe server (guest a) and a C rdma_rxe client (guest b).
XP=ud XP_A=rrxe XP_B=rxe
. /usr/local/bin/ud.sh
