#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Per-QP shares of a bottleneck, from a capture of guest a's wire (scripts/cc-bench.sh).

Usage: cc-fairness.py PCAP QPS DEST_IP

Reads the RoCEv2 request packets (UDP port 4791, IPv4, more than 100 bytes of UDP
payload) sent to DEST_IP, names each by its BTH destination QP, and splits the QPs into
runs of QPS by the order in which they first appear (cc.sh's runs: congestion control
off, then on, each with QPS new QPs). For each run it counts the bytes each QP received in
the middle half of the run's time span (while all of them compete: a QP that finishes its
fixed number of messages early got more than its share before) and prints
`run <i> qps <n> span_s <s> jain <index> min_share <x> max_share <y>` (shares relative
to the fair one).
"""
import struct
import sys


def frames(path):
    with open(path, "rb") as f:
        hdr = f.read(24)
        magic = struct.unpack("<I", hdr[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            end = "<"
        elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
            end = ">"
        else:
            sys.exit(f"{path}: not a pcap file")
        nano = magic in (0xA1B23C4D, 0x4D3CB2A1)
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            sec, frac, incl, _ = struct.unpack(end + "IIII", rec)
            data = f.read(incl)
            yield sec + frac / (1e9 if nano else 1e6), data


def main():
    path, qps, dest = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    dest_b = bytes(int(x) for x in dest.split("."))
    first = {}
    pkts = []
    for t, fr in frames(path):
        off = 14
        if len(fr) < off + 20:
            continue
        etype = struct.unpack(">H", fr[12:14])[0]
        if etype == 0x8100:
            etype = struct.unpack(">H", fr[16:18])[0]
            off = 18
        if etype != 0x0800:
            continue
        ihl = (fr[off] & 0x0F) * 4
        if fr[off + 9] != 17 or fr[off + 16 : off + 20] != dest_b:
            continue
        udp = off + ihl
        if len(fr) < udp + 8 + 12:
            continue
        dport, ulen = struct.unpack(">H", fr[udp + 2 : udp + 4])[0], struct.unpack(">H", fr[udp + 4 : udp + 6])[0]
        if dport != 4791 or ulen < 108:
            continue
        bth = udp + 8
        qpn = int.from_bytes(fr[bth + 5 : bth + 8], "big")
        first.setdefault(qpn, t)
        pkts.append((t, qpn, ulen))
    order = sorted(first, key=first.get)
    runs = [order[i : i + qps] for i in range(0, len(order), qps)]
    for i, run in enumerate(runs):
        if len(run) < qps:
            break
        members = set(run)
        ts = [t for t, q, _ in pkts if q in members]
        lo, hi = min(ts), max(ts)
        a, b = lo + (hi - lo) / 4, hi - (hi - lo) / 4
        got = dict.fromkeys(run, 0)
        for t, q, n in pkts:
            if q in members and a <= t <= b:
                got[q] += n
        x = list(got.values())
        s, s2 = sum(x), sum(v * v for v in x)
        jain = s * s / (len(x) * s2) if s2 else 0.0
        fair = s / len(x) if x else 0
        print(
            f"run {i} qps {len(x)} span_s {hi - lo:.2f} jain {jain:.3f} "
            f"min_share {min(x) / fair if fair else 0:.2f} max_share {max(x) / fair if fair else 0:.2f}"
        )


if __name__ == "__main__":
    main()
