# SPDX-License-Identifier: GPL-2.0
#
# odp.sh, interop: an rrxe server (guest a) and a C rdma_rxe client (guest b), which also
# runs odp_rules on rdma_rxe for reference.
ODP_A=rrxe ODP_B=rxe
. /usr/local/bin/odp.sh
