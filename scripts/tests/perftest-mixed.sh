# SPDX-License-Identifier: GPL-2.0
#
# perftest.sh with a rrxe server (guest a) and a rxe client (guest b).
PF_A=rrxe PF_B=rxe
. /usr/local/bin/perftest.sh
