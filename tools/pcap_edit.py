#!/usr/bin/env python3
"""Edit a classic pcap file frame by frame: drop, duplicate or reorder frames, to turn a real capture into one
with a lost segment, a retransmission or reordering (the kernel here has no netem); cut frames as a snap length
would.

API::

    records = read_pcap("in.pcap")                 # (global header, [record bytes, ...]) - records keep their
    write_pcap("out.pcap", header, [records[i] for i in order])   # own timestamps, in the order given
    reorder("in.pcap", "out.pcap", [1, 2, 4, 3, 5])                 # 1-based frame numbers: omit = drop,
                                                                    # repeat = duplicate
    tcp_segments("in.pcap")   # [(frame number, (src, sport, dst, dport), seq, payload)] of TCP frames with data
    with_tcp_payload(record, seq, payload)   # a copy of an Ethernet/IPv4/TCP record with another seq and payload
                                             # (e.g. a retransmission overlapping old and new bytes)
    record(frame, ts)                        # a record of frame bytes at time ts (the header's byte order: "<")
    snapped(record, n)                       # a copy of a record as a snap length of n bytes would have kept it
    snap_sweep(frames, start)                # records of each frame cut at every length from `start` to its end

CLI::

    python tools/pcap_edit.py in.pcap out.pcap 1,2,4,3,5
"""
from __future__ import annotations

import struct
import sys

_MAGICS = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">", b"\xa1\xb2\x3c\x4d": ">"}


def read_pcap(path) -> tuple[bytes, list[bytes]]:
    with open(path, "rb") as f:
        data = f.read()
    order = _MAGICS.get(data[:4])
    if order is None:
        raise ValueError(f"{path}: not a classic pcap file")
    pos, records = 24, []
    while pos + 16 <= len(data):
        incl = struct.unpack_from(order + "I", data, pos + 8)[0]
        records.append(data[pos:pos + 16 + incl])
        pos += 16 + incl
    return data[:24], records


def write_pcap(path, header: bytes, records: list[bytes]) -> None:
    with open(path, "wb") as f:
        f.write(header)
        f.writelines(records)


def reorder(src, dst, order: list[int]) -> None:
    header, records = read_pcap(src)
    write_pcap(dst, header, [records[n - 1] for n in order])


def tcp_segments(path) -> list[tuple[int, tuple, int, bytes]]:
    """The TCP frames with payload of an Ethernet/IPv4 pcap: (frame number, endpoints, raw seq, payload)."""
    _, records = read_pcap(path)
    out = []
    for number, record in enumerate(records, 1):
        frame = record[16:]
        if len(frame) < 54 or frame[12:14] != b"\x08\x00" or frame[23] != 6:
            continue
        ihl = (frame[14] & 15) * 4
        total = struct.unpack_from("!H", frame, 16)[0]
        tcp = 14 + ihl
        sport, dport, seq = struct.unpack_from("!HHI", frame, tcp)
        hl = (frame[tcp + 12] >> 4) * 4
        payload = frame[tcp + hl:14 + total]
        if payload:
            ends = (".".join(map(str, frame[26:30])), sport, ".".join(map(str, frame[30:34])), dport)
            out.append((number, ends, seq, payload))
    return out


def with_tcp_payload(record: bytes, seq: int, payload: bytes, order: str = "<") -> bytes:
    """A copy of one pcap record (Ethernet/IPv4/TCP) carrying `payload` at sequence number `seq`; lengths
    adjusted (IP header checksum recomputed; the TCP checksum is left stale: tshark does not check it by
    default)."""
    frame = bytearray(record[16:])
    ihl = (frame[14] & 15) * 4
    tcp = 14 + ihl
    hl = (frame[tcp + 12] >> 4) * 4
    frame = frame[:tcp + hl] + payload
    struct.pack_into("!H", frame, 16, ihl + hl + len(payload))
    struct.pack_into("!I", frame, tcp + 4, seq)
    struct.pack_into("!H", frame, 24, 0)
    words = struct.unpack_from(f"!{ihl // 2}H", frame, 14)
    total = sum(words)
    total = (total & 0xFFFF) + (total >> 16)
    total = (total & 0xFFFF) + (total >> 16)
    struct.pack_into("!H", frame, 24, ~total & 0xFFFF)
    ts1, ts2 = struct.unpack_from(order + "II", record, 0)
    return struct.pack(order + "IIII", ts1, ts2, len(frame), len(frame)) + bytes(frame)


def record(frame: bytes, ts: float, order: str = "<") -> bytes:
    """A pcap record of `frame`, wholly captured, at time `ts` (microseconds)."""
    sec, usec = divmod(round(ts * 1_000_000), 1_000_000)
    return struct.pack(order + "IIII", sec, usec, len(frame), len(frame)) + frame


def snapped(rec: bytes, n: int, order: str = "<") -> bytes:
    """A copy of a record with only its first `n` bytes captured (the length on the wire kept), as a capture
    with snap length `n` (editcap -s) has it."""
    sec, usec, incl, orig = struct.unpack_from(order + "IIII", rec, 0)
    keep = min(n, incl)
    return struct.pack(order + "IIII", sec, usec, keep, orig) + rec[16:16 + keep]


def snap_sweep(frames: list[bytes], start: int, t0: float = 1_700_000_000.0) -> list[bytes]:
    """Records of each frame cut at every length from `start` to one byte short of its end, one second
    apart: every place a snap length can cut its headers and payload."""
    out = []
    for frame in frames:
        for n in range(start, len(frame)):
            out.append(snapped(record(frame, t0 + len(out)), n))
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    reorder(argv[0], argv[1], [int(x) for x in argv[2].split(",")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
