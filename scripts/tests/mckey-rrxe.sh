# SPDX-License-Identifier: GPL-2.0
#
# mckey.sh: guest a (receiver) on rrxe, guest b (sender) on rrxe.
MK_A=rrxe MK_B=rrxe
. /usr/local/bin/mckey.sh
