# SPDX-License-Identifier: GPL-2.0
#
# rping.sh, interop: an rrxe server (guest a) and a C rdma_rxe client (guest b).
RP_A=rrxe RP_B=rxe
. /usr/local/bin/rping.sh
