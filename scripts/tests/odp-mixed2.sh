# SPDX-License-Identifier: GPL-2.0
#
# odp.sh, interop: a C rdma_rxe server (guest a) and an rrxe client (guest b).
ODP_A=rxe ODP_B=rrxe
. /usr/local/bin/odp.sh
