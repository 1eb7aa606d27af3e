"""The hostile captures of tests/test_hostile.py and of docs/benchmarks.md's timings, made with the project's encoders:
Iceball file transfers over TCP (tools/make_iceball_captures.file_transfer) carrying a zlib bomb, a large
legitimate Lua file, incompressible bytes; blank chunks inflating past blank's limit. Written to tests/tmp
(never committed: they are large)."""
from __future__ import annotations

import os
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import fuzz  # noqa: E402
from make_iceball_captures import PORT, counted, file_transfer, lua  # noqa: E402

TMP = ROOT / "tests" / "tmp"


def bomb(size: int) -> bytes:
    """zlib of `size` zero bytes, made piecewise (a 10 GiB bomb compresses to ~10 MB)."""
    z = zlib.compressobj(9)
    piece, out = bytes(1 << 24), []
    for _ in range(size >> 24):
        out.append(z.compress(piece))
    out.append(z.flush())
    return b"".join(out)


def lua_file(size: int) -> bytes:
    """A script of numbered functions (compresses about 6:1, as real Lua source does)."""
    out, n, i = [], 0, 0
    while n < size:
        line = f"function f{i}(x, y) return x * {i * 7919 % 10007} + y - {i} end -- step {i}\n".encode()
        out.append(line)
        n += len(line)
        i += 1
    return b"".join(out)[:size]


def iceball_transfer(name: str, *, content: bytes = b"", compressed: bytes | None = None, ulen: int | None = None,
                     block: int = 60000) -> Path:
    """A request, the transfer, and a chat message after it (it must still be decoded)."""
    start, *rest = file_transfer(content, block=block, compressed=compressed)
    if ulen is not None:
        start = start[:5] + ulen.to_bytes(4, "little")
    steps = [("c2s", counted(0x30, b"big.lua", bytes([3]))), ("s2c", start), *[("s2c", b) for b in rest],
             ("c2s", lua("CHAT_SEND", "z", "after the transfer"))]
    path = TMP / name
    TMP.mkdir(parents=True, exist_ok=True)
    fuzz.write_frames(path, fuzz.tcp_session(steps, PORT))
    return path


def zlib_bomb() -> Path:                       # 10 MB of zlib inflating to 10 GiB
    return iceball_transfer("hostile-zlib-bomb.pcap", compressed=bomb(10 << 30), ulen=1000)


def large_lua() -> Path:                       # a legitimate 60 MiB Lua file
    return iceball_transfer("hostile-60mib-lua.pcap", content=lua_file(60 << 20))


def junk() -> Path:                            # 10 MiB of incompressible transfer data
    return iceball_transfer("hostile-10mib-junk.pcap", compressed=os.urandom(10 << 20), ulen=10 << 20)


def blank_bombs(count: int = 20, name: str = "hostile-blank-bombs.pcap") -> Path:
    """`count` blank chunk transfers of 64 KiB (the chunk limit) each inflating to 64 MiB (blank's limit: 1 MiB),
    then a chat message that must still be decoded."""
    import struct

    import dpkt

    from bench import CLIENT_PORT, SERVER_PORT, _frame
    from protodump.dissectors.blank import PROTOCOL
    data = zlib.compress(bytes(64 << 20), 9)
    seq = [0]

    def pkt(values, raw=b""):
        seq[0] += 1
        if raw:
            out = bytearray()
            PROTOCOL.header.encode({"seq": seq[0], "ack": 0, "ack_history": 0, "type": 10}, out)
            return bytes(out) + raw
        return PROTOCOL.encode({"seq": seq[0], "ack": 0, "ack_history": 0, **values})

    payloads = []
    for tid in range(1, count + 1):
        payloads.append(pkt({"type": 9, "transmission_id": tid, "flags": 1, "coords": (0, 0, 0),
                             "data_size": len(data)}))
        for off in range(0, len(data), 1400):
            piece = data[off:off + 1400]
            payloads.append(pkt(None, struct.pack("<III", tid, off, len(piece)) + piece))
    payloads.append(pkt({"type": 12, "msg_type": 0, "referral": 0, "text": "after the bombs"}))
    path = TMP / name
    TMP.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for i, payload in enumerate(payloads):
            w.writepkt(_frame(payload, SERVER_PORT, CLIENT_PORT, i & 0xFFFF), ts=1.7e9 + i * 0.001)
    return path


ALL = {"zlib-bomb": zlib_bomb, "60mib-lua": large_lua, "10mib-junk": junk, "blank-bombs": blank_bombs}

if __name__ == "__main__":
    for name in sys.argv[1:] or ALL:
        print(ALL[name]())
