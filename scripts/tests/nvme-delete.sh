# SPDX-License-Identifier: GPL-2.0
#
# nvme.sh with rrxe on both guests; the controller is deleted with a write in flight.
NV_DELETE=1 NV_TAG=delete
. /usr/local/bin/nvme.sh
