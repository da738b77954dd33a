# SPDX-License-Identifier: GPL-2.0
#
# teardown.sh, the reference: the C rdma_rxe on both guests.
TD_A=rxe TD_B=rxe
. /usr/local/bin/teardown.sh
