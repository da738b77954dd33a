# SPDX-License-Identifier: GPL-2.0
#
# nvme.sh with rrxe on both guests.
. /usr/local/bin/nvme.sh
