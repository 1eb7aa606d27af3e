#!/usr/bin/env python3
"""Range decoder throughput: protodump's decoders (engine/rangecoder.py: `decompress`, which runs libenet's own
when the system has it, and `decompress_python`, the Python decoder, compiled with engine/rangecoder.pxd's C types
when the compiled hot path is built, api/compiled.py; PROTODUMP_PURE=1 times its pure Python) against libenet's
own (Debian's libenet7 through ctypes, one output buffer reused: the leanest call from Python) on the same inputs,
as MB/s of decompressed output and a ratio; the Lua twin (lua/rt_rangecoder.lua) under standalone lua5.2 / lua5.4
too.

    python tools/bench_rangecoder.py                 # captures + synthetic 1400-byte datagrams
    python tools/bench_rangecoder.py --size 200 --count 2000 --repeat 5 --no-lua

Inputs: every compressed datagram of the ENet captures (replayed to about --count x --size bytes), and synthetic
ENet-like datagrams (command headers, small integers, text) compressed by libenet. Each timing is CPU time (as
Lua's os.clock), so that a loaded machine skews no ratio: the best of --repeat runs (the Lua ones: the mean of
--repeat passes inside one process).

This file also holds the ctypes binding to libenet's range coder (`Oracle`), the extraction of compressed
datagrams from captures and the standalone Lua driver, which tests/test_rangecoder.py reuses.
"""
from __future__ import annotations

import argparse
import ctypes
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from protodump.engine.rangecoder import ENetBuffer, load_libenet  # noqa: F401 (the tests take them from here)

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ROOT / "lua" / "rt_rangecoder.lua"
CAPTURE_DIRS = [ROOT / "captures", ROOT.parent / "shared" / "captures"]

# Reads "limit hex" lines, decodes each `repeat` times (arg[2], default 1), prints "OK hex" or "ERR message" per
# line and the decoding time in seconds (os.clock) on stderr. Also checks that bad arguments do not raise.
LUA_DRIVER = r"""
rt = {}
dofile(arg[1])
local repeats = tonumber(arg[2] or "1")
local vectors = {}
for line in io.lines() do
  local limit, hex = line:match("^(%d+) (%x*)$")
  vectors[#vectors + 1] = { hex:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end),
                            tonumber(limit) }
end
local outs, errs, start = {}, {}, os.clock()
for _ = 1, repeats do
  for i, v in ipairs(vectors) do outs[i], errs[i] = rt.range_decompress(v[1], v[2]) end
end
io.stderr:write(string.format("%.6f\n", (os.clock() - start) / repeats))
for i = 1, #vectors do
  local out = outs[i]
  if out then io.write("OK ", (out:gsub(".", function(ch) return string.format("%02x", ch:byte()) end)), "\n")
  else io.write("ERR ", errs[i], "\n") end
end
assert(rt.range_decompress(nil, 10) == nil and rt.range_decompress("x", nil) == nil)
assert(rt.range_decompress("x", 0 / 0) == nil)
"""


class Oracle:
    """One libenet range coder context (libenet restarts the model on every call, as ENet does per datagram)."""

    def __init__(self, lib):
        self.lib, self.ctx = lib, lib.enet_range_coder_create()

    def __del__(self):
        if getattr(self, "ctx", None):
            self.lib.enet_range_coder_destroy(self.ctx)

    def compress(self, *pieces: bytes) -> bytes:
        """enet_range_coder_compress over `pieces` as ENet's buffers (b"" for empty input, as libenet's 0)."""
        keep = [ctypes.create_string_buffer(bytes(b), len(b) or 1) for b in pieces]
        arr = (ENetBuffer * len(pieces))(*(ENetBuffer(ctypes.cast(k, ctypes.c_void_p), len(b))
                                           for k, b in zip(keep, pieces)))
        total = sum(map(len, pieces))
        out = ctypes.create_string_buffer(2 * total + 64)
        n = self.lib.enet_range_coder_compress(self.ctx, arr, len(pieces), total, out, len(out))
        return out.raw[:n]

    def decompress(self, data: bytes, limit: int) -> bytes:
        """libenet's output; b"" where it returns 0 (its failure)."""
        out = ctypes.create_string_buffer(max(limit, 1))
        n = self.lib.enet_range_coder_decompress(self.ctx, bytes(data), len(data), out, limit)
        return out.raw[:n]


def run_lua(lua: str, vectors: list[tuple[bytes, int]], repeat: int = 1) -> tuple[list[str], float]:
    """The Lua decoder's answers ("OK hex" / "ERR message") for (data, limit) vectors, and its decode time."""
    with tempfile.TemporaryDirectory() as tmp:
        driver = Path(tmp) / "driver.lua"
        driver.write_text(LUA_DRIVER)
        stdin = "".join(f"{limit} {data.hex()}\n" for data, limit in vectors)
        proc = subprocess.run([lua, str(driver), str(RUNTIME), str(repeat)], input=stdin, capture_output=True,
                              text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{lua}: {proc.stderr}")
    return proc.stdout.splitlines(), float(proc.stderr.split()[-1])


def capture_datagrams(folders: list[Path]) -> list[tuple[str, int, bytes]]:
    """(capture, frame, compressed bytes) of every UDP datagram whose ENet header has the COMPRESSED flag (peerID
    bit 14) in the enet*/iceball* captures of `folders` (first folder wins for a name): the range coder's data
    starts after the 2-byte header, the 2-byte sentTime (bit 15) and, in the captures named *checksum*
    (recorded with ENet checksums on), the 4-byte CRC-32."""
    import dpkt

    found, seen = [], set()
    for folder in folders:
        for path in sorted([*folder.glob("enet*.pcap"), *folder.glob("iceball*.pcap")]):
            if path.name in seen:
                continue
            seen.add(path.name)
            with path.open("rb") as f:
                for frame, (_, buf) in enumerate(dpkt.pcap.Reader(f), 1):
                    ip = dpkt.ethernet.Ethernet(buf).data
                    if not isinstance(getattr(ip, "data", None), dpkt.udp.UDP):
                        continue
                    payload = bytes(ip.data.data)
                    peer = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 0
                    if peer & 0x4000:
                        start = (4 if peer & 0x8000 else 2) + (4 if "checksum" in path.name else 0)
                        found.append((path.name, frame, payload[start:]))
    return found


def enet_like(rnd: random.Random, size: int) -> bytes:
    """A datagram's worth of ENet commands: headers, small big-endian integers, some text."""
    out = bytearray()
    while len(out) < size:
        kind = rnd.choice((6, 7, 1, 9))
        out += bytes((kind | 0x80, rnd.randrange(2), 0, rnd.randrange(256)))
        if kind == 1:
            out += rnd.randrange(1 << 16).to_bytes(2, "big") + rnd.randrange(1 << 16).to_bytes(2, "big")
            continue
        body = rnd.choice((b"player moved to ", b"chat: hello there ", b"\x00\x01\x00\x00\x00\x02"))
        body += bytes(rnd.randrange(0, 40) for _ in range(rnd.randrange(4, 40)))
        out += len(body).to_bytes(2, "big") + body
    return bytes(out[:size])


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=1400, help="bytes per datagram before compression")
    ap.add_argument("--count", type=int, default=300, help="datagrams")
    ap.add_argument("--repeat", type=int, default=3, help="runs per timing (best kept)")
    ap.add_argument("--no-lua", action="store_true")
    args = ap.parse_args(argv)
    from protodump.engine.rangecoder import decompress, decompress_python

    lib = load_libenet()
    if lib is None:
        print("libenet7 not found (apt-get install libenet7)", file=sys.stderr)
        return 1
    import protodump.engine.rangecoder as module
    print("python = decompress_python, " + ("compiled with its .pxd's types: " + module.__file__
                                            if not module.__file__.endswith(".py") else "pure Python (not compiled)"))
    oracle = Oracle(lib)
    rnd = random.Random(1)
    sets = {"synthetic": [oracle.compress(enet_like(rnd, args.size)) for _ in range(args.count)]}
    real = [d for name, _, d in capture_datagrams(CAPTURE_DIRS) if "bad" not in name]
    if real:
        sets["captures"] = real * max(1, args.count * args.size // sum(len(oracle.decompress(d, 4096)) for d in real))
    for label, packed in sets.items():
        plain = [oracle.decompress(c, 4096) for c in packed]
        for fn in (decompress, decompress_python):
            assert all(fn(c, 4096) == p for c, p in zip(packed, plain)), f"{fn.__name__} disagrees with libenet"
        total, coded = sum(map(len, plain)), sum(map(len, packed))
        print(f"{label}: {len(packed)} datagrams, {total} bytes decompressed from {coded} ({coded / total:.1%})")
        run, ctx, buf = lib.enet_range_coder_decompress, oracle.ctx, ctypes.create_string_buffer(4096)
        t_c = best(lambda: [buf[:run(ctx, c, len(c), buf, 4096)] for c in packed], args.repeat)
        t_pd = best(lambda: [decompress(c, 4096) for c in packed], args.repeat)
        t_py = best(lambda: [decompress_python(c, 4096) for c in packed], args.repeat)
        mb = total / 1e6
        print(f"  libenet (ctypes) {mb / t_c:8.2f} MB/s")
        print(f"  decompress       {mb / t_pd:8.2f} MB/s   ratio decompress/libenet = {t_c / t_pd:.4f}")
        print(f"  python           {mb / t_py:8.2f} MB/s   ratio python/libenet = {t_c / t_py:.4f}")
        for lua in ([] if args.no_lua else ["lua5.2", "lua5.4"]):
            if shutil.which(lua) is None:
                continue
            answers, t_lua = run_lua(lua, [(c, 4096) for c in packed], args.repeat)
            assert answers == ["OK " + p.hex() for p in plain], f"{lua} disagrees"
            print(f"  {lua:16} {mb / t_lua:8.2f} MB/s   ratio {lua}/libenet = {t_c / t_lua:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
