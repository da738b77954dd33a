# SPDX-License-Identifier: GPL-2.0
#
# ud.sh (UC) with rrxe on both guests.
XP=uc XP_A=rrxe XP_B=rrxe
. /usr/local/bin/ud.sh
