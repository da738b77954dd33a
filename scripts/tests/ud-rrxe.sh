# SPDX-License-Identifier: GPL-2.0
#
# ud.sh (UD) with rrxe on both guests.
XP=ud XP_A=rrxe XP_B=rrxe
. /usr/local/bin/ud.sh
