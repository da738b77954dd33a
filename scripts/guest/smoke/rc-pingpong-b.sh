# SPDX-License-Identifier: GPL-2.0
# Two guests, RC pingpong over rxe: client side (guest b); retries until a listens.
set -e
. /usr/local/lib/rrxe/lib.sh
rdma_link rdma_rxe rxe rxe0
gid=$(rrxe_gid_index rxe0)
retry 60 0.5 ibv_rc_pingpong -d rxe0 -g "$gid" -s 64 -n 100 "$RRXE_PEER"
dmesg_check
