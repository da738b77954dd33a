# SPDX-License-Identifier: GPL-2.0
#
# interop-rx.sh over IPv6: both guests use their RoCE v2 GID of the IPv6 link-local address.
IRX_FAMILY=6
. /usr/local/bin/interop-rx.sh
