#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turns the BENCH lines of `make bench` into Documentation/rrxe-bench.rst and its plots.

    report.py RESULTS DOC DURATION RUNS SWEEP_DURATION [PROFILE]

RESULTS holds `BENCH <driver> <test> <value> <unit>` lines (driver rrxe, rxe or tcp), one
per run, the drivers interleaved. For each figure the median over the runs, their range and
the ratio of the medians (rrxe's over rdma_rxe's where more is better, the inverse where less
is); sweep figures (`sweep:<tool>:<size>`) become tables and SVG plots written next to DOC
(<doc stem>-<tool>.svg, two curves, sizes on a log scale); then the targets of issue 13,
each met or not. PROFILE, when given and present, is the PROF lines of `make profile`
(scripts/bench/profile.sh): a section with the busiest functions of each guest, rrxe beside
rdma_rxe, for each profiled test.
"""
import datetime
import math
import os
import statistics
import subprocess
import sys
import textwrap

LOWER_IS_BETTER = ("usec", "usec/iter", "KiB_per_qp", "cpu_s_per_GiB")


def fmt(v):
    return "%.2f" % v if v >= 10 else "%.3g" % v


def size_name(s):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if s >= n and s % n == 0:
            return "%d %s" % (s // n, unit)
    return "%d B" % s


def load(path):
    samples, units, failed = {}, {}, {}
    for line in open(path):
        f = line.split()
        if len(f) < 5 or f[0] != "BENCH":
            continue
        units[f[2]] = f[4]
        try:
            v = float(f[3])
        except ValueError:
            v = 0.0
        if v != v or v == 0:  # nan or nothing: the run failed
            failed[(f[1], f[2])] = failed.get((f[1], f[2]), 0) + 1
            continue
        samples.setdefault((f[1], f[2]), []).append(v)
    return samples, units, failed


def table(hdr, rows):
    w = [max(len(str(x[i])) for x in rows + [hdr]) for i in range(len(hdr))]

    def line(x):
        return "  ".join(str(v).ljust(w[i]) for i, v in enumerate(x)).rstrip()

    sep = "  ".join("=" * n for n in w)
    return "\n".join([sep, line(hdr), sep] + [line(r) for r in rows] + [sep])


def demangle(sym):
    """A readable name for a kernel symbol: Rust mangled names (`_R...`, `_ZN...`) through
    `rustfilt` (installed by setup), shortened to their last three path components outside
    generic arguments (`rdma_rrxe::engine::pump`); other names stay as they are."""
    if not (sym.startswith("_R") or sym.startswith("_ZN")):
        return sym
    try:
        out = subprocess.run(["rustfilt"], input=sym, capture_output=True, text=True,
                             check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return sym
    depth, cut = 0, []
    for i, ch in enumerate(out):
        depth += ch == "<"
        depth -= ch == ">"
        if depth == 0 and out.startswith("::", i):
            cut.append(i)
    return out[cut[-3] + 2:] if len(cut) >= 3 else out


def profile_section(path):
    """The rst text of the profile in PATH (PROF lines), or "" without one."""
    prof = {}
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return ""
    for line in lines:
        f = line.split()
        if len(f) < 6 or f[0] != "PROF":
            continue
        drv, test, guest, kind = f[1:5]
        prof.setdefault(test, {}).setdefault((drv, guest, kind), []).append(f[5:])
    if not prof:
        return ""
    when = datetime.datetime.fromtimestamp(os.path.getmtime(path), datetime.timezone.utc)
    out = ["""Where the time goes
===================

``make profile`` (scripts/profile.sh) on {when}, on the same bench kernel and
wire: for each driver in turn, guest b runs the 64 KiB client for 14 s against guest a's
server, and 3 s in both guests record ``perf record -a -g -e cpu-clock`` for 8 s (4 kHz;
TCG has no PMU). Shares are of all samples of the guest, idle included (``swapper``);
functions by self time. For ``ib_write_bw`` guest b is the requester and guest a the
responder that places the data; for ``ib_read_bw`` guest a's responder reads its memory and
sends it. Read the ``swapper`` share as a sample count, not as how busy a guest was: under
TCG it can disagree with the guest's own accounting. During one 64 KiB ``ib_write_bw`` run
of each driver (2026-12-03), busybox ``top`` in guest b, the client, showed no idle time
for either driver (rrxe: 66-80% softirq; rdma_rxe: about 50% user, 45% system), while a
profile of the same test counted 64% of rrxe's client samples in ``swapper``.
""".format(when=when.strftime("%Y-%m-%d %H:%M UTC"))]
    for test in sorted(prof):
        p = prof[test]

        def bw(drv):
            v = p.get((drv, "b", "bw"))
            return v[0][0] if v else "n/a"

        out.append("%s\n%s\n\nBandwidth during the profile: rrxe %s MB/s, rdma_rxe %s MB/s.\n"
                   % (test, "-" * len(test), bw("rrxe"), bw("rxe")))
        for guest, role in (("a", "server"), ("b", "client")):
            def comms(drv):
                return ", ".join("%s %s%%" % (c[1] if len(c) > 1 else "?", c[0])
                                 for c in p.get((drv, guest, "comm"), [])[:5]) or "n/a"

            def syms(drv):
                return [("%s%%" % c[0], demangle(c[1]) if len(c) > 1 else "?")
                        for c in p.get((drv, guest, "sym"), [])[:14]]

            def pkts(drv):
                n = {c[1]: c[0] for c in p.get((drv, guest, "count"), []) if len(c) > 1}
                return "%s sent, %s received, %s retransmitted" % (
                    n.get("sent_pkts", "0"), n.get("rcvd_pkts", "0"), n.get("retransmits", "0"))

            r, c = syms("rrxe"), syms("rxe")
            rows = []
            for i in range(max(len(r), len(c))):
                a = r[i] if i < len(r) else ("", "")
                b = c[i] if i < len(c) else ("", "")
                rows.append((a[0], a[1][:58], b[0], b[1][:58]))
            out.append("%s\n\n::\n\n%s\n"
                       % (textwrap.fill("Guest %s (%s). RoCE packets in the whole run: rrxe %s; "
                                        "rdma_rxe %s. By command: rrxe: %s; rdma_rxe: %s."
                                        % (guest, role, pkts("rrxe"), pkts("rxe"), comms("rrxe"),
                                           comms("rxe")), 92),
                          "\n".join("    " + l for l in table(("rrxe", "function", "rdma_rxe", "function"),
                                                                 rows).splitlines())))
    return "\n".join(out)


def svg_plot(path, title, unit, sizes, curves):
    """A line plot: sizes (log2 x axis) against values, one polyline per (label, colour, ys,
    ranges), the medians joined, each run's range (min, max, or None) drawn as a vertical
    bar with caps around its median, so the spread shows through TCG's noise."""
    W, H, L, R, T, B = 640, 380, 70, 20, 40, 60
    ys = [y for _, _, c, _ in curves for y in c if y is not None]
    ys += [r[1] for _, _, _, rs in curves for r in rs if r is not None]
    ymax = max(ys) if ys else 1.0
    mag = 10 ** math.floor(math.log10(ymax))
    step = next(m * mag for m in (0.1, 0.2, 0.25, 0.5, 1, 2, 2.5, 5, 10) if ymax / (m * mag) <= 6)
    top = step * math.ceil(ymax / step)
    lo, hi = math.log2(sizes[0]), math.log2(sizes[-1])

    def x(s):
        return L + (W - L - R) * ((math.log2(s) - lo) / (hi - lo) if hi > lo else 0.5)

    def y(v):
        return H - B - (H - T - B) * v / top

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="22" font-size="15" text-anchor="middle">%s</text>' % (W // 2, title)]
    v = 0.0
    while v <= top + step / 2:
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, y(v), W - R, y(v)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (L - 6, y(v) + 4, "%g" % round(v, 6)))
        v += step
    for s in sizes:
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (x(s), T, x(s), H - B))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x(s), H - B + 16, size_name(s)))
    out.append('<text x="%d" y="%d" text-anchor="middle">message size (log scale)</text>' % ((L + W - R) // 2, H - B + 36))
    out.append('<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">%s</text>' % ((T + H - B) // 2, (T + H - B) // 2, unit))
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>' % (L, T, W - L - R, H - T - B))
    for i, (label, colour, c, rs) in enumerate(curves):
        pts = [(x(s), y(v)) for s, v in zip(sizes, c) if v is not None]
        # The two drivers' bars side by side, 3 px either way of the size.
        dx = 3 if i == 0 else -3
        for s, r in zip(sizes, rs):
            if r is not None and r[1] > r[0]:
                bx = x(s) + dx
                out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" '
                           'stroke-width="1.5"/>' % (bx, y(r[0]), bx, y(r[1]), colour))
                out.extend('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>'
                           % (bx - 3, y(e), bx + 3, y(e), colour) for e in r)
        if pts:
            out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (colour, " ".join("%.1f,%.1f" % p for p in pts)))
            out.extend('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (px, py, colour) for px, py in pts)
        ly = T + 16 + 18 * i
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>' % (L + 12, ly - 4, L + 36, ly - 4, colour))
        out.append('<text x="%d" y="%d">%s</text>' % (L + 42, ly, label))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    res, doc, dur, runs, sdur = sys.argv[1:6]
    profile = profile_section(sys.argv[6]) if len(sys.argv) > 6 else ""
    samples, units, failed = load(res)
    med = {k: statistics.median(v) for k, v in samples.items()}

    def cell(drv, t):
        vs, nf = samples.get((drv, t)), failed.get((drv, t), 0)
        if not vs:
            return "failed (%d of %d runs)" % (nf, nf) if nf else "n/a"
        return (fmt(med[(drv, t)]) + (" (%s-%s)" % (fmt(min(vs)), fmt(max(vs))) if len(vs) > 1 else "")
                + (" [%d of %d runs failed]" % (nf, nf + len(vs)) if nf else ""))

    def ratio_of(t):
        r, c = med.get(("rrxe", t)), med.get(("rxe", t))
        if not r or not c:
            return None
        return c / r if units.get(t) in LOWER_IS_BETTER else r / c

    def ratio(t):
        q = ratio_of(t)
        return "n/a" if q is None else "%.2fx" % q

    main_tests = [("ib_write_bw", "ib_write_bw (64 KiB)"), ("ib_read_bw", "ib_read_bw (64 KiB)"),
                  ("ib_send_bw", "ib_send_bw (64 KiB)"), ("ib_atomic_bw", "ib_atomic_bw"),
                  ("ib_write_lat", "ib_write_lat"), ("rc_pingpong_64B", "rc_pingpong_64B"),
                  ("rc_pingpong_1MiB", "rc_pingpong_1MiB"), ("ud_pingpong_64B", "ud_pingpong_64B"),
                  ("nvme_write_128k", "nvme_write_128k"), ("nvme_read_128k", "nvme_read_128k"),
                  ("ib_write_bw_q1", "ib_write_bw, 1 QP (-n)"),
                  ("ib_write_bw_q8", "ib_write_bw, 8 QPs (-n)"), ("ib_write_bw_q64", "ib_write_bw, 64 QPs (-n)"),
                  ("qp_create_connect", "1,000 QPs: create+RTS"), ("qp_destroy", "1,000 QPs: destroy"),
                  ("qp_memory", "1,000 QPs: memory"),
                  ("qp_churn", "QP create+RTS+destroy"),
                  ("cpu:ib_write_bw", "CPU, ib_write_bw"), ("cpu:ib_read_bw", "CPU, ib_read_bw"),
                  ("cpu:ib_send_bw", "CPU, ib_send_bw"),
                  ("smp2:ib_write_bw_q1", "2 vCPUs: ib_write_bw"),
                  ("smp2:ib_write_bw_q8", "2 vCPUs: ib_write_bw, 8 QPs"),
                  ("smp2:spread_a:ib_write_bw_q1", "2 vCPUs: spread a, 1 QP"),
                  ("smp2:spread_b:ib_write_bw_q1", "2 vCPUs: spread b, 1 QP"),
                  ("smp2:spread_a:ib_write_bw_q8", "2 vCPUs: spread a, 8 QPs"),
                  ("smp2:spread_b:ib_write_bw_q8", "2 vCPUs: spread b, 8 QPs")]
    hdr = ("test", "unit", "rrxe, median (range)", "rdma_rxe, median (range)", "rrxe vs rdma_rxe")
    rows = [(name, units.get(t, ""), cell("rrxe", t), cell("rxe", t),
             ratio(t))
            for t, name in main_tests if t in units]
    main_table = table(hdr, rows)
    tcp = med.get(("tcp", "iperf3"))

    # Sweeps: one table and one plot per tool.
    sweeps = {}
    for (drv, t) in samples:
        if t.startswith("sweep:"):
            _, tool, size = t.split(":")
            sweeps.setdefault(tool, set()).add(int(size))
    stem = os.path.splitext(doc)[0]
    sweep_text, slower = [], []
    for tool in ["ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_send_lat"]:
        if tool not in sweeps:
            continue
        sizes = sorted(sweeps[tool])
        key = lambda s: "sweep:%s:%d" % (tool, s)
        unit = units.get(key(sizes[0]), "")
        srows = []
        for s in sizes:
            q = ratio_of(key(s))
            srows.append((size_name(s), cell("rrxe", key(s)), cell("rxe", key(s)), ratio(key(s))))
            if q is not None and q < 1:
                slower.append("%s at %s (%.2fx)" % (tool, size_name(s), q))
        svg = "%s-%s.svg" % (stem, tool)
        def spread(drv):
            return [(min(samples[(drv, key(s))]), max(samples[(drv, key(s))]))
                    if samples.get((drv, key(s))) else None for s in sizes]

        svg_plot(svg, "%s: rrxe and rdma_rxe (median and range of %s runs)" % (tool, runs), unit,
                 sizes,
                 [("rrxe", "#d62728", [med.get(("rrxe", key(s))) for s in sizes], spread("rrxe")),
                  ("rdma_rxe", "#1f77b4", [med.get(("rxe", key(s))) for s in sizes], spread("rxe"))])
        sweep_text.append("%s\n%s\n\n.. image:: %s\n   :alt: %s, rrxe and rdma_rxe against message size\n\n::\n\n%s\n"
                          % (tool, "-" * len(tool), os.path.basename(svg), tool,
                             "\n".join("    " + l for l in table(
                                 ("size", "rrxe %s, median (range)" % unit,
                                  "rdma_rxe %s, median (range)" % unit, "rrxe vs rdma_rxe"),
                                 srows).splitlines())))

    # Issue 13's targets.
    def target(text, ok):
        return "- %s: **%s**" % (text, "met" if ok else ("not met" if ok is not None else "not measured"))

    def at_least(t, q):
        r = ratio_of(t)
        return None if r is None else r >= q

    targets = []
    for t in ("ib_write_bw", "ib_read_bw", "ib_send_bw"):
        targets.append(target("%s at 64 KiB at least 2x rdma_rxe (%s)" % (t, ratio(t)), at_least(t, 2)))
        r = med.get(("rrxe", t))
        targets.append(target("%s at 64 KiB at least 60%% of iperf3's TCP (%s of %s MB/s)"
                              % (t, fmt(r) if r else "n/a", fmt(tcp) if tcp else "n/a"),
                              None if not (r and tcp) else r >= 0.6 * tcp))
    for t in ("ib_write_lat", "rc_pingpong_64B"):
        targets.append(target("%s at least 1.5x better than rdma_rxe (%s)" % (t, ratio(t)), at_least(t, 1.5)))
    rc, ud = med.get(("rrxe", "rc_pingpong_64B")), med.get(("rrxe", "ud_pingpong_64B"))
    targets.append(target("RC round trip within 1.3x of the wire's datagram round trip "
                          "(rc_pingpong_64B %s vs ud_pingpong_64B %s usec)"
                          % (fmt(rc) if rc else "n/a", fmt(ud) if ud else "n/a"),
                          None if not (rc and ud) else rc <= 1.3 * ud))
    targets.append(target("no size in the sweeps where rrxe is slower than rdma_rxe%s"
                          % (" (slower: %s)" % "; ".join(slower) if slower else ""),
                          None if not sweeps else not slower))
    # The QP scaling runs move a fixed number of messages (-n): 64 QPs against 1, both so.
    q1 = med.get(("rrxe", "ib_write_bw_q1")) or med.get(("rrxe", "ib_write_bw"))
    q64 = med.get(("rrxe", "ib_write_bw_q64"))
    q64_failed = q64 is None and failed.get(("rrxe", "ib_write_bw_q64"))
    targets.append(target("with 64 QPs, aggregate bandwidth no lower than with 1 (%s vs %s MB/s)"
                          % (fmt(q64) if q64 else ("every run failed" if q64_failed else "n/a"),
                             fmt(q1) if q1 else "n/a"),
                          False if q64_failed else (None if not (q1 and q64) else q64 >= q1)))

    print(main_table)
    print("raw TCP between the guests (iperf3): %s MB/s" % (fmt(tcp) if tcp else "n/a"))
    print("\n".join(targets))
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    title = "rrxe benchmark: perftest against rdma_rxe"
    with open(doc, "w") as f:
        f.write(""".. SPDX-License-Identifier: GPL-2.0

{bar}
{title}
{bar}

Measured on {now} with ``make bench`` (``BENCH_DURATION={dur}``, ``BENCH_RUNS={runs}``,
``BENCH_SWEEP_DURATION={sdur}``): two QEMU guests without KVM (TCG), one vCPU each, on one
virtual datagram wire (``-netdev socket,udp=...``: UDP between the two QEMU processes on
127.0.0.1), on the bench kernel (Linux 7.3.4 with the test kernel's configuration minus lock
debugging, kmemleak, atomic-sleep checks and fault injection:
``scripts/config/bench.config``). Each guest runs
perftest against the other, over rrxe and over the C ``rdma_rxe`` in turn, interleaved
(rrxe, rdma_rxe, rrxe, ...) {runs} times each in the same run; each cell is the median,
with the range of the runs in parentheses, and the ratio is that of the medians: rrxe's
figure over rdma_rxe's where more is better, rdma_rxe's over rrxe's where less is (above 1
means rrxe is better).

Guest a runs the servers, guest b the clients. Bandwidth tests use 64 KiB messages and
``-D {dur}``, and ask for a completion for every message (``-Q 1``): perftest's default
signals one in 100 and counts 100 messages for each completion in its sampling window (the
middle half of the run), which at the 100-200 messages per second of these guests made a
64 KiB figure a count of a few completions, and 0 when none landed. ``rc_pingpong`` rows
are ``ibv_rc_pingpong`` (200 round trips of 64 B, 10 of 1 MiB), ``ud_pingpong_64B`` is ``ibv_ud_pingpong`` (200 round trips of 64 B: the wire's
datagram round trip through the driver, without a transport); ``nvme_*`` rows are NVMe over
RDMA (guest b's nvme-rdma against nvmet-rdma over a memory-backed null_blk on guest a),
sequential 128 KiB direct I/O with ``dd``, 32 MiB each way. ``ib_write_bw`` with 1, 8 and
64 QPs (``-q``, the aggregate) moves a fixed number of 64 KiB messages (1,024 by default,
shared among the QPs) instead of running for a duration: with many QPs, perftest's
sampling window under TCG can count no completion at all although every message moved. The QP rows are ``qp_cost`` (``tools/testing/rrxe``) in guest
b: 1,000 RC QPs of 64 send and 64 receive WRs, each taken to RTS (connected to itself), the
fall of ``MemFree`` while they exist (kernel and user memory, per QP), the rate of their
destruction, and 200 cycles of create, connect and destroy. The CPU rows are the CPU time
(user, system, irq and softirq, from ``/proc/stat``) both guests spent during the 64 KiB
bandwidth run, per GiB that crossed guest b's ``eth0`` in both directions. The ``2 vCPUs``
rows come from a second pair of guests with 2 vCPUs each (under TCG each vCPU is a host
thread, and the host's 2 cores carry all 4): the bandwidth over 1 and 8 QPs, and for each
guest the CPU time of its less busy CPU as a percentage of its busier one's (``spread``:
100 means the work was shared evenly, 0 that one CPU did it all).

Absolute numbers under TCG are far below real hardware and noisy; only the side-by-side
comparison in one run means something. A run that failed is counted in its cell (``[n of m
runs failed]``) and left out of the median.

::

{main}

Raw TCP between the guests (iperf3, the wire's ceiling): {tcp} MB/s.

Targets (issue 13)
==================

{targets}

Size sweeps
===========

Each size is one perftest run of ``-D {sdur}`` per driver and round (bandwidth runs with
``-Q 1``, as above); bandwidth in MB/s, latency as perftest's average in usec.

{sweeps}""".format(bar="=" * len(title), title=title, now=now, dur=dur, runs=runs, sdur=sdur,
                   main="\n".join("    " + l for l in main_table.splitlines()),
                   tcp=fmt(tcp) if tcp else "n/a", targets="\n".join(targets),
                   sweeps="\n".join(sweep_text) if sweep_text else "Not run (``BENCH_PARTS`` without ``sweep``).\n")
                + ("\n" + profile if profile else ""))
    print("written to %s" % doc)


if __name__ == "__main__":
    main()
