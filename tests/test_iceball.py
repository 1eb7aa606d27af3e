"""Iceball (dissectors/iceball.py on engine/channel_protocol.py and the blocks it uses, with their lua/rt_*.lua twins):
the real server's sessions over ENet and TCP, captures made over real TCP and ENet sockets
(tools/make_iceball_captures.py), every packet built as the implementation builds it, file transfers, bad input,
table round trips, the Lua runtime standalone and on random messages in tshark (the captures' parity is in
tests/test_parity.py)."""
from __future__ import annotations

import difflib
import json
import random
import shutil
import struct
import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import CAPTURES_DIR, LUA_ERROR, PLUGIN, PROTODUMP, TSHARK, layers_of, packet_layers
from protodump.dissectors.iceball import IMPLEMENTED, PROTOCOL, SPEC
from protodump.engine import fields
from protodump.engine.blocks_dispatch import Fit
from protodump.engine.blocks_fixed_point import Packed, ScaledByte
from protodump.engine.blocks_framing import lua_steps, measure
from protodump.engine.blocks_vectors import Vec3
from protodump.engine.context import Ctx
from protodump.engine.tree import Item

sys.path.insert(0, str(CAPTURES_DIR.parent / "tools"))
import make_iceball_captures as mk  # noqa: E402 - the packet builders of the capture maker
from test_lua import write_pcap  # noqa: E402



# --- helpers ----------------------------------------------------------------------------------------------------------

def decode(payload: bytes, channel=None, prefs=None):
    """One message on its own: (info, values, tree, data sources)."""
    return Session()(payload, channel, prefs)


def experts(tree: Item) -> list[str]:
    return [n.expert_info.message for n in tree.walk() if n.expert_info is not None]


def find(tree: Item, abbrev: str):
    item = tree.find(abbrev)
    return None if item is None else item.value


class Session:
    """Messages decoded in order in one conversation, as the dispatcher does (shared conv, frame numbers)."""

    def __init__(self):
        self.conv: dict = {}
        self.frame = 0

    def __call__(self, payload: bytes, channel=None, prefs=None):
        self.frame += 1
        tree = Item(PROTOCOL.info, "Iceball", 0, len(payload), "Iceball")
        ctx = Ctx(payload, 0, len(payload), tree, PROTOCOL, self.conv, "a>b", self.frame, [])
        info = PROTOCOL.dissect(ctx, prefs or {}, channel)
        return info, ctx.scopes[0], tree, ctx.sources


def stream_pdus(stream: bytes) -> list[bytes]:
    """Cut a byte stream with pdu_length, as engine/streams.py does."""
    out, pos = [], 0
    while pos < len(stream):
        n = PROTOCOL.pdu_length(stream, pos, {}, "a>b", {})
        assert n > 0, (pos, stream[pos:pos + 8].hex())
        out.append(stream[pos:pos + n])
        pos += n
    return out


# --- the real sessions ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tcp_session(protodump_run):
    run = protodump_run("-T", "json", "iceball-tcp-session.pcap")
    assert run.returncode == 0, run.stderr
    return [layers_of(p, "iceball") for p in packet_layers(run.stdout)]


def values(layer, key):
    return [v for k, v in _walk(layer) if k == key]


def _walk(obj):
    """(key, value) of every member of a pairs-parsed JSON object, nested ones included."""
    if isinstance(obj, list):
        for member in obj:
            if isinstance(member, tuple):
                yield member
                yield from _walk(member[1])


def test_real_tcp_session_every_packet_named(tcp_session):
    """The real server over TCP: 46 packets in 25 frames, every one named, the Lua file reassembled and
    inflated to its announced 9,992 bytes, its text shown."""
    layers = [layer for frame in tcp_session for layer in frame]
    assert len(layers) == 46
    lua = Counter(int(v, 16) for layer in layers for v in values(layer, "iceball.lua_id"))
    assert lua == {4: 10, 3: 10, 19: 4, 6: 2, 17: 2, 32: 2, 15: 2, 18: 1, 39: 1, 24: 1, 25: 1, 7: 1, 13: 1}
    system = Counter(v for layer in layers for v in values(layer, "iceball.id") if int(v, 16) < 0x40)
    assert system == {"0x0f": 1, "0x30": 1, "0x31": 1, "0x33": 4, "0x32": 1}
    text = json.dumps(layers)
    assert "iceball.file.inflated_size\", \"9992\"" in text
    assert "This file is part of Ice Lua Components" in text
    assert "Unknown" not in text and "_ws.expert" not in text


@pytest.fixture(scope="module")
def enet_session(protodump_run):
    run = protodump_run("-T", "json", "iceball-enet-session.pcap")
    assert run.returncode == 0, run.stderr
    return [layer for p in packet_layers(run.stdout) for layer in layers_of(p, "iceball")]


def test_real_enet_session_every_message_named(enet_session):
    """The real server over ENet (range coder on): 437 messages handed up by ENet, channel 1 system packets and
    channel 0 base-mod packets as implemented, no expert item; three files reassembled from 358 blocks and
    inflated to their announced sizes, the map's size read from inside it."""
    layers = enet_session
    assert len(layers) == 437
    system = Counter(v for layer in layers for v in values(layer, "iceball.id"))
    assert system == {"0x33": 358, "0x30": 3, "0x31": 3, "0x32": 3, "0x0f": 1}
    lua = Counter(int(v, 16) for layer in layers for v in values(layer, "iceball.lua_id"))
    assert lua == {4: 20, 5: 20, 3: 9, 19: 4, 6: 2, 17: 2, 24: 2, 25: 2, 32: 2, 15: 2, 18: 1, 39: 1, 7: 1, 13: 1}
    files = [(values(x, "iceball.file.name")[0], int(values(x, "iceball.file.inflated_size")[0]),
              int(values(x, "iceball.file.blocks")[0])) for x in layers if values(x, "iceball.file.inflated_size")]
    assert files == [("pkg/base/main_client.lua", 9992, 4), ("*MAP", 2420086, 353),
                     ("pkg/base/gfx/font-mini.tga", 2492, 1)]
    assert [values(x, "iceball.icemap.xlen") + values(x, "iceball.icemap.ylen") + values(x, "iceball.icemap.zlen")
            for x in layers if values(x, "iceball.icemap.xlen")] == [["512", "96", "512"]]
    assert [values(x, "iceball.tga.width") + values(x, "iceball.tga.height")
            for x in layers if values(x, "iceball.tga.width")] == [["576", "8"]]
    assert not any(values(x, "_ws.expert.message") for x in layers)


def test_made_enet_session(protodump_run):
    """libenet hosts (pyenet) on real sockets: a CHAT_ADD_TEXT larger than the MTU is fragmented by ENet and
    decoded once reassembled; team chat; NADE_THROW in both directions' layouts; the client's unreliable
    positions."""
    run = protodump_run("-T", "json", "iceball-enet-all.pcap")
    layers = [layer for p in packet_layers(run.stdout) for layer in layers_of(p, "iceball")]
    assert len(layers) == 32 and not any(values(x, "_ws.expert.message") for x in layers)
    long_text = [values(x, "iceball.chat_add_text.msg")[0] for x in layers if values(x, "iceball.chat_add_text.msg")]
    assert long_text[-1] == "a message longer than one datagram " * 60
    assert values(layers[-1], "iceball.quit.msg") == ["bye"]
    assert [values(x, "iceball.chat_send_team.msg") for x in layers if values(x, "iceball.chat_send_team.msg")] == \
        [["team only"]]
    throws = [values(x, "iceball.nade_throw.pid") for x in layers if values(x, "iceball.nade_throw.fuse")]
    assert throws == [[], ["1"]]


@pytest.mark.parametrize("name,count", [("iceball-tcp-port-30000.pcap", 7), ("iceball-enet-port-31000.pcap", 6)])
def test_found_on_other_ports(protodump_run, name, count):
    """On ports nothing registers: over TCP by the first packet (BASE_DIR), over ENet by the connect data."""
    run = protodump_run("-T", "json", name)
    layers = [layer for p in packet_layers(run.stdout) for layer in layers_of(p, "iceball")]
    assert len(layers) == count and not any(values(x, "_ws.expert.message") for x in layers)
    assert any(values(x, "iceball.chat_send_team.msg") for x in layers)
    assert [values(x, "iceball.file.inflated_size") for x in layers if values(x, "iceball.file.inflated_size")] == \
        [[str(len(mk.JSON_FILE))]]
    assert not PROTOCOL.starts_stream(b"\x0f\x02a\x01\x00") and PROTOCOL.starts_stream(b"\x0f\x01a\x00\x31")


def test_enet_messages_by_channel():
    """Payloads taken by hand from the real capture: the same bytes mean a system packet on channel 1 and a
    base-mod packet on channel 0 (0x0F: BASE_DIR / CHAT_ADD_TEXT)."""
    info, v, tree, _ = decode(bytes.fromhex("0f08706b672f6261736500"), 1)
    assert info == 'BASE_DIR "pkg/base"' and v["base"] == "pkg/base"
    info, v, tree, _ = decode(bytes.fromhex("0f000080ff2a20506c6179657200"), 0)
    assert info == 'CHAT_ADD_TEXT "* Player"' and v["color"] == 0xFF800000
    info, v, tree, _ = decode(bytes.fromhex("1101 0000b342 00008e42 00803443 4000".replace(" ", "")), 0)
    assert v["pos"] == (89.5, 71.0, 180.5) and v["ya"] == 64 and info == "PLR_SPAWN pid=1"
    for payload, expect in [
        (bytes.fromhex("27c0eeff"), "FOG_COLOR r=192 g=238 b=255"),
        (bytes.fromhex("06010001010000000000007079626f740000"), 'PLR_ADD pid=1 "pybot" team=0'),
        (bytes.fromhex("13010057004c006c0101"), "ITEM_POS iid=1"),
        (bytes.fromhex("0300"), "KEEPALIVE"),
        (bytes.fromhex("0500000001"), "PLR_ORIENT pid=0 keys=1"),
    ]:
        info, v, tree, _ = decode(payload, 0)
        assert info == expect and experts(tree) == [], payload.hex()


# --- every packet, as the implementation builds it --------------------------------------------------------------------

def all_stream(direction: str) -> bytes:
    return b"".join(data for d, data in mk.all_session() if d == direction)


def test_made_session_every_base_mod_packet():
    """The capture maker's session (packets built with Iceball's pack strings), in order: every PDU framed,
    every implemented base-mod id seen, no expert item but the two aborts."""
    s = Session()
    seen, notes = Counter(), []
    for direction, data in mk.all_session():
        for pdu in stream_pdus(data):
            info, v, tree, _ = s(pdu)
            seen[v.get("lua_id", -v["id"])] += 1
            notes += experts(tree)
    assert set(range(1, 40)) <= set(seen) and len(IMPLEMENTED) == 39
    assert notes == ["Server aborted the transfer of *FASTLOAD (372 of 372 bytes)",
                     "Client aborted the transfer of pkg/base/big.lua (512 of 896 bytes)"]


def test_bad_capture_experts(protodump_run):
    """iceball-tcp-bad.pcap (real TCP): every bad message is an expert item on its own packet, in order, and
    framing goes on until the unknown system id, after which that direction is shown undecoded."""
    run = protodump_run("-T", "json", "iceball-tcp-bad.pcap")
    found = [m for p in packet_layers(run.stdout) for x in layers_of(p, "iceball")
             for m in values(x, "_ws.expert.message")]
    assert found == [
        "Unknown Lua packet id 45 (not a base-mod packet)", "Unknown Lua packet id 0 (not a base-mod packet)",
        "2 bytes after the inner packet", "Truncated: Colour (0xAARRGGBB) needs 4 bytes, 2 left",
        "Truncated: Yaw needs 1 byte, 0 left", "Block 90+20 lies beyond the transfer size 100",
        "File transfer ended with 0 of 100 bytes", "File does not inflate (zlib)",
        "File transfer started without a request", "File block with no file transfer active",
        "File end with no file transfer active", "Server aborts with no file transfer active",
        "Length 1500 is outside 1..1024", "File transfer ended with 1500 of 2000 bytes",
        "Client aborts with no file transfer active",
        "Cannot frame the stream (no PDU can start here): the rest of this direction is not decoded"]
    assert "FILE_END shuffled.json (92 -> 270 bytes)" in protodump_run("iceball-tcp-bad.pcap").stdout


def test_team_chat_info():
    info, v, tree, _ = decode(mk.lua("CHAT_SEND_TEAM", "z", "team only"))
    assert info == 'CHAT_SEND_TEAM "team only"'
    assert find(tree, "iceball.chat_send_team.msg") == "team only"
    assert find(tree, "iceball.lua_length") == 11


@pytest.mark.parametrize("name,fmt,args,expect", [
    ("PLR_POS", "Bffffff", (3, 1.5, 2.0, -3.25, 0.5, 0.0, 1.0), {"pid": 3, "pos": (1.5, 2.0, -3.25)}),
    ("PLR_ORIENT", "BbbB", (1, -5, 7, 0x60), {"ya": -5, "xa": 7, "keys": 0x60}),
    ("PLR_ADD", "BBBBhhhzz", (4, 1, 2, 3, -7, 8, 9, "ann", "sq"),
     {"team": 1, "weapon": 2, "mode": 3, "score": -7, "name": "ann", "squad": "sq"}),
    ("CHAT_ADD_KILLFEED", "Iz", (0xFF112233, "x killed y"), {"color": 0xFF112233, "msg": "x killed y"}),
    ("PLR_BLK_COUNT", "BH", (2, 1000), {"blocks": 1000}),
    ("NADE_THROW", "BhhhhhhH", (5, 32, 64, 96, 256, 512, -256, 250),
     {"pid": 5, "pos": (32, 64, 96), "vel": (256, 512, -256), "fuse": 250}),
    ("NADE_THROW", "hhhhhhH", (32, 64, 96, 256, 512, -256, 250), {"pos": (32, 64, 96), "fuse": 250}),
    ("PLR_GUN_RELOAD", "B", (9,), {"pid": 9}),
    ("TEAM_SCORE", "bh", (-1, -300), {"team": -1, "score": -300}),
    ("BUILD_BOX", "BhhhhhhBBBB", (2, -1, 2, 3, 4, 5, 6, 7, 8, 9, 10), {"box": 2, "x1": -1, "z2": 6, "type": 10}),
])
def test_implemented_layouts(name, fmt, args, expect):
    """Each packet as network.lua packs it decodes to the same values (positions are the wire values)."""
    body = bytes([mk.IDS[name]]) + mk.net_pack(fmt, *args)
    for payload, channel in ((body, 0), (mk.raw_lua(body), None)):
        info, v, tree, _ = decode(payload, channel)
        assert info.startswith(name) and experts(tree) == []
        for key, want in expect.items():
            assert v[key] == want, (key, v)
    if name == "NADE_THROW" and "pid" not in expect:
        assert "pid" not in v


def test_spec_numbering_preference():
    """The spec's numbering: no KEEPALIVE, ids from 3 one lower; its own layouts (11.5 fixed-point positions)."""
    spec = {"iceball.numbering": "spec"}
    info, v, tree, _ = decode(bytes([3, 7]) + struct.pack("<hhh", 320, -64, 16), 0, spec)
    assert info == "PLR_POS pid=7"
    pos = tree.find("iceball.plr_pos_spec.pos")
    assert [c.value for c in pos.children if c.generated] == [10.0, -2.0, 0.5]
    info, v, tree, _ = decode(bytes([13]) + b"psst\0", 0, spec)
    assert info == 'CHAT_SEND_TEAM "psst"'
    assert find(tree, "iceball.lua_id_spec") == 13
    info, *_ = decode(bytes([13]) + b"psst\0", 0)
    assert info == 'CHAT_SEND "psst"'
    assert set(SPEC) == set(range(1, 33))


def test_spec_capture(protodump_run):
    """iceball-tcp-spec.pcap (packets as the spec document numbers and lays them out) decodes cleanly with the
    preference, and not without it."""
    spec = protodump_run("-T", "json", "-o", "iceball.numbering:spec", "iceball-tcp-spec.pcap")
    layers = [x for p in packet_layers(spec.stdout) for x in layers_of(p, "iceball")]
    assert len(layers) == 15 and not any(values(x, "_ws.expert.message") for x in layers)
    assert [values(x, "iceball.chat_send_team.msg") for x in layers if values(x, "iceball.chat_send_team.msg")] == \
        [["spec team chat"]]
    assert [values(x, "iceball.plr_pos_spec.pos.x") for x in layers if values(x, "iceball.plr_pos_spec.pos.x")] == \
        [["64.5"]]
    plain = protodump_run("-T", "json", "iceball-tcp-spec.pcap")
    assert "_ws.expert" in plain.stdout


def test_unknown_and_bad_lua_packets():
    info, v, tree, _ = decode(bytes([45, 1, 2]), 0)
    assert info.startswith("Unknown Lua packet id 45") and find(tree, "iceball.lua_id.data") == b"\x01\x02"
    info, v, tree, _ = decode(mk.raw_lua(bytes([7, 1, 9, 9])))
    assert info == "PLR_ID pid=1" and experts(tree) == ["2 bytes after the inner packet"]
    info, v, tree, _ = decode(bytes([15, 1, 2]), 0)
    assert experts(tree) == ["Truncated: Colour (0xAARRGGBB) needs 4 bytes, 2 left"]
    info, v, tree, _ = decode(b"\x20\x01", 1)
    assert info == "Unknown system packet id 32"
    info, v, tree, _ = decode(b"\x7f\xff\xff\x01", None)
    assert "Lua packet: length 65535 is outside 1..2556" in experts(tree)


# --- file transfers ---------------------------------------------------------------------------------------------------

def transfer_session(content: bytes, flags: int, name: str, order=None, block: int = 1024):
    s = Session()
    s(mk.counted(0x30, name.encode(), bytes([flags])), 1)
    pdus = mk.file_transfer(content, block=block)
    blocks_ = pdus[1:-1]
    for pdu in [pdus[0], *(order(blocks_) if order else blocks_)]:
        s(pdu, 1)
    return s, s(pdus[-1], 1)


def test_transfer_out_of_order_with_duplicates_and_look_inside():
    content = mk.icemap(32, 16, 32)
    rng = random.Random(3)

    def shuffle(b):
        b = b + b[:2]
        rng.shuffle(b)
        return b
    s, (info, v, tree, sources) = transfer_session(content, 4, "*MAP", shuffle, block=300)
    assert info.startswith("FILE_END *MAP (") and info.endswith(f" -> {len(content)} bytes)")
    assert find(tree, "iceball.file.inflated_size") == len(content)
    assert (find(tree, "iceball.icemap.xlen"), find(tree, "iceball.icemap.ylen"),
            find(tree, "iceball.icemap.zlen")) == (32, 16, 32)
    assert sources[-1].data == content and experts(tree) == []


@pytest.mark.parametrize("flags,content,abbrev,want", [
    (8, mk.tga(20, 10), "iceball.tga.width", 20),
    (12, mk.png(7, 3), "iceball.png.height", 3),
    (1, mk.JSON_FILE, "iceball.file.text", mk.JSON_FILE.decode()),
    (3, mk.LUA_FILE, "iceball.file.text", mk.LUA_FILE.decode()),
])
def test_look_inside(flags, content, abbrev, want):
    _, (info, v, tree, _) = transfer_session(content, flags, "f")
    assert find(tree, abbrev) == want and find(tree, "iceball.file.type") == flags


def test_transfer_problems():
    s = Session()
    s(mk.counted(0x30, b"x.lua", b"\x03"), 1)
    s(b"\x31" + struct.pack("<II", 100, 400), 1)
    _, _, tree, _ = s(b"\x33" + struct.pack("<IH", 90, 20) + bytes(20), 1)
    assert experts(tree) == ["Block 90+20 lies beyond the transfer size 100"]
    info, _, tree, _ = s(b"\x32", 1)
    assert info == "FILE_END x.lua incomplete"
    assert experts(tree) == ["File transfer ended with 0 of 100 bytes"]
    _, _, tree, _ = s(b"\x33" + struct.pack("<IH", 0, 1) + b"a", 1)
    assert experts(tree) == ["File block with no file transfer active"]
    _, _, tree, _ = s(b"\x31" + struct.pack("<II", 1 << 30, 1), 1)
    assert experts(tree) == ["File transfer started without a request",
                             f"Transfer of {1 << 30} bytes exceeds the limit of {1 << 24}"]
    s(mk.counted(0x30, b"bad.json", b"\x01"), 1)
    for pdu in mk.file_transfer(b"", compressed=b"\x78\x9cnot zlib at all"):
        info, _, tree, _ = s(pdu, 1)
    assert info == "FILE_END bad.json (does not inflate)" and experts(tree) == ["File does not inflate (zlib)"]


def test_transfer_block_limit(monkeypatch):
    """A block replayed without end cannot grow the state: past the block limit the transfer is dropped."""
    import protodump.engine.blocks_transfer as bi
    monkeypatch.setattr(bi, "BLOCK_LIMIT", 3)
    s = Session()
    s(b"\x31" + struct.pack("<II", 10, 10), 1)
    block = b"\x33" + struct.pack("<IH", 0, 2) + b"ab"
    assert [experts(s(block, 1)[2]) for _ in range(4)] == [[], [], [], ["More than 3 blocks: the transfer is dropped"]]
    assert experts(s(block, 1)[2]) == ["File block with no file transfer active"]


# --- framing ----------------------------------------------------------------------------------------------------------

def test_pdu_length_at_every_split():
    """Cut anywhere, the stream gives 0 (need more) until a PDU's length is known, then that length."""
    stream = all_stream("s2c")
    whole = stream_pdus(stream)
    pos = 0
    for pdu in whole[:40]:
        for cut in range(1, len(pdu) + 1):
            n = PROTOCOL.pdu_length(stream[:pos + cut], pos, {}, "a>b", {})
            assert n in (0, len(pdu)), (pdu[:4].hex(), cut, n)
        pos += len(pdu)
    assert PROTOCOL.pdu_length(b"\x11abc", 0, {}, "", {}) == -1      # AUTH_ACK: no layout
    assert PROTOCOL.pdu_length(b"\x20", 0, {}, "", {}) == -1


# Standalone Lua: rt.measure (lua/rt_framing.lua) and rt.layer_index (lua/rt_channel_protocol.lua) against their
# Python twins (a tvb is a table over a Lua string; only what rt.measure reads of it).
LUA_TVB = r"""
local rt = {}
%s
local function tvb_of(hex)
  local raw = (hex:gsub("..", function(h) return string.char(tonumber(h, 16)) end))
  local t = {}
  setmetatable(t, { __call = function(_, at, size)
    local bytes = { raw:byte(at + 1, at + size) }
    local r = {}
    function r:le_uint() local v = 0; for i = #bytes, 1, -1 do v = v * 256 + bytes[i] end return v end
    return r
  end })
  function t:len() return #raw end
  return t
end
"""


@pytest.mark.parametrize("lua", [b for b in ("lua5.2", "lua5.4") if shutil.which(b)])
def test_lua_measure_and_layer_index_standalone(lua, tmp_path):
    rng = random.Random(5)
    steps = list(PROTOCOL.framing.items())
    cases, want = [], []
    for _ in range(300):
        code, st_ = rng.choice(steps)
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 12)))
        cases.append(f"print(rt.measure({lua_steps(st_)}, tvb_of({json.dumps(data.hex())}), 0, {{ id = {code} }}))")
        want.append(str(measure(st_, data, 0, {"id": code})))
    source = "\n".join((CAPTURES_DIR.parent / "lua" / n).read_text()
                       for n in ("rt_framing.lua", "rt_channel_protocol.lua"))
    calls = ("local conv, out = {}, {}\n"
             "local function call(f, v) out[#out + 1] = rt.layer_index({ conv = conv, frame = f, visited = v }) end\n"
             "call(1, false) call(1, false) call(2, false) call(1, true) call(1, true) call(1, true) call(1, true)"
             " call(2, true)\nprint(table.concat(out, ' '))")
    script = tmp_path / "measure.lua"
    from protodump.dissectors import PROTOCOLS
    from protodump.engine.lua_runtime import limits_line
    script.write_text(limits_line(PROTOCOLS) + "\n" + LUA_TVB % source + "\n".join(cases) + "\n" + calls + "\n")
    got = subprocess.run([lua, str(script)], capture_output=True, text=True, check=True).stdout.split("\n")
    assert got[:-2] == want
    assert got[-2] == "1 2 1 1 2 1 2 1"


# --- properties -------------------------------------------------------------------------------------------------------

def field_values(f, draw) -> dict:
    """Values for one bound field of the tables (what encode reads)."""
    if isinstance(f, fields.Flags):
        return {f.name: draw(st.integers(0, 255))}
    if isinstance(f, Vec3):
        return {f.name: tuple(draw(element(e)) for e in f.elements)}
    if isinstance(f, (fields.Number, Packed)):
        return {f.name: draw(element(f))}
    if isinstance(f, fields.CString):
        text = draw(st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=20))
        return {f.name: text}
    if isinstance(f, fields.Bytes):
        return {f.name: draw(st.binary(min_size=f.size or 0, max_size=f.size or 30))}
    if isinstance(f, Fit):
        choice = draw(st.sampled_from(f.choices))
        return struct_values(choice, draw)
    if isinstance(f, fields.Struct):
        return struct_values(f, draw)
    raise AssertionError(f"no strategy for {f!r}")


def element(f):
    if isinstance(f, ScaledByte):
        return st.integers(-128, 127) if f.codes[0] == "b" else st.integers(0, 255)
    if isinstance(f, Packed):
        return st.integers(-32768, 32767)
    if f.kind == "float":
        return st.floats(width=32, allow_nan=False)
    if f.expect is not None:
        return st.just(f.expect)
    if f.values:
        return st.sampled_from(sorted(f.values))
    if f.check_range:
        return st.integers(*f.check_range)
    bits = f.width * 8
    return st.integers(-(1 << bits - 1), (1 << bits - 1) - 1) if f.kind == "int" else st.integers(0, (1 << bits) - 1)


def struct_values(s, draw) -> dict:
    out = {}
    for f in s.fields:
        out.update(field_values(f, draw))
    return out


LUA_CASES = [(variant, code) for variant, cases in PROTOCOL.messages[0].fields[0].variants.items() for code in cases]


@st.composite
def lua_packet(draw):
    variant, code = draw(st.sampled_from(LUA_CASES))
    packet = PROTOCOL.messages[0].fields[0].variants[variant][code]
    return variant, code, struct_values(packet, draw)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(lua_packet())
def test_lua_round_trip(case):
    """encode -> decode through the tables gives the values back, over ENet (channel 0) and framed for TCP."""
    variant, code, vals = case
    prefs = {"iceball.numbering": variant}
    body = PROTOCOL.encode({"numbering": variant, "lua_id": code, **vals}, channel=0)
    for payload, channel in ((body, 0), (mk.raw_lua(body), None)):
        _, got, tree, _ = decode(payload, channel, prefs)
        assert experts(tree) == [], experts(tree)
        for key, want in vals.items():
            assert got[key] == want, (code, key, got[key], want)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=40), st.integers(0, 255), st.sampled_from(["base", "msg", "name"]))
def test_system_round_trip(raw, flags, which):
    text = raw.decode("latin-1")[:60]
    cases = {"base": (0x0F, {"base": text, "base_len": len(text.encode())}),
             "msg": (0x17, {"msg": text, "msg_len": len(text.encode())}),
             "name": (0x30, {"flags": flags, "name": text, "name_len": len(text.encode())})}
    code, vals = cases[which]
    if vals.get(f"{which}_len", 0) > 255:
        return
    wire = PROTOCOL.encode({"id": code, **vals}, channel=1)
    _, got, tree, _ = decode(wire, 1)
    # a NUL then more bytes: the expert Wireshark itself adds to such a string item (and protodump with it)
    assert set(experts(tree)) <= {"Trailing stray characters"} and all(got[k] == v for k, v in vals.items())
    assert PROTOCOL.pdu_length(wire, 0, {}, "", {}) == len(wire)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=80), st.sampled_from([0, 1, None, 7]))
def test_random_bytes_never_crash(data, channel):
    """Any bytes on any channel: a decode with expert items at worst, never an exception; a stream is either
    framed or refused, never a length that loops."""
    s = Session()
    s(data, channel)
    s(data, channel, {"iceball.numbering": "spec"})
    n = PROTOCOL.pdu_length(data, 0, {}, "", {})
    assert n == -1 or n == 0 or n >= 1


# --- the plugin: every capture (and the spec variants of conftest.VARIANTS) is in tests/test_parity.py ----------

def layer_differences(ours: str, theirs: str, what: str) -> None:
    """Fail with the first differing frame's iceball layers when protodump's and tshark's JSON differ."""
    a, b = packet_layers(ours), packet_layers(theirs)
    assert len(a) == len(b)
    bad = [i + 1 for i, (x, y) in enumerate(zip(a, b)) if layers_of(x, "iceball") != layers_of(y, "iceball")]
    if bad:
        x, y = layers_of(a[bad[0] - 1], "iceball"), layers_of(b[bad[0] - 1], "iceball")
        diff = difflib.unified_diff(json.dumps(x, indent=1).splitlines(), json.dumps(y, indent=1).splitlines(),
                                    "protodump", "tshark", lineterm="", n=2)
        pytest.fail(f"{what}: frames {bad[:10]} differ\n" + "\n".join(list(diff)[:60]), pytrace=False)


def fuzz_datagrams(seed: int, n: int = 300) -> list[tuple[bool, bytes]]:
    """Iceball messages as datagrams (decode-as on a UDP port, no channel: system packets + framed Lua packets):
    a third noise or a known id + noise, two thirds the capture maker's packets truncated, extended or with
    flipped bytes (file transfers included, so the transfer state sees garbage too)."""
    rng = random.Random(seed)
    real = [pdu for _, data in mk.all_session() for pdu in stream_pdus(data)]
    out = []
    for i in range(n):
        kind = rng.randrange(6)
        if kind == 0:
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80)))
        elif kind == 1:
            head = rng.choice([0x0F, 0x10, 0x11, 0x17, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x7F,
                               rng.randrange(0x40, 0x7F)])
            data = bytes([head]) + bytes(rng.randrange(256) for _ in range(rng.randrange(0, 60)))
        else:
            data = bytearray(rng.choice(real))
            if kind == 2:
                data = data[:rng.randrange(1, len(data) + 1)]
            elif kind == 3:
                data += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 20)))
            elif kind == 4:
                for _ in range(rng.randrange(1, 4)):
                    data[rng.randrange(len(data))] = rng.randrange(256)
            data = bytes(data)
        out.append((i % 3 != 0, data))
    return out


@pytest.mark.skipif(TSHARK is None, reason="tshark is not on PATH")
@pytest.mark.parametrize("seed", [1, 2])
def test_fuzz_parity(tmp_path, seed):
    """Random and damaged messages: no Lua error, no Python exception, the same iceball layers."""
    pcap = tmp_path / f"iceball-fuzz-{seed}.pcap"
    write_pcap(pcap, fuzz_datagrams(seed), dport=40000)
    args = ("-d", "udp.port==40000,iceball", "-T", "json")
    theirs = subprocess.run([TSHARK, "-X", f"lua_script:{PLUGIN}", *args, "-r", str(pcap)], capture_output=True,
                            text=True, errors="surrogateescape", timeout=300)
    ours = subprocess.run([*PROTODUMP, *args, str(pcap)], capture_output=True, text=True,
                          errors="surrogateescape", timeout=300)
    assert ours.returncode == 0 and theirs.returncode == 0, (ours.stderr, theirs.stderr)
    assert not LUA_ERROR.search(theirs.stdout + theirs.stderr) and "Dissector error" not in ours.stdout
    assert all(layers_of(p, "iceball") for p in packet_layers(ours.stdout))
    layer_differences(ours.stdout, theirs.stdout, f"seed {seed}")
