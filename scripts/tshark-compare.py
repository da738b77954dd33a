#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Cross-checks rrxe-decode against Wireshark's own InfiniBand dissector on one capture.

Usage: tshark-compare.py FILE.pcap RRXE_DECODE_OUTPUT

RRXE_DECODE_OUTPUT is `rrxe-decode FILE.pcap` (one line per RoCEv2 packet). tshark decodes
the same file; for every frame both must see a RoCEv2 packet, with the same opcode,
destination QP, PSN, AckReq bit, pad count and P_Key. Prints one summary line; the exit
status is 0 only if they agree on every packet (and there is at least one).
"""
import re
import subprocess
import sys

FIELDS = ["frame.number", "infiniband.bth.opcode", "infiniband.bth.destqp",
          "infiniband.bth.psn", "infiniband.bth.a", "infiniband.bth.padcnt",
          "infiniband.bth.p_key"]
LINE = re.compile(r"^(\d+): .* qpn=(0x[0-9a-f]+) psn=(0x[0-9a-f]+) ack=(\d) se=\d m=\d "
                  r"pad=(\d) pkey=(0x[0-9a-f]+) opcode=(0x[0-9a-f]+)")


def main():
    pcap, decoded = sys.argv[1], sys.argv[2]
    ours = {}
    with open(decoded) as f:
        for line in f:
            m = LINE.match(line)
            if m:
                n, qpn, psn, ack, pad, pkey, op = m.groups()
                ours[int(n)] = (int(op, 16), int(qpn, 16), int(psn, 16), int(ack),
                                int(pad), int(pkey, 16))
    cmd = ["tshark", "-r", pcap, "-Y", "infiniband", "-T", "fields", "-E", "separator=,"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    theirs = {}
    for line in out.splitlines():
        v = line.split(",")
        if len(v) == len(FIELDS) and all(v):
            theirs[int(v[0])] = tuple(int(x, 0) for x in v[1:])
    diff = sorted(set(ours) ^ set(theirs))
    differ = [n for n in sorted(set(ours) & set(theirs)) if ours[n] != theirs[n]]
    if ours and not diff and not differ:
        print("%d RoCEv2 packets, rrxe-decode and tshark agree on each (opcode, QPN, PSN, "
              "AckReq, pad, P_Key)" % len(ours))
        return 0
    for n in diff[:5]:
        print("frame %d: seen by %s only" % (n, "rrxe-decode" if n in ours else "tshark"))
    for n in differ[:5]:
        print("frame %d: rrxe-decode %s, tshark %s" % (n, ours[n], theirs[n]))
    print("%d packets (rrxe-decode), %d (tshark): %d seen by one only, %d differ"
          % (len(ours), len(theirs), len(diff), len(differ)))
    return 1


if __name__ == "__main__":
    sys.exit(main())
