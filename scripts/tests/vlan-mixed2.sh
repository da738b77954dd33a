# SPDX-License-Identifier: GPL-2.0
#
# vlan.sh, interop: the C rdma_rxe on guest a, rrxe on guest b.
VL_A=rxe VL_B=rrxe
. /usr/local/bin/vlan.sh
