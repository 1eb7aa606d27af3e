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
from protodump.engine.inflate import InflateError, deflate_walk, zlib_stands

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


# --- zlib_stands: the answer from zlib's own state where it can give one, which must be the walk's ---------------

def walk_answer(stream: bytes, history: int, carried_out: int = 0):
    """The walk's answer in zlib_stands' terms: "final", "clean", or None (inside a block, or refused)."""
    try:
        _, _, ended, clean = deflate_walk(stream, 0, LIMIT + carried_out, history, WINDOW, True)
    except InflateError:
        return None
    return "final" if ended == "final" else "clean" if clean else None


def zlib_answer(stream: bytes):
    """zlib_stands after a fresh decompressor took `stream`, or "refused" when zlib refuses it."""
    d = zlib.decompressobj(-15)
    try:
        d.decompress(stream)
    except zlib.error:
        return "refused"
    return zlib_stands(d)


def test_zlib_stands_is_the_walk_on_every_case():
    """On every message zlib takes, whole, cut (inside a block), damaged or ended by a final block: zlib_stands
    answers exactly where the walk says final or clean, and leaves every other one to the walk."""
    seen = {"final": 0, "clean": 0, None: 0}
    messages = cases(900) + [m[:-cut] for m in cases(600, seed=11) for cut in range(1, 9)]
    for message in messages:
        got = zlib_answer(message)
        if got != "refused":
            assert got == walk_answer(message, 0), message.hex()
            seen[got] += 1
    assert min(seen.values()) > 50, seen


def test_zlib_stands_follows_a_stream_across_messages():
    """A context kept across messages (context takeover), some messages cut inside a block: their input is carried
    in front of the next (as websocket.Inflater carries it) and the walk goes over all of it, from the last block
    boundary, with the output before it as history. Some end with a partial flush (a block ended off a byte
    boundary, then the tail: inside a block; what follows it is then mostly refused). zlib's answer is the walk's
    on every message."""
    rng = random.Random(3)
    answered = walked = 0
    for _ in range(60):
        comp = zlib.compressobj(rng.choice([1, 6, 9]), zlib.DEFLATED, -15)
        d, carry, history, carried_out = zlib.decompressobj(-15), b"", 0, 0
        for _ in range(12):
            text = bytes(rng.choice(b"abcdef \n") for _ in range(rng.randrange(1, 2000)))
            mode = rng.random()
            if mode < 0.25:            # a partial flush: the input ends after a block, off a byte boundary
                data = comp.compress(text) + comp.flush(zlib.Z_PARTIAL_FLUSH)
            else:
                data = (comp.compress(text) + comp.flush(zlib.Z_SYNC_FLUSH))[:-4]
            if mode > 0.9:
                data = data[:rng.randrange(len(data) + 1)]      # cut: zlib goes on inside a block
            try:
                out = d.decompress(data + TAIL)
            except zlib.error:
                break
            got = zlib_stands(d)
            stream = carry + data + TAIL
            assert got == walk_answer(stream, history, carried_out), stream.hex()
            answered += got is not None
            walked += got is None
            if got is None:
                carry, carried_out = stream, carried_out + len(out)
            elif got == "clean":
                history = min(WINDOW, history + carried_out + len(out))
                carry, carried_out = b"", 0
            else:
                break
    assert answered > 100 and walked > 10, (answered, walked)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(cases(40, seed=23)), st.binary(max_size=40), st.integers(0, 200))
def test_prop_zlib_stands_never_differs_from_the_walk(message, noise, cut):
    """Any bytes after a real message's start (hostile input): wherever zlib takes them and zlib_stands answers,
    the walk gives that answer."""
    stream = message[:cut] + noise
    got = zlib_answer(stream)
    if got not in ("refused", None):
        assert got == walk_answer(stream, 0)
