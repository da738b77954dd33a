# SPDX-License-Identifier: GPL-2.0
#
# ud.sh, interop: an rrxe server (guest a) and a C rdma_rxe client (guest b).
UD_A=rrxe UD_B=rxe
. /usr/local/bin/ud.sh
