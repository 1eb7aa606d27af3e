#!/usr/bin/env python3
"""Build SCTP captures: Ethernet / IPv4 / SCTP frames with correct CRC32c checksums, written as a pcap.

This machine's kernel has no SCTP, so an association is written frame by frame: the four-way handshake, DATA
chunks (several per packet if asked), SACKs and the shutdown. tshark's own SCTP dissector checks the result
(tests/test_sctp.py: `-o sctp.checksum:CRC-32C`, every checksum "Good").

API::

    a = Association(client=("10.0.0.1", 40000), server=("10.0.0.2", 29778))
    a.handshake()                                  # INIT, INIT ACK, COOKIE ECHO, COOKIE ACK
    a.send("c2s", [data(b"...", sid=0)])           # one packet: these chunks (DATA chunks get TSN/SSN here)
    a.send("s2c", [data(b"...", sid=1), data(b"...", sid=1)])
    a.sack("s2c")                                  # a SACK of everything the client sent
    a.shutdown()
    a.write("out.pcap")

`data(payload, sid=0, ppid=0, flags=BEGIN | END)` is one DATA chunk; TSNs count per direction and SSNs per
(direction, stream) unless given (`tsn=`, `ssn=`: to make gaps, duplicates and reordering).
`chunk(type, flags, value)` is any other chunk.
"""
from __future__ import annotations

import socket
import struct

END, BEGIN, UNORDERED = 0x01, 0x02, 0x04
DATA, INIT, INIT_ACK, SACK, HEARTBEAT, HEARTBEAT_ACK, ABORT, SHUTDOWN, SHUTDOWN_ACK = 0, 1, 2, 3, 4, 5, 6, 7, 8
COOKIE_ECHO, COOKIE_ACK, SHUTDOWN_COMPLETE = 10, 11, 14


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def chunk(kind: int, flags: int, value: bytes) -> bytes:
    """One chunk: type, flags, length (without padding), value, zero padding to 4 bytes."""
    raw = struct.pack("!BBH", kind, flags, 4 + len(value)) + value
    return raw + bytes(-len(raw) % 4)


class Data:
    """A DATA chunk whose TSN / SSN are filled in when it is sent (unless given)."""

    def __init__(self, payload: bytes, sid: int = 0, ppid: int = 0, flags: int = BEGIN | END,
                 tsn: int | None = None, ssn: int | None = None):
        self.payload, self.sid, self.ppid, self.flags, self.tsn, self.ssn = payload, sid, ppid, flags, tsn, ssn

    def encode(self, tsn: int, ssn: int) -> bytes:
        return chunk(DATA, self.flags, struct.pack("!IHHI", tsn, self.sid, ssn, self.ppid) + self.payload)


data = Data


def packet(sport: int, dport: int, vtag: int, chunks: list[bytes]) -> bytes:
    """The SCTP packet (common header + chunks) with its CRC32c (stored little-endian, RFC 4960 appendix B)."""
    body = struct.pack("!HHII", sport, dport, vtag, 0) + b"".join(chunks)
    return body[:8] + struct.pack("<I", crc32c(body)) + body[12:]


def ethernet_ipv4(src: str, dst: str, proto: int, payload: bytes, ident: int = 0) -> bytes:
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, 0x4000, 64, proto, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    words = struct.unpack("!10H", ip)
    s = sum(words)
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    ip = ip[:10] + struct.pack("!H", ~s & 0xFFFF) + ip[12:]
    return b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + b"\x08\x00" + ip + payload


def write_pcap(path, frames: list[tuple[int, bytes]]) -> None:
    """frames: (timestamp in microseconds, Ethernet frame)."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for ts, frame in frames:
            f.write(struct.pack("<IIII", ts // 1_000_000, ts % 1_000_000, len(frame), len(frame)))
            f.write(frame)


class Association:
    """One SCTP association between two endpoints, written packet by packet."""

    def __init__(self, client=("10.0.0.1", 40000), server=("10.0.0.2", 29778), tags=(0x1A2B3C4D, 0x5E6F7081),
                 tsns=(1000, 5000), start_us: int = 1_700_000_000_000_000):
        self.ends = {"c2s": (client, server), "s2c": (server, client)}
        self.tags = {"c2s": tags[1], "s2c": tags[0]}      # a packet carries the peer's tag
        self.tsn = {"c2s": tsns[0], "s2c": tsns[1]}
        self.ssn: dict[tuple[str, int], int] = {}
        self.frames: list[tuple[int, bytes]] = []
        self.clock = start_us
        self.ident = 0

    def raw(self, way: str, chunks: list[bytes], vtag: int | None = None) -> None:
        (src, sport), (dst, dport) = self.ends[way]
        sctp = packet(sport, dport, self.tags[way] if vtag is None else vtag, chunks)
        self.ident += 1
        self.clock += 1000
        self.frames.append((self.clock, ethernet_ipv4(src, dst, 132, sctp, self.ident)))

    def send(self, way: str, chunks: list) -> None:
        """One packet of chunks; Data objects get the next TSN (and SSN of their stream, when B is set)."""
        out = []
        for c in chunks:
            if isinstance(c, Data):
                tsn = self.tsn[way] if c.tsn is None else c.tsn
                if c.tsn is None:
                    self.tsn[way] += 1
                key = (way, c.sid)
                ssn = self.ssn.get(key, 0) if c.ssn is None else c.ssn
                if c.ssn is None and c.flags & END:
                    self.ssn[key] = ssn + 1
                out.append(c.encode(tsn, ssn))
            else:
                out.append(c)
        self.raw(way, out)

    def handshake(self, streams: int = 4) -> None:
        init = struct.pack("!IIHHI", self.tags["s2c"], 65536, streams, streams, self.tsn["c2s"])
        self.raw("c2s", [chunk(INIT, 0, init)], vtag=0)
        cookie = struct.pack("!HH", 7, 4 + 8) + b"cookie!!"
        ack = struct.pack("!IIHHI", self.tags["c2s"], 65536, streams, streams, self.tsn["s2c"]) + cookie
        self.raw("s2c", [chunk(INIT_ACK, 0, ack)])
        self.raw("c2s", [chunk(COOKIE_ECHO, 0, b"cookie!!")])
        self.raw("s2c", [chunk(COOKIE_ACK, 0, b"")])

    def sack(self, way: str) -> None:
        """A SACK from `way`'s sender acknowledging everything the other side sent so far."""
        other = "s2c" if way == "c2s" else "c2s"
        self.raw(way, [chunk(SACK, 0, struct.pack("!IIHH", self.tsn[other] - 1, 65536, 0, 0))])

    def shutdown(self) -> None:
        self.raw("c2s", [chunk(SHUTDOWN, 0, struct.pack("!I", self.tsn["s2c"] - 1))])
        self.raw("s2c", [chunk(SHUTDOWN_ACK, 0, b"")])
        self.raw("c2s", [chunk(SHUTDOWN_COMPLETE, 0, b"")])

    def write(self, path) -> None:
        write_pcap(path, self.frames)


if __name__ == "__main__":
    import sys
    a = Association()
    a.handshake()
    a.send("c2s", [data(b"hello", sid=0)])
    a.send("s2c", [data(b"world", sid=1), data(b"again", sid=1)])
    a.sack("c2s")
    a.shutdown()
    a.write(sys.argv[1] if len(sys.argv) > 1 else "sctp-demo.pcap")
