# SPDX-License-Identifier: GPL-2.0
#
# odp.sh, rrxe on both guests, each with two vCPUs: softirq (the responder's check that a
# request's pages are present, its acceptance and its copy) and the MMU notifier (the
# racer's fork() and MADV_DONTNEED) run on different CPUs at once.
ODP_A=rrxe ODP_B=rrxe ODP_TAG=_smp
. /usr/local/bin/odp.sh
