# SPDX-License-Identifier: GPL-2.0
#
# rping.sh with rrxe on both guests.
RP_A=rrxe RP_B=rrxe
. /usr/local/bin/rping.sh
