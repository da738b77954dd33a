# SPDX-License-Identifier: GPL-2.0
#
# rping.sh, interop: a C rdma_rxe server (guest a) and an rrxe client (guest b).
RP_A=rxe RP_B=rrxe
. /usr/local/bin/rping.sh
