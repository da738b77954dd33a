# SPDX-License-Identifier: GPL-2.0
#
# perftest.sh with a rxe server (guest a) and a rrxe client (guest b).
PF_A=rxe PF_B=rrxe
. /usr/local/bin/perftest.sh
