# SPDX-License-Identifier: GPL-2.0
#
# ud.sh with rrxe on both guests.
UD_A=rrxe UD_B=rrxe
. /usr/local/bin/ud.sh
