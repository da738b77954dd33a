# SPDX-License-Identifier: GPL-2.0
#
# nvme.sh with rrxe as the target, the C rdma_rxe as the host (guest b).
NV_B=rxe
. /usr/local/bin/nvme.sh
