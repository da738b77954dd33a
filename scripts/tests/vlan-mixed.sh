# SPDX-License-Identifier: GPL-2.0
#
# vlan.sh, interop: rrxe on guest a, the C rdma_rxe on guest b.
VL_A=rrxe VL_B=rxe
. /usr/local/bin/vlan.sh
