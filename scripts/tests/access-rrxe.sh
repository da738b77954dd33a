# SPDX-License-Identifier: GPL-2.0
#
# access.sh with rrxe on both guests.
AC_A=rrxe AC_B=rrxe
. /usr/local/bin/access.sh
