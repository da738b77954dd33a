# SPDX-License-Identifier: GPL-2.0
#
# pingpong.sh, rrxe on both guests.
PP_A=rrxe PP_B=rrxe
. /usr/local/bin/pingpong.sh
