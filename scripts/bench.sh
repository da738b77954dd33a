#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench`: perftest for rrxe and for the C rdma_rxe between the same two QEMU guests
# in one run, side by side with their ratio, and iperf3's raw TCP throughput as the wire's
# ceiling. Prints the table and writes it, with the date and the command, to
# Documentation/rrxe-bench.rst. BENCH_DURATION (default 8) is each perftest run's -D.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
CLIPPY=1 "$REPO/scripts/kernel.sh"
"$REPO/scripts/initramfs.sh"
out=$BUILD/bench
rm -rf "$out"
"$REPO/scripts/qemu.sh" --timeout 1500 --out "$out" \
	"$REPO/scripts/bench/guest.sh" "$REPO/scripts/bench/guest.sh" >"$out.log" 2>&1 ||
	{ tail -50 "$out.log"; rrxe_die "bench guests failed (see $out)"; }
grep -a '^BENCH ' "$out/b.console" | tr -d '\r' >"$out/results.txt"
python3 - "$out/results.txt" "$REPO/Documentation/rrxe-bench.rst" "${BENCH_DURATION:-8}" <<'PY'
import sys, datetime
res, doc, dur = sys.argv[1], sys.argv[2], sys.argv[3]
vals, units = {}, {}
for line in open(res):
    _, drv, test, val, unit = line.split()[:5]
    vals[(drv, test)] = val
    units[test] = unit
tests = ["ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw", "ib_write_lat",
         "rc_pingpong_64B", "rc_pingpong_1MiB", "nvme_write_128k", "nvme_read_128k"]
def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None
rows = []
for t in tests:
    r, c = num(vals.get(("rrxe", t))), num(vals.get(("rxe", t)))
    if r is None or c is None or c == 0 or r == 0:
        ratio = "n/a"
    elif t.endswith("_lat") or t == "rc_pingpong_64B":
        ratio = "%.2fx" % (c / r)  # lower latency is better: rxe/rrxe
    else:
        ratio = "%.2fx" % (r / c)
    rows.append((t + (" (64 KiB)" if t in tests[:3] else ""), units.get(t, ""),
                 vals.get(("rrxe", t), "n/a"), vals.get(("rxe", t), "n/a"), ratio))
tcp = vals.get(("tcp", "iperf3"), "n/a")
hdr = ("test", "unit", "rrxe", "rdma_rxe", "rrxe vs rdma_rxe")
w = [max(len(str(x[i])) for x in rows + [hdr]) for i in range(5)]
def line(x):
    return "  ".join(str(v).ljust(w[i]) for i, v in enumerate(x)).rstrip()
sep = "  ".join("=" * n for n in w)
table = "\n".join([sep, line(hdr), sep] + [line(r) for r in rows] + [sep])
print(table)
print("raw TCP between the guests (iperf3): %s MB/s" % tcp)
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
with open(doc, "w") as f:
    f.write(""".. SPDX-License-Identifier: GPL-2.0

=====================================
rrxe benchmark: perftest against rdma_rxe
=====================================

Measured on %s with ``make bench`` (``BENCH_DURATION=%s``): two QEMU guests without KVM
(TCG) on one virtual wire, each running perftest against the other, first over rrxe, then
over the C ``rdma_rxe``, in the same run. Guest a runs the servers, guest b the clients;
bandwidth tests use 64 KiB messages, ``-D %s``; ``rc_pingpong`` rows are ``ibv_rc_pingpong``
(200 round trips of 64 B, 10 of 1 MiB); ``nvme_*`` rows are NVMe over RDMA (guest b's
nvme-rdma against nvmet-rdma over a memory-backed null_blk on guest a), sequential 128 KiB
direct I/O with ``dd``, 32 MiB each way. The ratio is rrxe's bandwidth over rdma_rxe's, and
rdma_rxe's latency over rrxe's (above 1 means rrxe is better).

Absolute numbers under TCG are far below real hardware and noisy; only the side-by-side
comparison in one run means something.

::

%s

Raw TCP between the guests (iperf3, the wire's ceiling): %s MB/s.
""" % (now, dur, dur, "\n".join("    " + l for l in table.splitlines()), tcp))
print("written to %s" % doc)
PY
