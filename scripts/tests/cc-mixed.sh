# SPDX-License-Identifier: GPL-2.0
#
# cc.sh, interop: the C rdma_rxe receives (guest a) from rrxe (guest b) with its reaction
# point on: rrxe's packets are ECN-capable, the queue marks them CE, rdma_rxe takes them
# as any packet and sends no CNP; every run completes and every byte is right.
CC_A=rxe CC_B=rrxe
. /usr/local/bin/cc.sh
