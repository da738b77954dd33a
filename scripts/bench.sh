#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench`: perftest, ibv_rc_pingpong and NVMe over RDMA for rrxe and for the C rdma_rxe
# between the same two QEMU guests in one run, on the bench kernel (RRXE_VARIANT=bench:
# scripts/config/bench.config, no lock debugging), the drivers interleaved (rrxe, rdma_rxe,
# rrxe, ...) BENCH_RUNS times each (default 3); the table gives each figure's median and
# range and the ratio of the medians, with iperf3's raw TCP throughput as the wire's
# ceiling. Prints the table and writes it, with the date and the command, to
# Documentation/rrxe-bench.rst. BENCH_DURATION (default 8) is each perftest run's -D;
# BENCH_QUICK=1 is one run of each, -D 3 (for development; the document is not written).
set -euo pipefail
export RRXE_VARIANT=${RRXE_VARIANT:-bench}
. "$(dirname "$0")/lib.sh"
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	export BENCH_RUNS=1 BENCH_DURATION=3
fi
export BENCH_RUNS=${BENCH_RUNS:-3} BENCH_DURATION=${BENCH_DURATION:-8}
drivers=
for _ in $(seq "$BENCH_RUNS"); do drivers="$drivers rrxe rxe"; done
export BENCH_DRIVERS=${drivers# }
CLIPPY=1 "$REPO/scripts/kernel.sh"
"$REPO/scripts/initramfs.sh"
out=$BUILD/bench
rm -rf "$out"
mkdir -p "$out"
# The guests get the settings through their script (the host's environment stays here).
printf 'BENCH_DRIVERS="%s" BENCH_DURATION=%s\n. /usr/local/bin/guest.sh\n' \
	"$BENCH_DRIVERS" "$BENCH_DURATION" >"$out/run.sh"
"$REPO/scripts/qemu.sh" --timeout $((BENCH_RUNS * 1200 + 300)) --out "$out" --file "$REPO/scripts/bench/guest.sh" \
	"$out/run.sh" "$out/run.sh" >"$out.log" 2>&1 ||
	{ tail -50 "$out.log"; rrxe_die "bench guests failed (see $out)"; }
grep -a '^BENCH ' "$out/b.console" | tr -d '\r' >"$out/results.txt"
doc=$REPO/Documentation/rrxe-bench.rst
[ "${BENCH_QUICK:-0}" = 1 ] && doc=$out/rrxe-bench.rst
python3 - "$out/results.txt" "$doc" "$BENCH_DURATION" "$BENCH_RUNS" <<'PY'
import sys, datetime, statistics
res, doc, dur, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
samples, units = {}, {}
for line in open(res):
    _, drv, test, val, unit = line.split()[:5]
    try:
        v = float(val)
    except ValueError:
        continue
    if v != v or v == 0:  # nan or nothing: the run failed
        continue
    samples.setdefault((drv, test), []).append(v)
    units[test] = unit
def fmt(v):
    return "%.2f" % v if v >= 10 else "%.3g" % v
vals, med = {}, {}
for k, vs in samples.items():
    med[k] = statistics.median(vs)
    vals[k] = fmt(med[k]) + (" (%s-%s)" % (fmt(min(vs)), fmt(max(vs))) if len(vs) > 1 else "")
tests = ["ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw", "ib_write_lat",
         "rc_pingpong_64B", "rc_pingpong_1MiB", "nvme_write_128k", "nvme_read_128k"]
rows = []
for t in tests:
    r, c = med.get(("rrxe", t)), med.get(("rxe", t))
    if r is None or c is None or c == 0 or r == 0:
        ratio = "n/a"
    elif t.endswith("_lat") or t == "rc_pingpong_64B":
        ratio = "%.2fx" % (c / r)  # lower latency is better: rxe/rrxe
    else:
        ratio = "%.2fx" % (r / c)
    rows.append((t + (" (64 KiB)" if t in tests[:3] else ""), units.get(t, ""),
                 vals.get(("rrxe", t), "n/a"), vals.get(("rxe", t), "n/a"), ratio))
tcp = vals.get(("tcp", "iperf3"), "n/a")
hdr = ("test", "unit", "rrxe, median (range)", "rdma_rxe, median (range)", "rrxe vs rdma_rxe")
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

Measured on %s with ``make bench`` (``BENCH_DURATION=%s``, ``BENCH_RUNS=%s``): two QEMU
guests without KVM (TCG) on one virtual datagram wire, on the bench kernel (the test
kernel's configuration without lock debugging, kmemleak, atomic-sleep checks or fault
injection: ``scripts/config/bench.config``). Each guest runs perftest against the
other, over rrxe and over the C ``rdma_rxe`` in turn, interleaved (rrxe, rdma_rxe, rrxe,
...) %s times each in the same run; each cell is the median, with the range of the runs in
parentheses, and the ratio is that of the medians. Guest a runs the servers, guest b the clients;
bandwidth tests use 64 KiB messages, ``-D %s``; ``rc_pingpong`` rows are ``ibv_rc_pingpong``
(200 round trips of 64 B, 10 of 1 MiB); ``nvme_*`` rows are NVMe over RDMA (guest b's
nvme-rdma against nvmet-rdma over a memory-backed null_blk on guest a), sequential 128 KiB
direct I/O with ``dd``, 32 MiB each way. The ratio is rrxe's bandwidth over rdma_rxe's, and
rdma_rxe's latency over rrxe's (above 1 means rrxe is better). A run that failed (no
figure) is left out of its median.

Absolute numbers under TCG are far below real hardware and noisy; only the side-by-side
comparison in one run means something.

::

%s

Raw TCP between the guests (iperf3, the wire's ceiling): %s MB/s.
""" % (now, dur, runs, runs, dur, "\n".join("    " + l for l in table.splitlines()), tcp))
print("written to %s" % doc)
PY
