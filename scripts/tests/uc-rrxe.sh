# SPDX-License-Identifier: GPL-2.0
#
# uc.sh with rrxe on both guests.
UC_A=rrxe UC_B=rrxe
. /usr/local/bin/uc.sh
