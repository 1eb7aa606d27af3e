"""Rutentoy (dissectors/rutentoy.py): framing from opcode and direction, the 04 state, numbering recognition,
fixed point and packed fields, message and texture reassembly, bad input; round trips of every table; the real
captures (tools/make_rutentoy_captures.py: kernel TCP on loopback) decoded by protodump and, packet by packet,
by tshark with the generated plugin; the Lua runtime's pure parts against Python."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys

import pytest
import xxhash
from conftest import CAPTURES_DIR, LUA_ERROR, ROOT, layers_of, packet_layers, raw_layers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protodump.dissectors.rutentoy import BLOCKS
from protodump.dissectors.rutentoy import PROTOCOL as P
from protodump.engine.blocks_cookies import qoi_walk, same_digest
from protodump.engine.context import Ctx
from protodump.engine.tree import Item

sys.path.insert(0, str(ROOT / "tools"))
import make_rutentoy_captures as mk

CLIENT, SERVER = "10.0.0.1:40000>10.0.0.2:29778", "10.0.0.2:29778>10.0.0.1:40000"
DIRECTION = {"c2s": CLIENT, "s2c": SERVER}
CAPTURES = sorted(p.name for p in CAPTURES_DIR.glob("rutentoy-*.pcap"))


def decode(pdu: bytes, role: str, conv: dict | None = None, frame: int = 1, prefs: dict | None = None):
    """Dissect one PDU as the stream machinery does (same conv across calls): its values, tree and info."""
    tree = Item(P.info, P.description, 0, len(pdu), P.description)
    ctx = Ctx(pdu, 0, len(pdu), tree, P, {} if conv is None else conv, DIRECTION[role], frame, [])
    info = P.dissect(ctx, prefs or {})
    return ctx, tree, info() if callable(info) else info


def values(tree: Item) -> dict:
    return {i.field.abbrev: i.value for i in tree.walk() if i.field is not None and i is not tree}


def experts(tree: Item) -> list[str]:
    return [i.expert_info.message for i in tree.walk() if i.expert_info is not None]


def session(steps, prefs=None):
    """Frame and dissect a whole scripted session (list of (role, bytes)) through pdu_length, per direction."""
    conv, out, buf = {}, [], {"c2s": b"", "s2c": b""}
    for role, data in steps:
        if role not in buf:
            continue
        buf[role] += data
        pos = 0
        while True:
            n = P.pdu_length(buf[role], pos, conv, DIRECTION[role], prefs or {})
            if n <= 0 or pos + n > len(buf[role]):
                break
            out.append((role, *decode(buf[role][pos:pos + n], role, conv, len(out) + 1, prefs)))
            pos += n
        buf[role] = buf[role][pos:]
    return conv, out


# --- framing ------------------------------------------------------------------------------------------------------

SIZES = {  # NOTES.md: sizes are the sums of the struct fields (GUI Open 5, Message 70, World Chunk 1033)
    0x00: 1, 0x01: 5, 0x02: 9, 0x03: 21, 0x05: 10, 0x07: 20, 0x08: 5, 0x09: 8, 0x0B: 70, 0x10: 1033, 0x11: 12,
    0x12: 18, 0x20: 7}


@pytest.mark.parametrize("role", ["c2s", "s2c"])
def test_pdu_lengths_follow_the_struct_sums(role):
    for code, size in SIZES.items():
        assert P.pdu_length(bytes([code]), 0, {}, DIRECTION[role], {}) == size, hex(code)
    assert P.pdu_length(b"\x04", 0, {}, DIRECTION[role], {}) == (1035 if role == "c2s" else 5)
    heading = {"rutentoy.numbering": "heading"}
    for code in (0x0A, 0x06, 0x13, 0xFF):           # 0A GUI Items has no layout; the others do not exist
        assert P.pdu_length(bytes([code]), 0, {}, DIRECTION[role], heading) == -1
    for code in (0x13, 0xFF):
        assert P.pdu_length(bytes([code]), 0, {}, DIRECTION[role], {}) == -1
    # auto: a stream opening with 0a frames only in the structs' numbering (0a = Message there)
    assert P.pdu_length(b"\x0a", 0, {}, DIRECTION[role], {}) == 70
    assert P.pdu_length(b"", 0, {}, DIRECTION[role], {}) == 0


def test_server_side_is_the_port_29778_side_or_the_lower_port():
    assert P.role(SERVER) == "s2c" and P.role(CLIENT) == "c2s"
    assert P.role("[::1]:29778>[::1]:50000") == "s2c"
    assert P.role("1.2.3.4:5000>1.2.3.4:45000") == "s2c"      # decode-as on another port: the lower one serves


def test_server_04_is_a_texture_chunk_only_during_a_server_to_client_exchange():
    tex = mk.image(16, 9)
    steps = [("s2c", mk.pdu("s2c", {"opcode": 4, "oid": 1}))]
    steps += [("s2c", p) for p in mk.message("s2c", 1, 5, f"HASTEX {mk.digest(tex)}")]
    steps += [("c2s", p) for p in mk.message("c2s", 1, 5, "HAVETEX 0")]
    steps += [("s2c", p) for p in mk.texture("s2c", 5, 77, tex)]
    steps += [("s2c", mk.pdu("s2c", {"opcode": 4, "oid": 2}))]
    conv, out = session(steps)
    labels = [(role, info.split(" ")[0:3]) for role, _, _, info in out]
    assert [info for _, _, _, info in out if info.startswith("Object Delete")] == ["Object Delete oid=1",
                                                                                   "Object Delete oid=2"]
    chunks = [tree for role, _, tree, info in out if info.startswith("Object Texture Chunk")]
    assert len(chunks) == len(tex) // 1024 + 1, labels
    done = values(chunks[-1])
    assert done["rutentoy.texture.image.xxh32"] == mk.digest(tex) == done["rutentoy.texture.image.announced"]
    assert done["rutentoy.texture.image.digest_ok"] is True and done["rutentoy.texture.image.valid"] is True
    assert conv["flags"] == {"texture_exchange:s2c": False}


def test_numbering_recognised_per_connection_and_forced_by_preference():
    struct_login = mk.message("c2s", 1, 5, "LOGIN x", "struct")[0]          # 0a: Message only in that numbering
    conv = {}
    assert P.pdu_length(struct_login, 0, conv, CLIENT, {}) == 70 and conv["numbering"] == "struct"
    assert P.pdu_length(b"\x05", 0, conv, CLIENT, {}) == 1035               # struct 05 = Texture Chunk
    conv = {}
    assert P.pdu_length(mk.message("c2s", 1, 5, "LOGIN x")[0], 0, conv, CLIENT, {}) == 70
    assert conv["numbering"] == "heading"
    conv = {}                                                               # 01 Ping frames in both: undecided
    assert P.pdu_length(b"\x01\0\0\0\0", 0, conv, CLIENT, {}) == 5 and "numbering" not in conv
    assert P.pdu_length(b"\x02", 0, {}, SERVER, {"rutentoy.numbering": "struct"}) == 21     # struct 02 = Move
    _, tree, info = decode(mk.move("s2c", 3, 1.0, 2.0, 3.0, numbering="struct"), "s2c", {},
                           prefs={"rutentoy.numbering": "struct"})
    assert info == "Object Move oid=3" and values(tree)["rutentoy.move.y"] == 2.0


# --- values ---------------------------------------------------------------------------------------------------------

def test_fixed_point_positions_angles_and_speeds():
    _, tree, _ = decode(mk.move("c2s", 9, -1000.5, 0.00390625, 64.0, 90.0, 359.0), "c2s")
    v = values(tree)
    assert (v["rutentoy.move.x_raw"], v["rutentoy.move.x"]) == (-256128, -1000.5)
    assert v["rutentoy.move.y"] == 1 / 256 and v["rutentoy.move.z"] == 64.0
    assert v["rutentoy.move.yaw_raw"] == 16384 and v["rutentoy.move.yaw"] == 90.0
    assert math.isclose(v["rutentoy.move.yaw_rad"], math.pi / 2)
    assert math.isclose(v["rutentoy.move.pitch"], 359.0, abs_tol=360 / 65536)
    _, tree, _ = decode(mk.pdu("s2c", {"opcode": 0x20, "permissions": 0b110, "walk_speed": 0x0180,
                                       "jump_height": 0xFFFF}), "s2c")
    v = values(tree)
    assert v["rutentoy.gamemode.walk_speed"] == 1.5 and v["rutentoy.gamemode.jump_height"] == 0xFFFF / 256
    assert v["rutentoy.gamemode.permissions.allow_flight"] and v["rutentoy.gamemode.permissions.allow_no_clip"]
    assert not v["rutentoy.gamemode.permissions.invulnerable"]


@pytest.mark.parametrize("xyz", [(0, 0, 0), (-1, -1, -1), (-(1 << 20), -(1 << 18), -(1 << 20)),
                                 ((1 << 20) - 1, (1 << 18) - 1, (1 << 20) - 1), (12345, -54321, 7)])
def test_packed_chunk_coordinates_are_sign_extended(xyz):
    x, y, z = xyz
    raw = (x & 0x1FFFFF) | (y & 0x7FFFF) << 21 | (z & 0x1FFFFF) << 40
    pdu = bytes([0x11]) + raw.to_bytes(8, "little") + bytes([0x21, 0x53, 0x7C])
    _, tree, info = decode(pdu, "s2c")
    v = values(tree)
    assert (v["rutentoy.set_block.chunk_x"], v["rutentoy.set_block.chunk_y"], v["rutentoy.set_block.chunk_z"]) == xyz
    # nibbles of u16 0x5321: x 1, y 2, z 3, upper nibble 5; block ID = 5 << 8 | 0x7C (not listed: flagged)
    assert [v[f"rutentoy.set_block.block_{a}"] for a in "xyz"] == [1, 2, 3]
    assert v["rutentoy.set_block.block_id"] == 0x57C
    assert experts(tree) == ["Unknown Block ID 0x57c"]
    assert info.endswith(f"({x}, {y}, {z}) block={0x57C}")


def test_metadata_layouts_by_type_and_equipment_bits():
    _, tree, _ = decode(mk.pdu("s2c", {"opcode": 5, "oid": 1, "meta_type": 2, "item": 0x812, "slot": 0xA}), "s2c")
    v = values(tree)
    assert (v["rutentoy.metadata.item"], v["rutentoy.metadata.slot"]) == (0x812, 0xA)
    assert v["rutentoy.metadata.equipment"] == 0xA812
    _, tree, _ = decode(bytes([5, 1, 0, 0, 0, 0, 10, 20, 30, 40]), "s2c")
    v = values(tree)
    assert [v[f"rutentoy.metadata.color_{c}"] for c in ("r", "g", "b", "glow")] == [10, 20, 30, 40]
    _, tree, _ = decode(bytes([5, 1, 0, 0, 0, 7, 1, 2, 3, 4]), "s2c")
    assert values(tree)["rutentoy.metadata.meta_data"] == 0x04030201
    assert experts(tree) == ["Unknown Metadata type 7"]


def test_world_effect_modes_and_weather():
    _, tree, _ = decode(mk.pdu("s2c", {"opcode": 0x12, "mode": 1, "weather": 5, "fog_r": 9, "density": 3,
                                       "interpolation": 25}), "s2c")
    v = values(tree)
    assert v["rutentoy.world_effect.weather"] == 5 and v["rutentoy.world_effect.fog_r"] == 9
    assert v["rutentoy.world_effect.interpolation"] == 1000.0          # 25 x 40 ms
    _, tree, _ = decode(mk.pdu("s2c", {"opcode": 0x12, "mode": 1, "weather": 1, "day_time": 1 << 31}), "s2c")
    assert values(tree)["rutentoy.world_effect.day_time"] == 0.5
    _, tree, _ = decode(mk.pdu("s2c", {"opcode": 0x12, "mode": 3, "x": -384, "look_scale": 7}), "s2c")
    v = values(tree)
    assert v["rutentoy.world_effect.x"] == -1.5 and v["rutentoy.world_effect.look_scale"] == 7
    assert "Block/Item Break" in P.fields["rutentoy.world_effect.mode"].values[1]


def test_world_chunk_summary():
    ids = [0] * 512
    ids[0:10] = [0x011] * 10
    ids[100] = 0x07D
    ids[200] = 0x0FF                                     # not in the spec's list
    lights = [0] * 512
    lights[100] = 15
    _, tree, _ = decode(mk.pdu("s2c", {"opcode": 0x10, "chunk_x": -2, "blocks": ids, "lights": lights}), "s2c")
    v = values(tree)
    assert v["rutentoy.world_chunk.chunk_x"] == -2
    assert v["rutentoy.world_chunk.blocks.non_air"] == 12 and v["rutentoy.world_chunk.blocks.distinct"] == 4
    assert v["rutentoy.world_chunk.blocks.lit"] == 1 and v["rutentoy.world_chunk.blocks.max_light"] == 15
    listed = [i.value for i in tree.walk() if i.field and i.field.abbrev == "rutentoy.world_chunk.blocks.block"]
    assert listed == [0x000, 0x011, 0x07D, 0x0FF] and BLOCKS[0x07D] == "Lit Firepit"
    assert experts(tree) == ["1 blocks have IDs the spec does not list"]


# --- messages ---------------------------------------------------------------------------------------------------

def test_message_reassembly_keeps_utf8_split_inside_code_points_whole():
    text = "Grüße → 日本語 " * 8 + "🎉"
    raw = text.encode()
    assert any((raw[i] & 0xC0) == 0x80 for i in range(64, len(raw), 64))   # a chunk starts mid code point
    chunks = mk.message("s2c", 7, 0, text)
    other = mk.message("s2c", 8, 2, "interleaved")
    _, out = session([("s2c", chunks[0]), ("s2c", other[0]), *[("s2c", c) for c in chunks[1:]]])
    last = values(out[-1][2])
    assert last["rutentoy.message.text"] == text
    assert last["rutentoy.message.reassembled.chunks"] == len(chunks)
    assert values(out[1][2])["rutentoy.message.text"] == "interleaved"
    assert all("rutentoy.message.text" not in values(t) for _, _, t, _ in out[:1] + out[2:-1])


@pytest.mark.parametrize("text, expected", [
    ("INFO", {"rutentoy.ipc.command": "INFO"}),
    ("INFO 32;5;+01:00;Hello; world;extra text;", {"rutentoy.ipc.slots": 32, "rutentoy.ipc.players": 5,
                                                  "rutentoy.ipc.timezone": "+01:00", "rutentoy.ipc.motd": "Hello",
                                                  "rutentoy.ipc.extra": " world"}),
    ("LOGIN bob my pass key", {"rutentoy.ipc.user": "bob", "rutentoy.ipc.passkey": "my pass key"}),
    ("LOGIN bob", {"rutentoy.ipc.user": "bob"}),
    ("HASTEX 1a2b3c4d", {"rutentoy.ipc.digest": "1a2b3c4d"}),
    ("HAVETEX 1", {"rutentoy.ipc.have": 1}),
    ("HAVETEX 0\n", {"rutentoy.ipc.have": 0}),
    ("LEAVE bye; see you", {"rutentoy.ipc.reason": "bye; see you"}),
])
def test_client_ipc_commands(text, expected):
    _, out = session([("c2s", p) for p in mk.message("c2s", 1, 5, text)])
    v = values(out[-1][2])
    assert {k: v[k] for k in expected} == expected


def test_ipc_is_parsed_on_the_client_ipc_channel_only_and_bad_numbers_are_flagged():
    _, out = session([("c2s", p) for p in mk.message("c2s", 1, 0, "LOGIN bob x")])
    assert "rutentoy.ipc.command" not in values(out[-1][2])
    _, out = session([("s2c", p) for p in mk.message("s2c", 1, 5, "INFO lots;2;")])
    assert experts(out[-1][2]) == ["Total player slots: 'lots' is not a number"]
    assert values(out[-1][2])["rutentoy.ipc.players"] == 2


def test_a_message_that_never_ends_is_dropped_at_the_limit():
    chunks = mk.message("s2c", 3, 0, "x" * 64 * 300, final=False)
    conv, out = session([("s2c", b"".join(chunks))])
    notes = [m for _, _, t, _ in out for m in experts(t)]
    assert notes == ["Message 3 exceeds 16384 bytes: dropped"]
    assert conv["texts"]["s2c"][3] == {"parts": [], "frames": [], "size": -1}   # the rest ignored, nothing kept


# --- textures ---------------------------------------------------------------------------------------------------

def upload(data: bytes, announced: str | None):
    steps = []
    if announced is not None:
        steps += [("c2s", p) for p in mk.message("c2s", 1, 5, f"HASTEX {announced}")]
    steps += [("c2s", p) for p in mk.texture("c2s", 0, 9, data)]
    _, out = session(steps)
    return values(out[-1][2]), experts(out[-1][2])


def test_texture_reassembled_decoded_and_hash_matched():
    data = mk.image(64, 3)
    v, ex = upload(data, mk.digest(data))
    assert ex == [] and len(data) > 3 * 1024
    assert v["rutentoy.texture.image.length"] == len(data)
    assert (v["rutentoy.texture.image.width"], v["rutentoy.texture.image.height"]) == (64, 64)
    assert v["rutentoy.texture.image.digest_ok"] is True and v["rutentoy.texture.image.valid"] is True


def test_texture_problems():
    data = mk.image(16, 4)
    _, ex = upload(data, "DEADBEEF")
    assert ex == [f"xxHash32 {mk.digest(data)} does not match the announced digest DEADBEEF"]
    big = bytearray(data)
    big[4:12] = (256).to_bytes(4, "big") * 2
    _, ex = upload(bytes(big), None)
    assert ex == ["Side 256 is not a power of two up to 128"] * 2 + ["Texture 256x256 is outside the spec's limits"]
    _, ex = upload(data[:-30] + bytes(8), None)
    assert ex == ["QOI data ends after 244 of 256 pixels"] or ex[0].startswith("QOI data ends after")
    _, ex = upload(b"PNG....", None)
    assert ex == ["Image of 7 bytes is too short for QOI"]


def test_qoi_walk_agrees_with_the_qoi_library():
    import qoi
    for seed in range(5):
        data = mk.image(8 << (seed % 3), seed)
        assert qoi_walk(data, *qoi.decode(data).shape[1::-1]) is None
    assert qoi_walk(data[:-9] + bytes(8), 32, 32) is not None


# --- properties ---------------------------------------------------------------------------------------------------

CASES = [(n, role, code) for n in P.numberings for role in ("c2s", "s2c")
         for code in P.body[f"{n}/{role}"].cases]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), body=st.binary(min_size=1040, max_size=1040))
def test_every_table_round_trips(case, body):
    """Random field bytes: decode, re-encode the decoded raw values, get the same wire bytes back."""
    numbering, role, code = case
    packet = P.body[f"{numbering}/{role}"].cases[code]
    wire = bytes([code]) + body[:packet.size]
    conv = {"numbering": numbering}
    ctx, tree, _ = decode(wire, role, conv, prefs={"rutentoy.numbering": numbering})
    assert len(wire) == P.pdu_length(wire, 0, {"numbering": numbering}, DIRECTION[role], {})
    assert not [m for m in experts(tree) if m.startswith("Truncated") or "Dissector error" in m]
    scope = dict(ctx.scopes[0])
    if packet.name == "world_chunk":                  # the grid re-encodes from IDs and lights
        hi, lo = wire[9:521], wire[521:]
        scope["blocks"] = [h << 4 | m >> 4 for h, m in zip(hi, lo)]
        scope["lights"] = [m & 0xF for m in lo]
    if packet.name == "texture":
        scope["data"] = wire[11:]
    assert P.encode(scope, f"{numbering}/{role}", unknown="ignore") == wire    # a scope holds computed values too


def scanned_session(steps, asked):
    """Frame a scripted session as session() does, each PDU dissected with `asked` (Ctx.asked: None, the full
    decode; frozenset(), a NULL tree as io,phs dissects the stateful messages): the conversation state and
    each PDU's scope after it."""
    conv, after, buf = {}, [], {"c2s": b"", "s2c": b""}
    for role, data in steps:
        buf[role] += data
        pos = 0
        while True:
            n = P.pdu_length(buf[role], pos, conv, DIRECTION[role], {})
            if n <= 0 or pos + n > len(buf[role]):
                break
            pdu = buf[role][pos:pos + n]
            ctx = Ctx(pdu, 0, n, Item(P.info, P.description, 0, n, P.description), P, conv, DIRECTION[role],
                      len(after) + 1, [])
            ctx.asked = asked
            P.dissect(ctx, {})
            after.append(repr((conv, ctx.scopes[0])))
            pos += n
        buf[role] = buf[role][pos:]
    return after


TEXTS = st.one_of(st.text(max_size=200), st.sampled_from(
    ["HAVETEX 0", "HAVETEX 1", "HAVETEX x", "HASTEX 1a2b", "INFO 8;3;+1;motd;extra", "INFO", "LOGIN a b c",
     "LEAVE bye", "HAVETEX 99999999999", "x" * 300]))
PIECE = st.one_of(
    st.tuples(st.sampled_from(["c2s", "s2c"]), st.integers(0, 3), st.sampled_from([0, 2, 5]), TEXTS,
              st.booleans()).map(lambda t: [(t[0], p) for p in mk.message(t[0], t[1], t[2], t[3], final=t[4])]),
    st.tuples(st.sampled_from(["c2s", "s2c"]), st.integers(0, 2), st.integers(0, 2), st.integers(0, 3000),
              st.booleans()).map(lambda t: [(t[0], p) for p in mk.texture(
                  t[0], 5, t[1], (mk.image(8 << t[2], t[2]) if t[4] else b"q" * t[3]))]),
    st.sampled_from([[("s2c", mk.world_chunk(0, 1, 2, 3))], [("c2s", bytes([0x0B]) + bytes(69))],
                     [("s2c", mk.move("s2c", 1, 1.0, 2.0, 3.0))]]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(PIECE, max_size=12))
def test_a_null_tree_keeps_the_state_the_full_decode_keeps(pieces):
    """io,phs and the other runs that read no Rutentoy field dissect its stateful messages with a NULL tree
    (the blocks' scan: engine.blocks_cookies TextReassembly and ImageReassembly, engine.blocks_bits BitFields):
    texts and images collected, commands' arguments, the texture-exchange flags and every scope value must be
    what the full decode leaves, PDU after PDU, or a later frame would decode differently."""
    steps = [step for piece in pieces for step in piece]
    assert scanned_session(steps, frozenset()) == scanned_session(steps, None)


def test_the_null_tree_comparison_sees_a_lost_flag(monkeypatch):
    """The equality above can fail: a scan that forgets HAVETEX's flag is seen."""
    from protodump.engine.blocks_cookies import TextReassembly
    steps = [("s2c", p) for p in mk.message("s2c", 1, 5, "HAVETEX 0")]
    full = TextReassembly.command
    monkeypatch.setattr(TextReassembly, "command", lambda self, ctx, node, *a: node and full(self, ctx, node, *a))
    assert scanned_session(steps, frozenset()) != scanned_session(steps, None)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=3000), role=st.sampled_from(["c2s", "s2c"]),
       flags=st.booleans(), pref=st.sampled_from(["auto", "heading", "struct"]))
def test_random_bytes_never_crash(data, role, flags, pref):
    conv = {"flags": {"texture_exchange:s2c": flags}}
    prefs = {"rutentoy.numbering": pref}
    pos = 0
    while pos < len(data):
        n = P.pdu_length(data, pos, conv, DIRECTION[role], prefs)
        assert n == -1 or n >= 1
        if n < 0 or pos + n > len(data):
            found = P.resync(data, pos + 1, conv, DIRECTION[role])
            assert found is None or pos < found <= len(data)
            break
        decode(data[pos:pos + n], role, conv, prefs=prefs)
        pos += n
    _, tree, _ = decode(data[:200] or b"\x0b", role, conv, prefs=prefs)   # a PDU of the wrong length too
    assert tree.children is not None


def test_resync_skips_chunk_data_and_lone_zero_bytes():
    chunk = mk.world_chunk(1, 2, 3, 4)
    move = mk.move("s2c", 1, 1.0, 1.0, 1.0)
    assert P.resync(chunk[300:], 0, {}, SERVER) is None                  # the tail of a chunk: nothing
    assert P.resync(chunk[300:] + move, 0, {}, SERVER) == len(chunk) - 300
    assert P.resync(chunk[:500], 0, {}, SERVER) == 0                      # a segment starting at a PDU


# --- captures -------------------------------------------------------------------------------------------------------

def test_every_capture_is_made_and_has_goldens():
    assert CAPTURES == sorted(mk.ALL)
    for name in CAPTURES:
        assert (CAPTURES_DIR / "golden" / f"{name}.json").exists()


def our_layers(protodump_run, name, *extra):
    run = protodump_run("-T", "json", *extra, name)
    assert run.returncode == 0, run.stderr
    return run.stdout, [layers_of(p, "rutentoy") for p in packet_layers(run.stdout)]


def flat(layer) -> dict[str, list]:
    out: dict[str, list] = {}

    def walk(pairs):
        for k, v in pairs:
            if isinstance(v, list):
                walk(v)
            else:
                out.setdefault(k, []).append(v)
    walk(layer)
    return out


def all_values(frames) -> dict[str, list]:
    out: dict[str, list] = {}
    for layers in frames:
        for layer in layers:
            for k, v in flat(layer).items():
                out.setdefault(k, []).extend(v)
    return out


def test_capture_every_opcode(protodump_run):
    _, frames = our_layers(protodump_run, "rutentoy-every-opcode.pcap")
    v = all_values(frames)
    opcodes = {int(x, 16) for x in v["rutentoy.opcode"]}
    assert opcodes == {0, 1, 2, 3, 4, 5, 7, 8, 9, 0x0B, 0x10, 0x11, 0x12, 0x20}
    assert v["rutentoy.ipc.user"] == ["alice"] and v["rutentoy.ipc.passkey"] == ["open sesame"]
    assert v["rutentoy.world_effect.weather"] == ["0", "1", "2", "3", "4", "5"]
    assert "_ws.expert.message" not in v


def test_capture_segmentation_frames_every_pdu(protodump_run):
    _, frames = our_layers(protodump_run, "rutentoy-segmentation.pcap")
    v = all_values(frames)
    assert len(v["rutentoy.opcode"]) == len(session(mk.segmentation())[1]) == 84 + 11
    assert max(len(f) for f in frames) >= 20                              # many PDUs in one segment
    assert "_ws.expert.message" not in v


def test_capture_server_info(protodump_run):
    _, frames = our_layers(protodump_run, "rutentoy-server-info.pcap")
    v = all_values(frames)
    assert v["rutentoy.ipc.slots"] == ["32"] and v["rutentoy.ipc.players"] == ["5"]
    assert v["rutentoy.ipc.timezone"] == ["+01:00"] and v["rutentoy.ipc.extra"] == ["no extra"]
    assert v["rutentoy.ipc.motd"][0].startswith("Welcome to the Rutentoy test server — be nice")
    assert v["rutentoy.message.reassembled.chunks"] == ["1", "2"]


def test_capture_login_texture(protodump_run):
    _, frames = our_layers(protodump_run, "rutentoy-login-texture.pcap")
    v = all_values(frames)
    assert v["rutentoy.texture.image.digest_ok"] == ["1", "1"] and v["rutentoy.texture.image.valid"] == ["1", "1"]
    assert v["rutentoy.texture.image.width"] == ["32", "16"]
    assert v["rutentoy.delete.oid"] == ["5", "6"]                           # 04 = delete again after the exchange
    assert "_ws.expert.message" not in v


def test_capture_messages(protodump_run):
    _, frames = our_layers(protodump_run, "rutentoy-messages.pcap")
    texts = all_values(frames)["rutentoy.message.text"]
    assert texts[0] == "Ünïcödé → " + "日本語のテキスト" * 6 + " 🎉🎉🎉 end"
    assert texts[1] == "Announcement: " + "x" * 150 and "" in texts and len(texts) == 11


def test_capture_bad_input(protodump_run):
    _, frames = our_layers(protodump_run, "rutentoy-bad.pcap")
    msgs = all_values(frames)["_ws.expert.message"]
    for expected in ("Texture 256x256 is outside the spec's limits", "Side 24 is not a power of two up to 128",
                     "Message 235740757 exceeds 16384 bytes: dropped", "Unknown Block ID 0xfff",
                     "World Effect is sent server to client only", "Total player slots: 'many' is not a number"):
        assert expected in msgs
    assert sum(m.startswith("Cannot frame the stream") for m in msgs) == 2          # 0A, then the unknown 33
    assert sum(m.startswith("QOI data ends after") for m in msgs) == 2
    assert sum("does not match the announced digest 00000000" in m for m in msgs) == 3
    pings = all_values(frames)["rutentoy.ping.cookie"]
    assert pings == ["0x00000005"]              # the server goes on after the client's 0A, stops at its own 33


def test_capture_struct_numbering_recognised(protodump_run):
    _, frames = our_layers(protodump_run, "rutentoy-struct-numbering.pcap")
    v = all_values(frames)
    assert v["rutentoy.texture.image.digest_ok"] == ["1"] and v["rutentoy.metadata.animation"] == ["1"]
    assert v["rutentoy.move.yaw"] == ["45", "49.998779296875"]
    _, forced = our_layers(protodump_run, "rutentoy-struct-numbering.pcap", "-o", "rutentoy.numbering:heading")
    assert "Cannot frame the stream" in json.dumps(forced, ensure_ascii=False)


def test_capture_lost_and_reordered(protodump_run):
    _, frames = our_layers(protodump_run, "rutentoy-lost-reordered.pcap")
    msgs = all_values(frames)["_ws.expert.message"]
    assert any(m.startswith("Previous segment(s) not captured") for m in msgs)
    names = all_values(frames)
    assert names["rutentoy.ipc.reason"] == ["server restart"] and names["rutentoy.opcode"][-1] == "0x00"
    assert not [m for m in msgs if m.startswith("Unknown")]        # no garbage framed out of chunk bytes
    assert "0x02" not in names["rutentoy.opcode"] and len([f for f in frames if f]) >= 10


def test_capture_midstream(protodump_run):
    _, frames = our_layers(protodump_run, "rutentoy-midstream.pcap")
    v = all_values(frames)
    assert v["_ws.expert.message"].count("Previous segment(s) not captured: resynchronising") == 2
    assert "Not a QOI image (magic is not qoif)" in v["_ws.expert.message"]    # its first chunks were not seen
    assert v["rutentoy.texture.image.digest_ok"] == ["1"]                       # the later exchange decodes
    assert v["rutentoy.delete.oid"] == ["5", "6"]


def test_capture_sctp(protodump_run):
    _, frames = our_layers(protodump_run, "rutentoy-sctp.pcap")
    v = all_values(frames)
    assert v["rutentoy.texture.image.digest_ok"] == ["1", "1"] and v["rutentoy.texture.image.valid"] == ["1", "1"]
    assert v["rutentoy.world_chunk.chunk_z"] == ["-2"]                    # fragmented over two DATA chunks
    assert v["rutentoy.message.text"][-3:] == ["system " * 20, "ßβ" * 70, "LEAVE done"]   # interleaved
    assert max(len(f) for f in frames) >= 4 and "_ws.expert.message" not in v


# --- the plugin -----------------------------------------------------------------------------------------------------

VARIANTS = [(n, ()) for n in CAPTURES] + [("rutentoy-struct-numbering.pcap", ("-o", "rutentoy.numbering:struct")),
                                          ("rutentoy-every-opcode.pcap", ("-o", "rutentoy.numbering:struct"))]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: " ".join((v[0], *v[1])))
def test_plugin_parity(variant, protodump_run, tshark_run):
    name, extra = variant
    ours = protodump_run("-T", "json", *extra, name)
    theirs = tshark_run("-T", "json", *extra, "-r", name)
    assert theirs.returncode == 0 and not LUA_ERROR.search(theirs.stdout + theirs.stderr)
    a, b = packet_layers(ours.stdout), packet_layers(theirs.stdout)
    assert len(a) == len(b)
    bad = [i + 1 for i, (x, y) in enumerate(zip(a, b)) if layers_of(x, "rutentoy") != layers_of(y, "rutentoy")]
    assert bad == []
    assert raw_layers(ours.stdout, "rutentoy") == raw_layers(theirs.stdout, "rutentoy")
    assert sum(1 for x in a if layers_of(x, "rutentoy")) > 0


LUA = shutil.which("lua5.2") or shutil.which("lua5.4")


def run_lua(code: str) -> str:
    runtime = "\n".join((ROOT / "lua" / n).read_text() for n in ("rt_bits.lua", "rt_cookies.lua"))
    prog = "rt = {}\n" + runtime + "\n" + code
    return subprocess.run([LUA, "-"], input=prog.encode(), capture_output=True, check=True).stdout.decode()


@pytest.mark.skipif(LUA is None, reason="no standalone Lua")
def test_lua_xxh32_bits_and_qoi_walk_match_python():
    import random
    rng = random.Random(5)
    samples = [b"", b"a", b"abc", bytes(range(16)), bytes(range(256)) * 3, mk.image(16, 1), b"\xff" * 4099]
    samples += [rng.randbytes(rng.randrange(70)) for _ in range(40)] + [rng.randbytes(3000) for _ in range(5)]
    calls = "\n".join(f"print(rt.xxh32(hex('{s.hex()}')))" for s in samples)
    helper = "local function hex(h) return (h:gsub('..', function(x) return string.char(tonumber(x, 16)) end)) end\n"
    assert run_lua(helper + calls).split() == [xxhash.xxh32_hexdigest(s) for s in samples]
    raw = (0x1FFFFF | 0x12345 << 21 | 0x100000 << 40).to_bytes(8, "little")
    out = run_lua(helper + f"local s = hex('{raw.hex()}')\n"
                  "print(rt.bits(s, 0, 21, true), rt.bits(s, 21, 19, true), rt.bits(s, 40, 21, true))")
    assert [int(float(x)) for x in out.split()] == [-1, 0x12345, -(1 << 20)]
    cases = [("0a1b2c3d", "0a1b2c3d"), ("A1B2C3D", "0a1b2c3d"), (" 0a1b2c3d\n", "0a1b2c3d"), ("", "00000000"),
             ("0a1b2c3e", "0a1b2c3d"), ("x0a1b2c3", "0a1b2c3d"), ("00a1b2c3d", "0a1b2c3d")]
    lua_cases = "\n".join(f"print(rt.same_digest({json.dumps(a)}, '{d}'))" for a, d in cases)
    assert run_lua(lua_cases).split() == [str(same_digest(a, d)).lower() for a, d in cases]
    assert [same_digest(a, d) for a, d in cases] == [True, True, True, False, False, False, False]
    img = mk.image(16, 2)
    cut = img[:-30] + bytes(8)
    out = run_lua(helper + f"print(rt.qoi_walk(hex('{img.hex()}'), 16, 16))\n"
                  f"print(rt.qoi_walk(hex('{cut.hex()}'), 16, 16))")
    assert out.splitlines() == ["nil", qoi_walk(cut, 16, 16)]


def random_session(seed: int) -> list[tuple[str, bytes]]:
    """PDUs of every kind with random field bytes (and a few messages, textures and corruptions) both ways."""
    import random
    rng = random.Random(seed)
    out = []
    for _ in range(60):
        role = rng.choice(["c2s", "s2c"])
        pick = rng.random()
        if pick < 0.1:
            out += [(role, p) for p in mk.message(role, rng.randrange(4), 5, rng.choice(
                ["HAVETEX 0", "HASTEX 1234abcd", "INFO 1;2;3;4;5;", "LOGIN a b c", "LEAVE x"]))]
        elif pick < 0.15:
            out += [(role, p) for p in mk.texture(role, 1, rng.randrange(3), rng.randbytes(rng.randrange(3000)))]
        elif pick < 0.18:
            out.append((role, rng.randbytes(rng.randrange(1, 40))))          # garbage: stops that direction
        else:
            code = rng.choice(list(P.body[f"heading/{role}"].cases))
            size = P.body[f"heading/{role}"].cases[code].size
            out.append((role, bytes([code]) + rng.randbytes(size)))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_plugin_parity_on_random_sessions(seed, tmp_path, protodump_run, tshark_run):
    """Random sessions over SCTP (frames from tools/sctp_frames.py, several DATA chunks per packet): the same
    layers from protodump and from tshark with the plugin, and never a Lua error."""
    from sctp_frames import Association, data
    a = Association(client=("10.0.0.1", 41000 + seed), server=("10.0.0.2", 29778))
    a.handshake()
    steps = random_session(seed)
    for i in range(0, len(steps), 3):
        for role in ("c2s", "s2c"):
            chunks = [data(p, sid=0) for r, p in steps[i:i + 3] if r == role]
            if chunks:
                a.send(role, chunks)
    a.shutdown()
    path = tmp_path / f"random-{seed}.pcap"
    a.write(str(path))
    ours = protodump_run("-T", "json", str(path))
    theirs = tshark_run("-T", "json", "-r", str(path))
    assert theirs.returncode == 0 and not LUA_ERROR.search(theirs.stdout + theirs.stderr)
    assert "Dissector error" not in ours.stdout + theirs.stdout
    a_, b_ = packet_layers(ours.stdout), packet_layers(theirs.stdout)
    assert [layers_of(x, "rutentoy") for x in a_] == [layers_of(y, "rutentoy") for y in b_]
    assert sum(len(layers_of(x, "rutentoy")) for x in a_) > 20


# --- an independent encoder -------------------------------------------------------------------------------------

def hand_session(rng) -> tuple[list, dict]:
    """A session written with struct.pack straight from the spec and NOTES.md (not from the tables), and what
    a decoder must find: per direction the opcodes in order, the texts, the texture digest."""
    import struct
    tex = mk.image(32, 21)
    digest = xxhash.xxh32_hexdigest(tex)

    def msg(cookie, channel, text):
        raw = text.encode()
        parts = [raw[i:i + 64] for i in range(0, len(raw), 64)] or [b""]
        return [struct.pack("<BIB64s", 0x0B, cookie, channel | (0x80 if i == len(parts) - 1 else 0), p)
                for i, p in enumerate(parts)]

    def chunks(oid, cookie, data):
        out = [data[i:i + 1024] for i in range(0, len(data), 1024)]
        if len(out[-1]) == 1024:
            out.append(b"")
        return [struct.pack("<BIIH1024s", 0x04, oid, cookie, len(p), p) for p in out]

    coords = (-5 & 0x1FFFFF) | (3 & 0x7FFFF) << 21 | (-7 & 0x1FFFFF) << 40
    c2s = [*msg(1, 5, "LOGIN zoë ünïcode pass"), *msg(2, 5, f"HASTEX {digest}")]
    s2c = [*msg(1, 5, "HAVETEX 0")]
    c2s += chunks(0, 0xABCD, tex)
    s2c += [struct.pack("<BQ512s512s", 0x10, coords, bytes([2]) * 512, bytes([0x03]) * 512),
            struct.pack("<BIHH", 0x02, 0, 0, 0), struct.pack("<BIiiiHH", 0x03, 0, 256 * 10, -128, 64, 8192, 0),
            struct.pack("<BHHH", 0x20, 0xFFFF, 0x0100, 0x0200), struct.pack("<BIBI", 0x05, 4, 1, 3),
            struct.pack("<BBIIII", 0x12, 2, 256, 512, 768, 0x0400FF00), struct.pack("<BHH", 0x08, 1, 0),
            struct.pack("<BQHB", 0x11, coords, 0x0321, 0x60), struct.pack("<BI", 0x04, 4),
            *msg(9, 0, "a chat line that is long enough to need two chunks, with ü and 日本 in it"),
            struct.pack("<BI", 0x01, 77)]
    c2s += [struct.pack("<BI", 0x01, 77), struct.pack("<BIiiiHH", 0x03, 0, 1, 2, 3, 4, 5),
            struct.pack("<BBIiiiH", 0x07, 0x1C, 0, 1, 2, 3, 0x801), struct.pack("<BBHHBB", 0x09, 1, 2, 3, 4, 5),
            struct.pack("<BHH", 0x08, 0, 0), *msg(3, 5, "LEAVE bye"), struct.pack("<B", 0x00)]
    s2c.append(struct.pack("<B", 0x00))
    # each direction's byte stream cut at random points, the two interleaved as a server would answer
    # the client's LOGIN and HASTEX, the server's HAVETEX 0; then the rest of each direction's byte stream cut
    # at random points (PDUs split across sends and several in one send)
    script = [("c2s", b"".join(c2s[:2])), ("s2c", s2c[0])]
    for d, rest in (("c2s", b"".join(c2s[2:])), ("s2c", b"".join(s2c[1:]))):
        cut = sorted(rng.sample(range(1, len(rest)), len(rest) // 400))
        script += [(d, rest[i:j]) for i, j in zip([0, *cut], [*cut, len(rest)])]
    expect = {"c2s": [p[0] for p in c2s], "s2c": [p[0] for p in s2c], "digest": digest}
    return script, expect


@pytest.mark.skipif(os.environ.get("PROTODUMP_NO_NETNS") == "1", reason="no network namespaces")
def test_independent_encoder_over_kernel_tcp(tmp_path, protodump_run, tshark_run):
    import random

    from netns_record import available, record_tcp
    if available() is not None:
        pytest.skip(available())
    script, expect = hand_session(random.Random(7))
    path = tmp_path / "independent.pcap"
    record_tcp(script, str(path), server_port=29778, client_port=40100)
    ours = protodump_run("-T", "json", str(path))
    frames = [layers_of(p, "rutentoy") for p in packet_layers(ours.stdout)]
    got = {"c2s": [], "s2c": []}
    for p, layers in zip(packet_layers(ours.stdout), frames):
        tcp = dict(next(v for k, v in p if k == "tcp"))
        role = "c2s" if tcp["tcp.dstport"] == "29778" else "s2c"
        got[role] += [int(dict(layer)["rutentoy.opcode"], 16) for layer in layers]
    assert got["c2s"] == expect["c2s"] and got["s2c"] == expect["s2c"]
    v = all_values(frames)
    assert v["rutentoy.ipc.user"] == ["zoë"] and v["rutentoy.ipc.passkey"] == ["ünïcode pass"]
    assert v["rutentoy.texture.image.xxh32"] == [expect["digest"]] and v["rutentoy.texture.image.digest_ok"] == ["1"]
    assert "a chat line that is long enough to need two chunks, with ü and 日本 in it" in v["rutentoy.message.text"]
    assert v["rutentoy.world_chunk.chunk_x"] == ["-5"] and v["rutentoy.world_chunk.chunk_z"] == ["-7"]
    assert v["rutentoy.set_block.block_id"] == ["0x0060"] and v["rutentoy.set_block.block_z"] == ["3"]
    assert sorted(v["rutentoy.move.x"]) == ["0.00390625", "10"] and "-0.5" in v["rutentoy.move.y"]
    assert "_ws.expert.message" not in v
    theirs = tshark_run("-T", "json", "-r", str(path))
    assert [layers_of(p, "rutentoy") for p in packet_layers(theirs.stdout)] == frames


def test_decode_as_on_another_port(tmp_path, protodump_run, tshark_run):
    """Port 5555 is not registered: nothing without decode-as; with it, the lower port serves, as on 29778."""
    from netns_record import available, record_tcp
    if available() is not None:
        pytest.skip(available())
    path = tmp_path / "port-5555.pcap"
    record_tcp(mk.login_texture(), str(path), server_port=5555, client_port=40200)
    plain = protodump_run("-T", "json", str(path))
    assert not any(layers_of(p, "rutentoy") for p in packet_layers(plain.stdout))
    opts = ("-d", "tcp.port==5555,rutentoy")
    ours, theirs = protodump_run("-T", "json", *opts, str(path)), tshark_run("-T", "json", *opts, "-r", str(path))
    frames = [layers_of(p, "rutentoy") for p in packet_layers(ours.stdout)]
    assert frames == [layers_of(p, "rutentoy") for p in packet_layers(theirs.stdout)]
    v = all_values(frames)
    assert v["rutentoy.texture.image.digest_ok"] == ["1", "1"] and v["rutentoy.delete.oid"] == ["5", "6"]


def rutentoy_text(text: str) -> list[str]:
    """The Rutentoy sections of a -V output (other layers left out)."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("Rutentoy"):
            inside = True
        elif line and not line.startswith(" "):
            inside = False
        if inside:
            out.append(line)
    return out


@pytest.mark.parametrize("name", CAPTURES)
def test_verbose_text_parity(name, protodump_run, standard_run):
    """The -V tree text of every Rutentoy layer is tshark's with the plugin, line for line (long labels cut
    with "[truncated]" as tshark cuts them). tshark 4.0's text: 4.4 no longer cuts a long byte label at 36 bytes,
    and protodump prints 4.0's labels (docs/tshark-formats.md)."""
    ours = rutentoy_text(protodump_run("-V", name).stdout)
    assert ours == rutentoy_text(standard_run("-V", "-r", name).stdout) and len(ours) > 20
