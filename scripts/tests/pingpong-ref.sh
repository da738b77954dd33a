# SPDX-License-Identifier: GPL-2.0
#
# pingpong.sh, the reference: the C rdma_rxe on both guests.
PP_A=rxe PP_B=rxe
. /usr/local/bin/pingpong.sh
