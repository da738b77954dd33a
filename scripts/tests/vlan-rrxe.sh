# SPDX-License-Identifier: GPL-2.0
#
# vlan.sh with rrxe on both guests.
VL_A=rrxe VL_B=rrxe
. /usr/local/bin/vlan.sh
