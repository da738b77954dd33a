# SPDX-License-Identifier: GPL-2.0
#
# nvme.sh with rrxe on both guests, 1% loss on the host's egress (netem).
NV_NETEM='loss 1%' NV_TAG=loss1
. /usr/local/bin/nvme.sh
