# SPDX-License-Identifier: GPL-2.0
#
# perftest.sh with a rrxe server (guest a) and a rrxe client (guest b), and 64 QPs at once.
PF_A=rrxe PF_B=rrxe PF_Q64=1
. /usr/local/bin/perftest.sh
