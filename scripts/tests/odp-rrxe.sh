# SPDX-License-Identifier: GPL-2.0
#
# odp.sh, rrxe on both guests.
ODP_A=rrxe ODP_B=rrxe
. /usr/local/bin/odp.sh
