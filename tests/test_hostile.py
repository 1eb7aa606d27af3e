"""Hostile input through both halves: the Lua errors found by fuzzing stay fixed, the plugin's inflate is as strict
as Python's and bounded (a zlib bomb, junk, a file over the limit cost tshark + plugin little), and protodump and
the plugin still show the same game layers."""
from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from conftest import CAPTURES_DIR, LUA_ERROR, PLUGIN, ROOT, layers_of, packet_layers

sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))
import fuzz  # noqa: E402
import hostile_captures  # noqa: E402
from protodump.engine.inflate import inflate  # noqa: E402

ENET = sorted(p.name for p in CAPTURES_DIR.glob("enet-*.pcap")) + ["iceball-enet-session.pcap"]


def same_layers(ours: str, theirs: str, names) -> list[int]:
    a, b = packet_layers(ours), packet_layers(theirs)
    assert len(a) == len(b)
    return [i + 1 for i, (x, y) in enumerate(zip(a, b)) if any(layers_of(x, n) != layers_of(y, n) for n in names)]


@pytest.mark.parametrize("name", ENET)
def test_enet_checksum_on_registers_its_expert(name, protodump_run, tshark_run):
    args = ("-o", "enet.checksum:on", "-T", "json", "-r", name)
    theirs = tshark_run(*args).stdout
    assert not LUA_ERROR.search(theirs) and "Dissector error" not in theirs
    if name != "enet-checksum.pcap":                 # no CRC on the wire: the 4 bytes read as one are bad
        assert '"Bad checksum"' in theirs
    assert same_layers(protodump_run(*args).stdout, theirs, ("enet", "iceball")) == []


def test_empty_texture_at_the_end_of_a_segment(tmp_path, protodump_run, tshark_run):
    """An image of 0 bytes (a single final chunk of length 0) announced by a digest: the plugin once asked a
    zero-length range of an empty range (Range is out of bounds)."""
    from make_rutentoy_captures import PORT, c2s, digest, image, message, s2c, texture
    steps = c2s(*message("c2s", 1, 5, "LOGIN carol pass"))
    steps += c2s(*message("c2s", 2, 5, f"HASTEX {digest(b'')}"))
    steps += s2c(*message("s2c", 1, 5, "HAVETEX 0"))
    steps += c2s(*texture("c2s", 0, 0x7E57, b""))
    steps += c2s(*texture("c2s", 0, 0x7E58, image(8, 1)))
    path = tmp_path / "empty-texture.pcap"
    fuzz.write_frames(path, fuzz.tcp_session(steps, PORT))
    theirs = tshark_run("-T", "json", "-r", str(path)).stdout
    assert not LUA_ERROR.search(theirs) and "Dissector error" not in theirs
    assert "Image of 0 bytes is too short for QOI" in theirs
    assert same_layers(protodump_run("-T", "json", "-r", str(path)).stdout, theirs, ("rutentoy",)) == []


# --- the inflater: as strict as Python's zlib, and bounded ---------------------------------------------------------

def zlib_cases(count: int, seed: int = 14) -> list[bytes]:
    """Valid streams of every block type and window size, and mutations of them: bit flips, truncations, a bad
    Adler-32, no final block, a preset-dictionary flag, a bomb over the limit."""
    rng = random.Random(seed)
    text = (ROOT / "README.md").read_bytes()
    out = []
    for i in range(count):
        content = rng.choice([text[:rng.randrange(1, 20000)], bytes(rng.randrange(1, 5000)),
                              rng.randbytes(rng.randrange(1, 3000)), b"ab" * rng.randrange(1, 3000)])
        level, wbits = rng.choice([0, 1, 6, 9]), rng.choice([9, 12, 15])
        z = zlib.compressobj(level, zlib.DEFLATED, wbits)
        stream = z.compress(content) + z.flush()
        kind = i % 6
        if kind == 1:
            stream = bytearray(stream)
            for _ in range(rng.randint(1, 3)):
                stream[rng.randrange(len(stream))] ^= 1 << rng.randrange(8)
            stream = bytes(stream)
        elif kind == 2:
            stream = stream[:rng.randrange(len(stream))]
        elif kind == 3:
            stream = stream[:-1] + bytes([stream[-1] ^ 0x40])
        elif kind == 4:
            z = zlib.compressobj(level, zlib.DEFLATED, wbits)
            stream = z.compress(content) + z.flush(zlib.Z_SYNC_FLUSH)
        elif kind == 5 and i % 12 == 5:
            stream = zlib.compress(bytes(3 << 20), 9)
        out.append(stream)
    return out


@pytest.mark.parametrize("lua", ["lua5.2", "lua5.4"])
def test_lua_inflate_walk_is_as_strict_as_python(tmp_path, lua):
    if shutil.which(lua) is None:
        pytest.skip(f"{lua} is not installed")
    limit = 1 << 20
    # zlib of nothing is a valid stream of 0 bytes (both halves show an empty file); cut short it is not
    cases = zlib_cases(240) + [zlib.compress(b""), zlib.compress(b"", 9)[:-1]]
    (tmp_path / "cases.txt").write_text(json.dumps([c.hex() for c in cases]))
    script = tmp_path / "walk.lua"
    # the walk and the Adler-32 standalone; Wireshark's C inflate is played by Python's raw inflate here
    script.write_text(f"""
rt = {{}}
dofile({json.dumps(str(PLUGIN.parent / "rt_inflate.lua"))})
for line in io.lines({json.dumps(str(tmp_path / "walked.txt"))}) do
  local hex, raw = line:match("^(%x*) (%x*)$")
  local s = hex:gsub("..", function(h) return string.char(tonumber(h, 16)) end)
  local data = raw:gsub("..", function(h) return string.char(tonumber(h, 16)) end)
  local ok, size, at = pcall(rt.inflate_walk, s, {limit})
  local verdict = "bad"
  if ok and size == #data then
    local a, b, c, d = s:byte(at, at + 3)
    if rt.adler32(data) == ((a * 256 + b) * 256 + c) * 256 + d then verdict = string.format("%d", size) end
  end
  print(verdict)
end
""")
    lines = []
    for c in cases:
        raw = b""
        try:                                          # what the C inflate would make of the deflate data
            raw = zlib.decompressobj(-15).decompress(c[2:], limit + 1)
        except zlib.error:
            pass
        lines.append(f"{c.hex()} {raw.hex()}")
    (tmp_path / "walked.txt").write_text("\n".join(lines) + "\n")
    got = subprocess.run([lua, str(script)], capture_output=True, text=True, check=True).stdout.split()
    want = [str(len(d)) if (d := inflate(c, limit)) is not None else "bad" for c in cases]
    assert want[-2:] == ["0", "bad"]
    assert got == want
    assert 40 < sum(v != "bad" for v in want) < 200          # both verdicts well represented


@pytest.mark.parametrize("make", ["bomb", "junk", "over_limit"])
def test_hostile_transfers_cost_the_plugin_little(make, tmp_path, monkeypatch, protodump_run, tshark_run):
    """A 1 MB zlib bomb (1 GiB), 4 MiB of junk and a file announced over the inflate limit: tshark + plugin is
    done in seconds (before the limits: minutes and gigabytes), decodes the message after it, and agrees with
    protodump."""
    monkeypatch.setattr(hostile_captures, "TMP", tmp_path)
    path = {
        "bomb": lambda: hostile_captures.iceball_transfer("bomb.pcap", compressed=hostile_captures.bomb(1 << 30),
                                                          ulen=1000),
        "junk": lambda: hostile_captures.iceball_transfer("junk.pcap", compressed=random.Random(3).randbytes(4 << 20),
                                                          ulen=4 << 20, block=1024),
        "over_limit": lambda: hostile_captures.iceball_transfer("big.pcap",
                                                                content=hostile_captures.lua_file(20 << 20)),
    }[make]()
    started = time.monotonic()
    theirs = tshark_run("-T", "json", "-r", str(path)).stdout
    assert time.monotonic() - started < 30
    assert not LUA_ERROR.search(theirs)
    assert "after the transfer" in theirs
    assert ("exceeds the limit" if make == "over_limit" else "File does not inflate") in theirs
    assert same_layers(protodump_run("-T", "json", "-r", str(path)).stdout, theirs, ("iceball",)) == []


# --- values tshark formats its own way ----------------------------------------------------------------------------

def test_special_floats_and_int32_wrap_print_alike(tmp_path, protodump_run, tshark_run):
    """Velocities of -0, negative and positive NaN, infinities and denormals, and an Entity Update whose base plus
    relative chunk position passes 2^31 (abs_chunk_pos wraps as an FT_INT32): the same JSON and -V text."""
    import dpkt

    from bench import CLIENT_PORT, SERVER_PORT, _entity_state, _frame
    from protodump.dissectors.blank import PROTOCOL
    rng = random.Random(1)
    specials = [struct_float(b) for b in (b"\x00\x00\x00\x80", b"\x00\x00\xc0\xff", b"\x00\x00\xc0\x7f",
                                          b"\x00\x00\x80\x7f", b"\x00\x00\x80\xff", b"\x01\x00\x00\x00",
                                          b"\xff\xff\x7f\x00", b"\x01\x00\x00\x80")]
    payloads = []
    for seq in range(len(specials)):
        state = _entity_state(rng)
        state["velocity"] = (specials[seq], specials[-seq - 1], -0.0)
        payloads.append(PROTOCOL.encode({"seq": seq, "ack": 0, "ack_history": 0, "type": 4, "state": state,
                                         "movement": (0, 0, 1), "actions": 0, "slot": 0}))
    ents = [{"entity_id": 3, "ustate": _entity_state(rng, relative=True)}]
    ents[0]["ustate"]["chunk_pos"] = (1, -1, 1)
    payloads.append(PROTOCOL.encode({"seq": 20, "ack": 0, "ack_history": 0, "type": 7, "count": 1,
                                     "base": (2147483647, -2147483648, 5), "entities": ents}))
    path = tmp_path / "specials.pcap"
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for i, p in enumerate(payloads):
            w.writepkt(_frame(p, CLIENT_PORT if i < len(specials) else SERVER_PORT,
                              SERVER_PORT if i < len(specials) else CLIENT_PORT, i), ts=1.7e9 + i)
    theirs = tshark_run("-T", "json", "-r", str(path)).stdout
    assert '"-nan"' in theirs and '"-2147483648"' in theirs
    assert same_layers(protodump_run("-T", "json", "-r", str(path)).stdout, theirs, ("blank",)) == []

    def blank_text(text: str) -> list[str]:
        out, inside = [], False
        for line in text.splitlines():
            if not line.startswith(" "):
                inside = line.startswith("blank")
            if inside:
                out.append(line)
        return out
    assert blank_text(protodump_run("-V", "-r", str(path)).stdout) == blank_text(tshark_run("-V", "-r", str(path)).stdout)


def struct_float(raw: bytes) -> float:
    import struct
    return struct.unpack("<f", raw)[0]


def test_trailing_stray_characters_as_wireshark_adds_them(tmp_path, protodump_run, tshark_run):
    """A counted Iceball string holding a NUL then more bytes: Wireshark adds its own expert to the string item
    (not for NULs only after it, nor when the NUL follows an invalid byte); protodump shows the same."""
    from make_iceball_captures import PORT, counted
    steps = [("c2s", counted(0x30, name, bytes([3]))) for name in (b"ab\x00cd", b"ab\x00\x00", b"\xff\x00\x00x")]
    path = tmp_path / "stray.pcap"
    fuzz.write_frames(path, fuzz.tcp_session(steps, 20737))
    theirs = tshark_run("-T", "json", "-r", str(path)).stdout
    assert theirs.count("_ws.string.trailing_stray_characters") == 1
    assert same_layers(protodump_run("-T", "json", "-r", str(path)).stdout, theirs, ("iceball",)) == []




@pytest.mark.parametrize("form", [(), ("-V",), ("-q", "-z", "expert"), ("-V", "-z", "expert"), ("-T", "json")],
                         ids=" ".join)
def test_a_nul_in_a_file_name_ends_it_where_wireshark_ends_it(tmp_path, form, protodump_run, standard_run):
    """A file name holding a NUL (tools/fuzz.py --seed 2034, iceball-tcp case 3): Wireshark keeps an item's label,
    the Info column and an expert's message as C strings, so each ends at the NUL, and the plugin joins the name
    into its texts (Lua 5.2's string.format would cut it and go on). The "Trailing stray characters" expert
    proto.c adds to the string item counts in -z expert only where the tree is printed."""
    case, frames = fuzz.make_case("iceball-tcp", 2034, 3)
    path = tmp_path / "nul-name.pcap"
    fuzz.write_frames(path, frames)
    ours, theirs = protodump_run(*form, str(path)), standard_run(*form, "-r", str(path))
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout
    assert "\0" not in ours.stdout and "pkg/ba\ufffd" in ours.stdout
    if "expert" in form:
        assert ours.stdout.count("Trailing stray characters") == (3 if form[0] == "-V" else 0)   # (tree: 2)


def test_a_nul_in_a_file_name_on_the_other_wireshark(tmp_path, protodump_run, other_run):
    case, frames = fuzz.make_case("iceball-tcp", 2034, 3)
    path = tmp_path / "nul-name.pcap"
    fuzz.write_frames(path, frames)
    assert same_layers(protodump_run("-T", "json", str(path)).stdout,
                       other_run("-T", "json", "-r", str(path)).stdout, ("iceball",)) == []
