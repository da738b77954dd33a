# SPDX-License-Identifier: GPL-2.0
#
# pingpong.sh, interop: a C rdma_rxe server (guest a) and an rrxe client (guest b).
PP_A=rxe PP_B=rrxe
. /usr/local/bin/pingpong.sh
