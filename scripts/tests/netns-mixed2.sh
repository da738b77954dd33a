# SPDX-License-Identifier: GPL-2.0
#
# netns.sh, interop: the C rdma_rxe in guest a's namespace, rrxe on guest b.
NS_A=rxe NS_B=rrxe
. /usr/local/bin/netns.sh
