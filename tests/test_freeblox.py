"""Freeblox over WebSocket: the table (every packet type, both directions), its text building blocks (UUID, JSON,
enum, "uuid:name" pairs, the sniffed asset buffer) in Python and in Lua, the first-message heuristic, bad input,
and the plugin's freeblox layer equal to protodump's in every frame of every Freeblox capture, in tshark 4.0 and
(where a Debian 13 root exists) tshark 4.4, fragmented and compressed messages included.
"""
from __future__ import annotations

import json
import math
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from conftest import layers_of, packet_layers
from protodump.dissectors.freeblox import PACKETS, PROTOCOL
from protodump.engine.blocks_vectors import Vec3
from protodump.engine.blocks_text import EnumString, JsonString, Rest, StringNT, UuidString
from protodump.engine.jsonscan import JsonError, JsonParser
from protodump.engine.fields import Array, Number
from protodump.engine.message_protocol import well_formed
from protodump.engine.sniff import sniff

ROOT = Path(__file__).resolve().parent.parent
FREEBLOX_CAPTURES = ["freeblox-session.pcap", "freeblox-plain.pcap", "freeblox-nocontext.pcap",
                     "freeblox-bad.pcap", "freeblox-burst.pcap", "websocket-bad.pcap", "freeblox-fragments.pcap",
                     "freeblox-fragments-nocontext.pcap", "freeblox-fragments-plain.pcap", "freeblox-v6.pcap"]
ALICE = "5bc8fbbc-bde5-4099-8164-d8399f767c45"


# --- parity with the plugin -----------------------------------------------------------------------------------

@pytest.mark.parametrize("wireshark", ["tshark_run", "other_run"])
@pytest.mark.parametrize("name", FREEBLOX_CAPTURES)
def test_freeblox_layer_parity(request, name, wireshark, protodump_run):
    tshark_run = request.getfixturevalue(wireshark)
    ours, theirs = protodump_run("-T", "json", name), tshark_run("-T", "json", "-r", name)
    assert "Lua Error" not in theirs.stdout + theirs.stderr and "_ws.lua.error" not in theirs.stdout
    a, b = packet_layers(ours.stdout), packet_layers(theirs.stdout)
    assert len(a) == len(b)
    compared = 0
    for i, (x, y) in enumerate(zip(a, b)):
        assert layers_of(x, "freeblox") == layers_of(y, "freeblox"), f"{name} frame {i + 1}"
        compared += len(layers_of(x, "freeblox"))
    assert compared >= 7


def test_port_preference_agrees_with_heuristic(protodump_run, tshark_run):
    """-o freeblox.ws_port:8765 gives what the heuristic gives (the port wins before any heuristic). tshark 4.0's
    ws.port table does not support Decode As (measured), so the preference is the plugin's way; protodump also
    takes -d ws.port==8765,freeblox."""
    extra = ("-o", "freeblox.ws_port:8765")
    decode_as = packet_layers(protodump_run("-T", "json", "-d", "ws.port==8765,freeblox",
                                            "freeblox-nocontext.pcap").stdout)
    ours = packet_layers(protodump_run("-T", "json", *extra, "freeblox-nocontext.pcap").stdout)
    theirs = packet_layers(tshark_run("-T", "json", *extra, "-r", "freeblox-nocontext.pcap").stdout)
    plain = packet_layers(protodump_run("-T", "json", "freeblox-nocontext.pcap").stdout)
    assert [layers_of(p, "freeblox") for p in ours] == [layers_of(p, "freeblox") for p in theirs] \
        == [layers_of(p, "freeblox") for p in plain] == [layers_of(p, "freeblox") for p in decode_as]


# --- the session: every packet type, both directions, the Info column ------------------------------------------------

@pytest.fixture(scope="module")
def session():
    from protodump import session as s
    return list(s.packets(ROOT / "captures" / "freeblox-session.pcap"))


def test_every_packet_type_both_directions(session):
    seen = {}
    for p in session:
        for layer in p.games:
            if layer.proto == "freeblox":
                seen.setdefault(layer.item.children[0].value, set()).add(p.decoded.sport == 8765)
    assert sorted(seen) == list(range(18))
    assert seen[1] == {True, False}                       # KEEPALIVE both ways
    assert seen[0] == seen[14] == seen[15] == seen[16] == {False}    # client -> server
    assert all(seen[c] == {True} for c in seen if c not in (0, 1, 14, 15, 16))


def test_info_tells_the_story(session):
    infos = [p.info for p in session]
    assert 'PLAYER_CHAT alice: "hi"' in infos
    assert 'STREAM_CHAT bob: "hello alice ✌"' in infos
    assert "STREAM_ASSET noise (Texture, 108278 bytes, PNG)" in infos


def test_values_of_the_session(session):
    values = {}
    for p in session:
        for abbrev in ("freeblox.stream_asset.buffer.width", "freeblox.stream_asset.buffer.height",
                       "freeblox.stream_asset.buffer.format", "freeblox.player.entry.player_name",
                       "freeblox.json.key", "freeblox.stream_transform.rotation.w"):
            values.setdefault(abbrev, []).extend(p.values(abbrev))
    assert list(zip(values["freeblox.stream_asset.buffer.format"], values["freeblox.stream_asset.buffer.width"],
                    values["freeblox.stream_asset.buffer.height"])) == \
        [("PNG", 16, 16), ("PNG", 200, 180), ("QOI", 32, 32), ("JPEG", 640, 480)]
    assert "glTF binary" in values["freeblox.stream_asset.buffer.format"]
    assert values["freeblox.player.entry.player_name"] == ["alice", "bob", "carol"]
    assert {"name", "position", "size", "x", "shirt"} <= set(values["freeblox.json.key"])
    assert math.isclose(values["freeblox.stream_transform.rotation.w"][0], 0.70710677, rel_tol=1e-6)


def test_bad_input_reported(protodump_run):
    out = protodump_run("-V", "freeblox-bad.pcap").stdout
    for message in ("Parent UUID is not a canonical UUID", "Object serialized data: invalid JSON at byte 12",
                    "Player name: invalid UTF-8", 'Unknown Asset type "Sound"', "Unknown packet type 18",
                    "Unknown packet type 200", "Sent by the server; only the client sends this packet",
                    "World name: no terminating NUL", "Player: no \":\" separator", "Truncated: Player needs",
                    "Truncated: Linear velocity needs 12 bytes, 10 left"):
        assert message in out, message


# --- round trips and random bytes ---------------------------------------------------------------------------------

TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=12)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=8)
F32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


def value_strategy(f):
    if isinstance(f, UuidString):
        return st.uuids().map(str)
    if isinstance(f, EnumString):
        return st.sampled_from(f.values)
    if isinstance(f, JsonString):
        return JSON_VALUES.map(json.dumps)
    if isinstance(f, StringNT):
        return TEXT
    if isinstance(f, Vec3):
        return st.tuples(*[F32] * len(f.elements))
    if isinstance(f, Rest):
        return st.binary(max_size=40)
    if isinstance(f, Number):
        return st.sampled_from(sorted(f.values)) if f.values else st.integers(0, 255)
    return None


@st.composite
def packet_values(draw, code):
    packet = PACKETS.cases[code]
    values = {"id": code}
    for f in packet.fields:
        if isinstance(f, Array):
            players = draw(st.lists(st.fixed_dictionaries({"player_uuid": st.uuids().map(str),
                                                           "player_name": TEXT}), max_size=4))
            values.update(count=len(players), players=players)
        elif f.name != "count":
            strategy = value_strategy(f)
            if strategy is not None:
                values[f.name] = draw(strategy)
    return values


@pytest.mark.parametrize("code", range(18))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_round_trip(code, data):
    values = data.draw(packet_values(code))
    decoded, tree = PROTOCOL.decode_values(PROTOCOL.encode(values))
    experts = [i.expert_info.message for i in tree.walk() if i.expert_info]
    assert experts == []
    for key, value in values.items():
        if key == "players":
            got = [{k: e[k] for k in ("player_uuid", "player_name")} for e in decoded["players"]]
            assert got == value
        else:
            assert decoded[key] == value, key


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=80))
def test_random_messages_never_crash(data):
    values, tree = PROTOCOL.decode_values(data)
    if data:
        assert tree.children[0].field.abbrev == "freeblox.id" and values["id"] == data[0]
    else:
        assert "Truncated" in tree.children[0].label


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 17).flatmap(lambda c: st.tuples(st.just(c), st.binary(max_size=40))))
def test_random_bodies_never_crash(pair):
    code, body = pair
    PROTOCOL.decode_values(bytes([code]) + body)


def test_heuristic_decides_on_the_first_message():
    auth = PROTOCOL.encode(dict(id=0, player_uuid=ALICE, session_token="t", client_version=1))
    chat = PROTOCOL.encode(dict(id=15, player_uuid=ALICE, chat_type="g", message="m"))
    match = PROTOCOL.heuristics["ws"]
    conv: dict = {}
    assert match(auth, conv) and match(chat, conv)        # accepted once: the rest of the connection
    conv = {}
    assert not match(chat, conv) and match(auth, conv) and match(chat, conv)   # from its first AUTH on
    assert not match(auth[:-1], {}) and not match(auth + b"x", {})
    assert not match(auth.replace(ALICE.encode(), b"x" * 36), {})


# --- JSON, UUID and sniffing: Python against its definition, Lua against Python -------------------------------------

def python_json_ok(raw: bytes) -> bool:
    try:
        JsonParser(raw).parse()
    except JsonError:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(st.one_of(JSON_VALUES.map(lambda v: json.dumps(v).encode()),
                 st.text("{}[]\",:0123456789.eE+-truefalsn \\u", max_size=24).map(str.encode)))
def test_json_parser_is_strict_json(raw):
    """Accepts exactly what Python's json module accepts (minus its NaN/Infinity extensions)."""
    def reject(constant):
        raise ValueError(constant)
    try:
        json.loads(raw, parse_constant=reject)
        expected = True
    except ValueError:
        expected = False
    assert python_json_ok(raw) == expected


def test_sniffed_formats():
    assert sniff(b"GIF89a\x20\x00\x10\x00") == ("GIF", 32, 16)
    assert sniff(b"BM" + bytes(12) + struct.pack("<Iii", 40, 64, -48)) == ("BMP", 64, 48)
    assert sniff(b"RIFF\0\0\0\0WEBPVP8X" + bytes(8) + (99).to_bytes(3, "little") + (49).to_bytes(3, "little")) \
        == ("WebP", 100, 50)
    assert sniff(b"DDS " + bytes(8) + struct.pack("<II", 128, 256)) == ("DDS", 256, 128)
    assert sniff(b"\xabKTX 20\xbb\r\n\x1a\n" + bytes(8) + struct.pack("<II", 8, 4)) == ("KTX2", 8, 4)
    assert sniff(b"plain bytes") is None


LUA = shutil.which("lua5.2") or shutil.which("lua5.4")
HARNESS = r"""
local function slurp(p) local f = io.open(p, "rb"); local s = f:read("*a"); f:close(); return s end
local src = {}
for i = 1, #arg do src[#src + 1] = slurp(arg[i]) end
local rt = assert(load(table.concat(src, "\n") .. "\nreturn rt\n"))()
local function unhex(h) return (h:gsub("..", function(x) return string.char(tonumber(x, 16)) end)) end
for line in io.lines() do
  local kind, hex = line:match("^(%a+) (%x*)$")
  local s = unhex(hex)
  if kind == "json" then
    local ok, err = pcall(rt.json_parse, s)
    print(ok and "ok" or err.msg)
  elseif kind == "sniff" then
    local f, w, h = rt.sniff(s)
    print(string.format("%s %s %s", tostring(f), tostring(w), tostring(h)))
  elseif kind == "auth" then
    print(tostring(rt.well_formed(s, 1, { { "uuid" }, { "text" }, { "fixed", 1 } })))
  end
end
"""


def python_line(kind: str, raw: bytes) -> str:
    if kind == "json":
        try:
            JsonParser(raw).parse()
            return "ok"
        except JsonError as exc:
            return exc.message
    if kind == "sniff":
        found = sniff(raw) or (None, None, None)
        return " ".join("nil" if v is None else str(v) for v in found)
    return str(well_formed(PROTOCOL.first_shape, raw, 1)).lower()


@pytest.mark.skipif(LUA is None, reason="no standalone Lua")
def test_lua_text_blocks_match_python(tmp_path):
    """The Lua runtime's JSON parser, sniffer and first-message check give Python's answers on 1,500 inputs."""
    import random
    rng = random.Random(7)
    cases = []
    pieces = [b"{", b"}", b"[", b"]", b'"', b"\\", b"u00e9", b":", b",", b"1", b"-0.5e+3", b"true", b"nul",
              b" ", b"\x01", b"\xc3\xa9", b"a"]
    for _ in range(600):
        cases.append(("json", b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))))
    for _ in range(100):
        cases.append(("json", json.dumps(json.loads(json.dumps({"k": [1, {"x": None}], "s": "é"}))).encode()))
    heads = [b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF89a", b"qoif", b"BM", b"RIFF\0\0\0\0WEBPVP8 ",
             b"RIFF\0\0\0\0WEBPVP8L", b"RIFF\0\0\0\0WEBPVP8X", b"DDS ", b"\xabKTX 20\xbb\r\n\x1a\n", b"glTF"]
    for _ in range(500):
        cases.append(("sniff", rng.choice(heads) + rng.randbytes(rng.randint(0, 40))))
    auth = PROTOCOL.encode(dict(id=0, player_uuid=ALICE, session_token="tok", client_version=2))
    for _ in range(300):
        b = bytearray(auth)
        for _ in range(rng.randint(0, 2)):
            b[rng.randrange(len(b))] = rng.choice([0, 0x41, 0xff, 0x2d])
        cases.append(("auth", bytes(b[:rng.randint(len(b) - 3, len(b))])))
    harness = tmp_path / "harness.lua"
    harness.write_text(HARNESS)
    stdin = "".join(f"{kind} {raw.hex()}\n" for kind, raw in cases)
    from protodump.dissectors import PROTOCOLS
    from protodump.engine.lua_runtime import limits_line
    (tmp_path / "limits.lua").write_text(limits_line(PROTOCOLS) + "\n")
    pieces = [str(tmp_path / "limits.lua")] + [str(ROOT / "lua" / n)
                                              for n in ("runtime.lua", "rt_json.lua", "rt_sniff.lua", "rt_text.lua",
                                                        "rt_message_protocol.lua")]
    out = subprocess.run([LUA, str(harness), *pieces],
                         input=stdin, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    got = out.stdout.splitlines()
    assert len(got) == len(cases)
    for (kind, raw), line in zip(cases, got):
        assert line == python_line(kind, raw), (kind, raw)
    assert {python_line("json", c[1]) == "ok" for c in cases if c[0] == "json"} == {True, False}


# --- fuzz: random and mutated messages over a synthetic connection, plugin against protodump ------------------------

def tcp_pcap(path, segments, client=("127.0.0.1", 40999), server=("127.0.0.1", 8765)) -> None:
    """A pcap of one TCP connection (handshake, then one segment per (to_server, payload)), sequence numbers
    right, checksums zero (neither side checks them)."""
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
    seq = {True: 1000, False: 5000}

    def frame(to_server, flags, payload=b""):
        (sa, sp), (da, dp) = (client, server) if to_server else (server, client)
        tcp = struct.pack("!HHIIBBHHH", sp, dp, seq[to_server], seq[not to_server], 0x50, flags, 65535, 0, 0)
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0,
                         bytes(map(int, sa.split("."))), bytes(map(int, da.split("."))))
        data = bytes(12) + b"\x08\x00" + ip + tcp + payload
        n = len(out)
        out.extend(struct.pack("<IIII", 1_700_000_000, n % 1_000_000, len(data), len(data)) + data)
        seq[to_server] += len(payload) + (1 if flags & 0x02 else 0)

    frame(True, 0x02)
    frame(False, 0x12)
    frame(True, 0x10)
    for to_server, payload in segments:
        frame(to_server, 0x18, payload)
    path.write_bytes(bytes(out))


def fuzz_messages(seed: int, n: int = 250) -> list[tuple[bool, bytes]]:
    """Real messages of every type (random values), then truncated, extended, with flipped bytes, or noise after
    a random id; the client's first message is a well-formed AUTH so the heuristic takes the connection."""
    import random
    rng = random.Random(seed)
    words = ["alice", "", "é✌", "a:b", "{\"k\": [1, true, null]}", "[1,", "00000000-0000-0000-0000-00000000000g",
             "Texture", "Mesh", "Sound", str(ALICE)]
    out = [(True, PROTOCOL.encode(dict(id=0, player_uuid=ALICE, session_token="t", client_version=1)))]
    for _ in range(n):
        code = rng.randrange(18)
        values = {"id": code, "count": rng.randrange(4), "jump": rng.randrange(3)}
        for f in PACKETS.cases[code].fields:
            if isinstance(f, StringNT):
                values[f.name] = rng.choice(words + [str(ALICE)] * 3)
            elif isinstance(f, Vec3):
                values[f.name] = tuple(rng.uniform(-1e3, 1e3) for _ in f.elements)
            elif isinstance(f, Rest):
                values[f.name] = rng.choice([b"", rng.randbytes(30), b"\x89PNG\r\n\x1a\n" + rng.randbytes(20),
                                             b"\xff\xd8\xff\xc0\x00\x11\x08" + rng.randbytes(12)])
        values["players"] = [{"player_uuid": rng.choice([ALICE, "x"]), "player_name": rng.choice(words)}
                             for _ in range(rng.randrange(3))]
        data = bytearray(PROTOCOL.encode(values, unknown="ignore"))     # one values dict for every packet type
        kind = rng.randrange(5)
        if kind == 1:
            data = data[:rng.randint(1, len(data))]
        elif kind == 2:
            data += rng.randbytes(rng.randint(1, 8))
        elif kind == 3:
            for _ in range(rng.randint(1, 3)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif kind == 4:
            data = bytearray([rng.randrange(256)]) + rng.randbytes(rng.randint(0, 40))
        out.append((code in (0, 14, 15, 16) if rng.random() < 0.9 else rng.random() < 0.5, bytes(data)))
    return out


def upgrade(deflate: bool) -> list[tuple[bool, bytes]]:
    from protodump.dissectors.ws_handshake import accept_key
    key = "x3JJHMbDL1EzLkh9GBhXDw=="
    ext = "Sec-WebSocket-Extensions: permessage-deflate\r\n" if deflate else ""
    return [(True, f"GET /game HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{ext}\r\n".encode()),
            (False, f"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    f"Sec-WebSocket-Accept: {accept_key(key)}\r\n{ext}\r\n".encode())]


@pytest.mark.parametrize("wireshark", ["tshark_run", "other_run"])
@pytest.mark.parametrize("seed,deflate", [(1, False), (2, False), (3, True)])
def test_fuzz_parity(request, tmp_path, seed, deflate, wireshark, protodump_run):
    tshark_run = request.getfixturevalue(wireshark)
    """250 random and mutated messages (both directions; with permessage-deflate and its per-direction
    context in one run): the plugin's freeblox layer is protodump's in every frame, and no Lua error."""
    import zlib
    from protodump.dissectors.websocket import encode_frame
    segments = upgrade(deflate)
    packers = {side: zlib.compressobj(wbits=-15) for side in (True, False)}
    for to_server, message in fuzz_messages(seed):
        if deflate:
            z = packers[to_server]
            message = (z.compress(message) + z.flush(zlib.Z_SYNC_FLUSH))[:-4]
        segments.append((to_server, encode_frame(2, message, rsv=4 if deflate else 0,
                                                 mask=b"\x01\x02\x03\x04" if to_server else None)))
    pcap = tmp_path / f"fuzz-{seed}.pcap"
    tcp_pcap(pcap, segments)
    ours, theirs = protodump_run("-T", "json", str(pcap)), tshark_run("-T", "json", "-r", str(pcap))
    assert "Lua Error" not in theirs.stdout + theirs.stderr and "_ws.lua.error" not in theirs.stdout
    assert "Dissector error" not in ours.stdout
    a, b = packet_layers(ours.stdout), packet_layers(theirs.stdout)
    assert len(a) == len(b) == len(segments) + 3
    assert sum(len(layers_of(x, "freeblox")) for x in a) == 251
    for i, (x, y) in enumerate(zip(a, b)):
        assert layers_of(x, "freeblox") == layers_of(y, "freeblox"), f"seed {seed} frame {i + 1} ({pcap})"


def websocket_fuzz_segments(seed: int) -> list[tuple[bool, bytes]]:
    """A permessage-deflate connection (one context per direction) carrying real and mutated messages, fragmented
    at random with control frames between fragments, and bad frames: inflate garbage, a continuation without a
    message, a message abandoned half way, an overstated length that swallows the next frame, a deflate bomb
    (20 MB of zeros in 20 KB), and messages after each."""
    import random
    import zlib
    from protodump.dissectors.websocket import encode_frame
    rng = random.Random(seed)
    packers = {side: zlib.compressobj(wbits=-15) for side in (True, False)}
    segments = upgrade(True)

    def frames(to_server, message, compress=True):
        mask = rng.randbytes(4) if to_server else None
        if compress:
            z = packers[to_server]
            message = (z.compress(message) + z.flush(zlib.Z_SYNC_FLUSH))[:-4]
        cuts = sorted(rng.sample(range(len(message) + 1), min(len(message) + 1, rng.randrange(1, 4))))
        parts = [message[a:b] for a, b in zip([0, *cuts], [*cuts, len(message)])]
        out = b""
        for i, part in enumerate(parts):
            out += encode_frame(2 if i == 0 else 0, part, fin=i == len(parts) - 1, rsv=4 if compress and i == 0 else 0,
                                mask=mask)
            if i < len(parts) - 1 and rng.random() < 0.5:
                out += encode_frame(rng.choice((9, 10)), rng.randbytes(rng.randrange(0, 10)), mask=mask)
        return out

    for i, (to_server, message) in enumerate(fuzz_messages(seed, 120)):
        data = frames(to_server, message, compress=rng.random() < 0.8)
        roll = rng.random()
        if roll < 0.04:
            data += encode_frame(2, rng.randbytes(rng.randrange(1, 40)), rsv=4, mask=b"\1\2\3\4" if to_server else None)
        elif roll < 0.07:
            data += encode_frame(0, message[:5], mask=b"\1\2\3\4" if to_server else None)
        elif roll < 0.10:
            data = encode_frame(2, message[:7], fin=False, mask=b"\1\2\3\4" if to_server else None) + data
        if i == 60:
            data += frames(False, bytes(20 << 20))
        if i == 100:           # an overstated 16-bit length: the frame runs into the next segment's frames
            data = b"\x82\x7e\x01\x00" + data[:40]
        # segments cut at random places: frames span segments and segments hold several frames
        while data:
            n = rng.randrange(1, 1400)
            segments.append((to_server, data[:n]))
            data = data[n:]
    return segments


@pytest.mark.parametrize("wireshark", ["tshark_run", "other_run"])
@pytest.mark.parametrize("seed", [7, 8])
def test_websocket_fuzz_parity(request, tmp_path, seed, wireshark, protodump_run):
    """Bad WebSocket streams: the plugin's freeblox layers are protodump's in every frame, no Lua error (the
    runner fails on one), and the bomb costs bounded time (the run finishes within the runner's timeout)."""
    tshark_run = request.getfixturevalue(wireshark)
    pcap = tmp_path / f"ws-fuzz-{seed}.pcap"
    segments = websocket_fuzz_segments(seed)
    tcp_pcap(pcap, segments)
    ours, theirs = protodump_run("-T", "json", str(pcap)), tshark_run("-T", "json", "-r", str(pcap))
    assert "Dissector error" not in ours.stdout and theirs.returncode == 0
    a, b = packet_layers(ours.stdout), packet_layers(theirs.stdout)
    assert len(a) == len(b) == len(segments) + 3
    # enough messages get through to make the comparison mean something (a junk compressed message breaks its
    # direction's shared deflate context for good, on both sides, so fewer than half of the 120 do)
    assert sum(len(layers_of(x, "freeblox")) for x in a) > 30
    for i, (x, y) in enumerate(zip(a, b)):
        assert layers_of(x, "freeblox") == layers_of(y, "freeblox"), f"seed {seed} frame {i + 1} ({pcap})"


def test_burst_shares_segments(protodump_run):
    """freeblox-burst.pcap: the server streams the world back to back (Nagle on), so TCP segments carry many
    compressed messages; each is its own websocket + freeblox layer pair, in order."""
    layers = packet_layers(protodump_run("-T", "json", "freeblox-burst.pcap").stdout)
    per_frame = [len(layers_of(p, "freeblox")) for p in layers]
    assert max(per_frame) >= 5 and sum(per_frame) == 23
    ids = [get_id(layer) for p in layers for layer in layers_of(p, "freeblox")]
    assert sorted(set(ids)) == list(range(18))


def get_id(layer) -> int:
    return int(next(v for k, v in layer if k == "freeblox.id"))
