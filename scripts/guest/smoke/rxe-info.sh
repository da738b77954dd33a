# SPDX-License-Identifier: GPL-2.0
# One guest: create an rxe device on eth0 and show it.
#   scripts/qemu.sh --out out/info scripts/guest/smoke/rxe-info.sh
# Set DRV/TYPE (e.g. DRV=rdma_rrxe TYPE=rrxe) in a wrapper to try another driver.
set -e
. /usr/local/lib/rrxe/lib.sh
kmemleak_clear
rdma_link "${DRV:-rdma_rxe}" "${TYPE:-rxe}" rxe0
ibv_devices
ibv_devinfo -v -d rxe0
log "RoCE v2 IPv4 GID index: $(rrxe_gid_index rxe0)"
rdma link delete rxe0
rmmod "${DRV:-rdma_rxe}"
kmemleak_check
dmesg_check
