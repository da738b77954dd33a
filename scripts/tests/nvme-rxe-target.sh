# SPDX-License-Identifier: GPL-2.0
#
# nvme.sh with the C rdma_rxe as the target (guest a), rrxe as the host.
NV_A=rxe
. /usr/local/bin/nvme.sh
