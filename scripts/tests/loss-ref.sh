# SPDX-License-Identifier: GPL-2.0
#
# loss.sh, the reference: the C rdma_rxe on both guests.
LOSS_A=rxe LOSS_B=rxe
. /usr/local/bin/loss.sh
