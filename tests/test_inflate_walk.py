"""The deflate block walk (engine/inflate.py deflate_walk, lua/rt_inflate.lua rt.deflate_walk): one method, in both
halves, for where a permessage-deflate stream stands after a message: ended (a final block), between two blocks on a
byte boundary (`clean`: the plugin resumes the next message from the window), or inside a block (a damaged message:
its input is carried in front of the next one). Checked against zlib itself: after a `clean` stream, a message
deflated afresh from a block boundary must inflate to its text; after any other, it must not."""
from __future__ import annotations

import json
import random
import shutil
import subprocess
import zlib

import pytest
from hypothesis import given, settings, strategies as st

from conftest import PLUGIN
from protodump.engine.inflate import InflateError, deflate_walk

LIMIT, WINDOW = 1 << 20, 32768
TAIL = b"\x00\x00\xff\xff"


def cases(n: int, seed: int = 5) -> list[bytes]:
    """Deflated messages as permessage-deflate sends them, + 00 00 ff ff: whole, cut at any byte (often inside a
    block), with a flipped bit, or ended by a final block."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        text = bytes(rng.choice(b"abcdefgh ") for _ in range(rng.randrange(0, 3000))) + rng.randbytes(rng.randrange(80))
        z = zlib.compressobj(rng.choice([0, 1, 6, 9]), zlib.DEFLATED, -15)
        data = (z.compress(text) + z.flush(zlib.Z_SYNC_FLUSH))[:-4]
        if i % 4 == 1:
            data = data[:rng.randrange(len(data) + 1)]
            data = data[:-4] if len(data) >= 4 else data       # its own last bytes give way to the tail
        elif i % 4 == 3:
            z = zlib.compressobj(6, zlib.DEFLATED, -15)
            data = z.compress(text) + z.flush() + bytes(rng.randrange(3))   # a final block ends it (junk after)
        elif i % 4 == 2 and data:
            flipped = bytearray(data)
            flipped[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            data = bytes(flipped)
        out.append(data + TAIL)
    return out


def zlib_view(message: bytes):
    """(output size, "final" | "eof", whether a fresh message can follow on a block boundary), or "bad"."""
    d = zlib.decompressobj(-15)
    try:
        size = len(d.decompress(message))
    except zlib.error:
        return "bad"
    if d.eof:
        return size, "final", True
    z = zlib.compressobj(6, zlib.DEFLATED, -15)
    follow = z.compress(b"next message, from a block boundary") + z.flush(zlib.Z_SYNC_FLUSH)
    try:
        resumed = d.decompress(follow) == b"next message, from a block boundary"
    except zlib.error:
        resumed = False
    return size, "eof", resumed


def python_view(message: bytes):
    try:
        size, _, ended, clean = deflate_walk(message, 0, LIMIT, 0, WINDOW, True)
    except InflateError:
        return "bad"
    return size, ended, clean


def test_python_walk_is_zlib():
    seen = {"bad": 0, "final": 0, "clean": 0, "inside": 0}
    for message in cases(900):
        want, got = zlib_view(message), python_view(message)
        assert got == want, message.hex()
        seen["bad" if got == "bad" else got[1] if got[1] == "final" else "clean" if got[2] else "inside"] += 1
    assert min(seen.values()) > 10, seen


def test_block_end_one_bit_before_a_byte_boundary():
    """A block whose end-of-block code stops one bit short of a byte boundary, the input ending there: the next
    block's first header bit is that bit. The stream is not between blocks on a byte boundary (a walk that read the
    header bit by bit once said it was, where zlib's inflate needs that bit)."""
    for message in cases(3000, seed=11):
        if python_view(message) == "bad":
            continue
        for cut in range(1, 9):       # the message cut short just after an end-of-block
            head = message[:-cut]
            got, want = python_view(head), zlib_view(head)
            assert got == want, head.hex()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 40000), st.booleans())
def test_prop_walk_never_raises_anything_else(data, history, resumable):
    """Any bytes: an InflateError or an answer, never another exception; what zlib refuses the walk refuses."""
    try:
        size, pos, ended, clean = deflate_walk(data, 0, 4096, history, WINDOW, resumable)
    except InflateError:
        return
    assert 0 <= size <= 4096 and ended in ("final", "eof")
    if not resumable:
        assert ended == "final" and 0 < pos <= len(data)
    if history >= WINDOW:     # no distance can reach before the data: zlib with that history agrees
        d = zlib.decompressobj(-15, zdict=bytes(WINDOW))
        try:
            out = d.decompress(data)
        except zlib.error:
            pytest.fail(f"the walk took what zlib refuses: {data.hex()}")
        if ended == "final":
            assert len(out) == size and d.eof


@pytest.mark.parametrize("lua", ["lua5.2", "lua5.4"])
def test_lua_walk_is_python_walk(tmp_path, lua):
    """The plugin's walk gives the same answer as the Python one on every case, clean or not."""
    if shutil.which(lua) is None:
        pytest.skip(f"{lua} is not installed")
    messages = cases(400) + [m[:-cut] for m in cases(200, seed=11) for cut in (1, 2, 3, 5)]
    (tmp_path / "cases.txt").write_text("\n".join(m.hex() for m in messages) + "\n")
    script = tmp_path / "walk.lua"
    script.write_text(f"""
rt = {{}}
dofile({json.dumps(str(PLUGIN.parent / "rt_inflate.lua"))})
for hex in io.lines({json.dumps(str(tmp_path / "cases.txt"))}) do
  local s = hex:gsub("..", function(h) return string.char(tonumber(h, 16)) end)
  local ok, out, _, ended, clean = pcall(rt.deflate_walk, s, 1, {LIMIT}, 0, {WINDOW}, true)
  if not ok then print("bad")
  else print(string.format("%d %s %s", out, ended, tostring(ended == "final" or clean == true))) end
end
""")
    got = subprocess.run([lua, str(script)], capture_output=True, text=True, check=True).stdout.splitlines()
    want = [v if v == "bad" else f"{v[0]} {v[1]} {str(v[2]).lower()}" for v in map(python_view, messages)]
    assert got == want
