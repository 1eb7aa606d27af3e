"""Hand-made Ethernet/IPv4/TCP frames carrying MPTCP options (each its own connection), for tests/test_mptcp.py:
every subtype the real capture (captures/rutentoy-mptcp.pcap) lacks, both MP_CAPABLE versions, the ADD_ADDR
forms, and a pcap writer."""
from __future__ import annotations

import struct


def _checksum(b: bytes) -> int:
    b += b"\0" * (len(b) % 2)
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    s = (s >> 16) + (s & 0xFFFF)
    return ~(s + (s >> 16)) & 0xFFFF


def frame(options: bytes, sport: int, dport: int = 29778, seq: int = 1000, ack: int = 2000, flags: int = 0x10) -> bytes:
    """One TCP segment (ACK) with these options after NOP, NOP, Timestamps (padded with NOPs to 32 bits)."""
    options = b"\x01\x01\x08\x0a" + struct.pack("!II", 1, 2) + options
    options += b"\x01" * (-len(options) % 4)
    tcp = struct.pack("!HHIIHHHH", sport, dport, seq, ack, (20 + len(options)) // 4 << 12 | flags, 512, 0, 0) + options
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 1, 0x4000, 64, 6, 0, b"\x7f\0\0\1", b"\x7f\0\0\1")
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    return b"\0" * 12 + b"\x08\x00" + ip + tcp


def mptcp(body: bytes) -> bytes:
    """An MPTCP option: kind 30, its length, then `body` (from the subtype byte on)."""
    return bytes([30, 2 + len(body)]) + body


def u(v: int, n: int) -> bytes:
    return v.to_bytes(n, "big")


WELL_FORMED = {
    "remove one address": mptcp(bytes([0x40, 0])),
    "remove three addresses": mptcp(bytes([0x40, 1, 2, 3])),
    "priority with address": mptcp(bytes([0x51, 2])),
    "priority": mptcp(bytes([0x50])),
    "fail": mptcp(bytes([0x60, 0]) + u(123456789012, 8)),
    "fast close": mptcp(bytes([0x70, 0]) + u(987654321, 8)),
    "tcp reset": mptcp(bytes([0x80, 0x0F, 0, 3])),
    "tcp reset reason": mptcp(bytes([0x8A, 0x01, 5])),
    "unknown subtype": mptcp(bytes([0xF0, 1, 2])),
    "dss mapping and checksum": mptcp(bytes([0x20, 0x04]) + u(1, 4) + u(5, 4) + u(10, 2) + b"\xab\xcd"),
    "dss data fin": mptcp(bytes([0x20, 0x15]) + u(77, 4) + u(1, 4) + u(5, 4) + u(10, 2)),
    "dss 64-bit": mptcp(bytes([0x20, 0x0F]) + u(1 << 40, 8) + u(7 << 33, 8) + u(9, 4) + u(100, 2)),
    "add address, port and hmac": mptcp(bytes([0x30, 3, 127, 0, 0, 3]) + u(8080, 2) + u(5, 8)),
    "add address echo": mptcp(bytes([0x31, 3, 127, 0, 0, 3]) + u(8080, 2)),
    "add ipv6 address": mptcp(bytes([0x30, 4]) + bytes(range(16)) + u(9, 8)),
    "add address version 0": mptcp(bytes([0x34, 4, 127, 0, 0, 3])),
    "capable version 0 no algorithm": mptcp(bytes([0x00, 0x80]) + u(5, 8)),
    "capable version 1 no algorithm": mptcp(bytes([0x01, 0x00]) + u(11, 8)),
    "capable version 0 sha1": mptcp(bytes([0x00, 0x01]) + u(21, 8) + u(22, 8)),
    "join of an unknown length": mptcp(bytes([0x10, 1]) + u(5, 4)),
    "join syn": mptcp(bytes([0x11, 7]) + u(0xDEADBEEF, 4) + u(42, 4)),
    "two options": mptcp(bytes([0x40, 9])) + mptcp(bytes([0x20, 0x01]) + u(3, 4)),
}


def write_pcap(path, frames) -> None:
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, data in enumerate(frames):
            f.write(struct.pack("<IIII", 1_700_000_000 + i, 0, len(data), len(data)) + data)


# options whose dissection tshark 4.0 ends in an exception ([Malformed Packet: MPTCP])
MALFORMED = {
    "capable of length 3": mptcp(bytes([0x00])),
    "dss claiming a data ack it lacks": mptcp(bytes([0x20, 0x01])),
    "dss claiming a mapping it lacks": mptcp(bytes([0x20, 0x0C]) + u(5, 4)),
    "no subtype": mptcp(b""),
    "fail cut short": mptcp(bytes([0x60, 0]) + u(1, 4)),
}
