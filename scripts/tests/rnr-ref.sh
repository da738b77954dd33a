# SPDX-License-Identifier: GPL-2.0
#
# rnr.sh, the reference: the C rdma_rxe on both guests.
RNR_A=rxe RNR_B=rxe
. /usr/local/bin/rnr.sh
