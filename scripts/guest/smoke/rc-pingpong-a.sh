# SPDX-License-Identifier: GPL-2.0
# Two guests, RC pingpong over rxe: server side (guest a). Pair with rc-pingpong-b.sh:
#   scripts/qemu.sh --out out/pp scripts/guest/smoke/rc-pingpong-a.sh scripts/guest/smoke/rc-pingpong-b.sh
set -e
. /usr/local/lib/rrxe/lib.sh
rdma_link rdma_rxe rxe rxe0
gid=$(rrxe_gid_index rxe0)
ibv_rc_pingpong -d rxe0 -g "$gid" -s 64 -n 100
dmesg_check
