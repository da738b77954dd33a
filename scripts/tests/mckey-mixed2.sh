# SPDX-License-Identifier: GPL-2.0
#
# mckey.sh: guest a (receiver) on rxe, guest b (sender) on rrxe.
MK_A=rxe MK_B=rrxe
. /usr/local/bin/mckey.sh
