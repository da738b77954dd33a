# SPDX-License-Identifier: GPL-2.0
#
# netns.sh, interop: rrxe in guest a's namespace, the C rdma_rxe on guest b.
NS_A=rrxe NS_B=rxe
. /usr/local/bin/netns.sh
