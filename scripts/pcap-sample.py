#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Writes a small pcap with at most N RoCEv2 frames per opcode of a classic pcap capture.

Usage: pcap-sample.py IN.pcap OUT.pcap [N]

Used to turn a capture of real traffic (e.g. the C rdma_rxe between two guests) into a
committed fixture for the host tests (tools/rrxe/tests/fixtures/). Frames are kept as they
are; only Ethernet + IPv4/IPv6 + UDP port 4791 frames are considered.
"""
import struct
import sys


def roce_opcode(frame):
    """Returns the BTH opcode of an Ethernet RoCEv2 frame, or None."""
    if len(frame) < 14:
        return None
    ethertype = struct.unpack_from("!H", frame, 12)[0]
    off = 14
    if ethertype == 0x8100 and len(frame) >= 18:
        ethertype = struct.unpack_from("!H", frame, 16)[0]
        off = 18
    if ethertype == 0x0800 and len(frame) >= off + 20:
        ihl = (frame[off] & 0x0F) * 4
        if frame[off + 9] != 17:
            return None
        off += ihl
    elif ethertype == 0x86DD and len(frame) >= off + 40:
        if frame[off + 6] != 17:
            return None
        off += 40
    else:
        return None
    if len(frame) < off + 8 + 12 or struct.unpack_from("!H", frame, off + 2)[0] != 4791:
        return None
    return frame[off + 8]


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    limit = int(sys.argv[3]) if len(sys.argv) == 4 else 3
    data = open(sys.argv[1], "rb").read()
    magic = data[:4]
    endian = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">"}.get(magic)
    if endian is None:
        sys.exit("not a classic pcap file")
    out = [data[:24]]
    counts = {}
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack_from(endian + "I", data, off + 8)[0]
        rec = data[off:off + 16 + incl]
        off += 16 + incl
        op = roce_opcode(rec[16:])
        if op is None or counts.get(op, 0) >= limit:
            continue
        counts[op] = counts.get(op, 0) + 1
        out.append(rec)
    open(sys.argv[2], "wb").write(b"".join(out))
    print(" ".join(f"{op:#04x}:{n}" for op, n in sorted(counts.items())))


if __name__ == "__main__":
    main()
