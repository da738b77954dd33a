# SPDX-License-Identifier: GPL-2.0
#
# uc.sh, interop: an rrxe server (guest a) and a C rdma_rxe client (guest b).
UC_A=rrxe UC_B=rxe
. /usr/local/bin/uc.sh
