# SPDX-License-Identifier: GPL-2.0
#
# pma.sh: guest a (the querier) on rrxe, guest b on rrxe.
PMA_A=rrxe
. /usr/local/bin/pma.sh
