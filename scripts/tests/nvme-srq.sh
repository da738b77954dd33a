# SPDX-License-Identifier: GPL-2.0
#
# nvme.sh with rrxe on both guests, the target (nvmet-rdma use_srq=1) receiving through
# shared receive queues.
NVMET_RDMA_OPTS=use_srq=1 NV_TAG=srq_rrxe_rrxe
. /usr/local/bin/nvme.sh
