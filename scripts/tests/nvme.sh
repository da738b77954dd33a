# SPDX-License-Identifier: GPL-2.0
#
# NVMe over RDMA between the guests: guest a exports a memory-backed null_blk through
# nvmet-rdma, guest b imports it with nvme-rdma (the connect string written to
# /dev/nvme-fabrics, no nvme-cli), writes NVME_MB MiB of random data with 128 KiB direct
# I/O, disconnects, reconnects, reads it back and compares. nvme-rdma registers its I/O
# buffers with fast registration (IB_WR_REG_MR, invalidated remotely by the target's SEND
# with invalidate or locally by LOCAL_INV); nvmet-rdma moves the data with rdma_rw (RDMA
# READ for writes, RDMA WRITE for reads). NV_A / NV_B pick each guest's driver (rrxe or
# rxe; default rrxe); NV_NETEM adds a netem qdisc on guest b's egress (e.g. "loss 1%");
# NV_DELETE=1 deletes the controller while a write is in flight instead of the
# reconnection (no hang, no oops; the write fails or is retried); NVMET_RDMA_OPTS=use_srq=1
# makes the target post its receives to shared receive queues (kernel SRQs: ib_create_srq,
# ib_post_srq_recv), which guest a then checks it has (nvme_target_srqs_<tag>). Guest b
# judges the rest.
. /usr/local/lib/rrxe/lib.sh

FAILED=0
ok() { echo "RRXE-TEST $1 ok${2:+ $2}"; }
bad() { echo "RRXE-TEST $1 FAIL: $2"; FAILED=1; }
if [ "$RRXE_NAME" = a ]; then DRV=${NV_A:-rrxe}; else DRV=${NV_B:-rrxe}; fi
rdma_use "$DRV"
tag=${NV_TAG:-${NV_A:-rrxe}_${NV_B:-rrxe}}
MB=${NVME_MB:-32}
NQN=rrxe-test
SYNC=4300

if [ "$RRXE_NAME" = a ]; then
	nvmet_export "$NQN" || die "nvmet export"
	tell_peer $SYNC ready || die "cannot reach guest b"
	if [ -n "${NVMET_RDMA_OPTS:-}" ]; then
		# While the host is connected (nvmet-rdma frees its SRQs with the last queue).
		conn=$(hear $((SYNC + 2)) 300)
		rdma resource show srq dev "$DEV" | tee /tmp/srqs
		n=$(grep -c "srqn" /tmp/srqs)
		if [ "$n" -gt 0 ] && [ "$conn" = connected ]; then
			ok "nvme_target_srqs_$tag" "$n SRQs"
		else
			bad "nvme_target_srqs_$tag" "$n SRQs on $DEV, guest b: ${conn:-nothing}"
		fi
		tell_peer $((SYNC + 3)) checked || true
	fi
	res=$(hear $((SYNC + 1)) 500)
	echo "guest b: ${res:-nothing}"
	# The target stays: removing the device at the end lets it go (see nvmet_export).
	rdma statistic show link "$DEV/1"
	exit 0
fi

[ -n "${NV_NETEM:-}" ] && { tc qdisc add dev eth0 root netem ${NV_NETEM} || die "netem"; }
[ "$(hear $SYNC 200)" = ready ] || die "target not ready"
connect() { nvme_connect "$NQN"; }
disconnect() { nvme_disconnect; }

if connect; then ok "nvme_connect_$tag"; else bad "nvme_connect_$tag" "no /dev/nvme0n1"; fi
if [ -n "${NVMET_RDMA_OPTS:-}" ]; then
	# Guest a looks at the target's SRQs while this host is connected.
	tell_peer $((SYNC + 2)) connected || true
	hear $((SYNC + 3)) 60 >/dev/null
fi
dd if=/dev/urandom of=/tmp/data bs=1M count="$MB" 2>/dev/null
if [ "${NV_DELETE:-0}" = 1 ]; then
	# The controller is deleted while a write is in flight: the write fails (or is
	# retried and fails), nothing hangs, the kernel stays clean.
	timeout 200 dd if=/tmp/data of=/dev/nvme0n1 bs=128k oflag=direct >/tmp/dd.out 2>&1 &
	dd_pid=$!
	# In flight: the writer is still running and the device has completed 1 MiB of its
	# writes (the data path works); then the controller goes.
	sectors=0 n=0
	while kill -0 $dd_pid 2>/dev/null && [ $n -lt 1200 ]; do
		read -r _ _ _ _ _ _ sectors _ </sys/block/nvme0n1/stat 2>/dev/null || sectors=0
		[ "${sectors:-0}" -ge 2048 ] && break
		n=$((n + 1))
		sleep 0.05
	done
	inflight=$(cat /sys/block/nvme0n1/inflight 2>/dev/null)
	if kill -0 $dd_pid 2>/dev/null; then running=1; else running=; fi
	echo "before delete: $sectors sectors written, inflight (reads writes) ${inflight:-n/a}, writer $([ -n "$running" ] && echo running || echo gone)"
	if timeout 120 sh -c 'echo 1 >/sys/class/nvme/nvme0/delete_controller'; then deleted=1; else deleted=; fi
	wait $dd_pid
	ddrc=$?
	echo "dd exit $ddrc: $(cat /tmp/dd.out)"
	if [ -z "$running" ]; then
		bad "nvme_delete_in_flight_$tag" "the writer had ended before the delete (exit $ddrc, $sectors sectors)"
	elif [ "${sectors:-0}" -lt 2048 ]; then
		bad "nvme_delete_in_flight_$tag" "only $sectors sectors written in 60 s before the delete"
	elif [ -z "$deleted" ]; then
		bad "nvme_delete_in_flight_$tag" "delete_controller hung or failed"
	else
		ok "nvme_delete_in_flight_$tag"
	fi
	# The write in flight fails with an error, not a hang (124: timeout) or a kill.
	case $ddrc in
	0) bad "nvme_delete_writer_failed_$tag" "the write of $MB MiB succeeded although the controller was deleted under it" ;;
	124 | 137) bad "nvme_delete_writer_failed_$tag" "the writer hung (exit $ddrc)" ;;
	*) ok "nvme_delete_writer_failed_$tag" "exit $ddrc: $(grep -m1 -i error /tmp/dd.out || tail -1 /tmp/dd.out)" ;;
	esac
	if [ ! -e /sys/class/nvme/nvme0 ]; then ok "nvme_deleted_$tag"; else bad "nvme_deleted_$tag" "controller still there"; fi
else
	t0=$(date +%s)
	if timeout 300 dd if=/tmp/data of=/dev/nvme0n1 bs=128k oflag=direct conv=fsync 2>/tmp/dd.out; then
		ok "nvme_write_${MB}m_$tag"
	else
		bad "nvme_write_${MB}m_$tag" "$(tail -1 /tmp/dd.out)"
	fi
	echo "write: $(tail -1 /tmp/dd.out) ($(( $(date +%s) - t0 )) s)"
	disconnect
	sleep 1
	if connect; then ok "nvme_reconnect_$tag"; else bad "nvme_reconnect_$tag" "no /dev/nvme0n1"; fi
	t0=$(date +%s)
	timeout 300 dd if=/dev/nvme0n1 of=/tmp/back bs=128k count=$((MB * 8)) iflag=direct 2>/tmp/dd.out
	echo "read: $(tail -1 /tmp/dd.out) ($(( $(date +%s) - t0 )) s)"
	if cmp /tmp/data /tmp/back; then ok "nvme_readback_${MB}m_$tag"; else bad "nvme_readback_${MB}m_$tag" "data differs"; fi
	disconnect
fi
sleep 1
if rmmod nvme-rdma; then ok "nvme_host_unload_$tag"; else bad "nvme_host_unload_$tag" rmmod; fi
rdma statistic show link "$DEV/1"
tell_peer $((SYNC + 1)) "done $FAILED" || true
exit $FAILED
