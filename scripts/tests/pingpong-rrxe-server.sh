# SPDX-License-Identifier: GPL-2.0
#
# pingpong.sh, interop: an rrxe server (guest a) and a C rdma_rxe client (guest b).
PP_A=rrxe PP_B=rxe
. /usr/local/bin/pingpong.sh
