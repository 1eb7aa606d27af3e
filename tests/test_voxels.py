"""Voxel chunks browsable by position (engine/blocks_voxels.py, lua/rt_voxels.lua) behind a preference the table
declares (fields.WhenPref): blank's `blank.block_map` (off by default: a session has hundreds of chunks) and
Rutentoy's `rutentoy.block_map` (on). Checked: the rows against the chunk bytes (hypothesis, every layout and
size), the preference mechanism on a table of its own, every chunk of the real blank session, and protodump's
-V / -T json against tshark + the plugin with the preference on (whole frames, tshark 4.0; the game layers on
the other Wireshark too), and the plugin's time on the big session with the map on."""
from __future__ import annotations

import random
import re
import struct
import time
from functools import lru_cache

import pytest
from hypothesis import given, settings, strategies as st

from conftest import CAPTURES_DIR, VARIANTS, variant_id
from protodump.engine.dispatch import Dispatcher, DispatchError, Settings
from protodump.engine.blocks_voxels import LAYOUTS, BlockMap, block_map, map_fields
from protodump.engine.fields import U8, Binder, Bytes, Packet, Struct, Switch, WhenPref
from protodump.engine.lua_backend import Generator
from protodump.engine.protocol import Protocol
from protodump.engine.tree import Item
from protodump.session import packets
from test_parity import layer_mismatches
from whole_frame import compare

ON = ("-o", "blank.block_map:TRUE")
ROW = re.compile(r"^y=(\d+): blocks ([0-9a-f ]+), light ([0-9 ]+)$")


def parse_row(text: str, hex_ids: bool = False) -> tuple[list[int], list[int]]:
    """A row's IDs and lights, read back from its text."""
    m = ROW.match(text)
    assert m, text
    return [int(v, 16 if hex_ids else 10) for v in m.group(2).split()], [int(v) for v in m.group(3).split()]


def expected_blocks(data: bytes, pos: int, side: int, layout: str) -> list[tuple[int, int]]:
    """(ID, light) of every block i = x + side (y + side z), straight from the layout's definition."""
    n = side ** 3
    if layout == "split":
        return [(data[pos + i] << 4 | data[pos + n + i] >> 4, data[pos + n + i] & 15) for i in range(n)]
    return [(struct.unpack_from("<H", data, pos + 4 * i)[0], data[pos + 4 * n + i]) for i in range(n)]


def check_map(top: Item, data: bytes, pos: int, side: int, layout: str, hex_ids: bool) -> None:
    stride = LAYOUTS[layout][0]
    blocks = expected_blocks(data, pos, side, layout)
    assert top.offset == pos and top.length == stride * side ** 3
    assert [s.value for s in top.children] == list(range(side))
    for z, piece in enumerate(top.children):
        in_slice = blocks[side * side * z:side * side * (z + 1)]
        filled, lit = sum(1 for b, _ in in_slice if b), sum(1 for _, light in in_slice if light)
        assert piece.label == f"z={z}: {filled} non-zero, {lit} lit" and len(piece.children) == side
        for y, row in enumerate(piece.children):
            at = side * (y + side * z)
            assert row.label == row.value and row.value.startswith(f"y={y}: ")
            assert (row.offset, row.length) == (pos + stride * at, stride * side)
            ids, lights = parse_row(row.value, hex_ids)
            assert list(zip(ids, lights)) == blocks[at:at + side]


# --- the block on any bytes ------------------------------------------------------------------------------------------

@st.composite
def chunks(draw):
    layout = draw(st.sampled_from(sorted(LAYOUTS)))
    side = draw(st.sampled_from([1, 2, 3, 4, 8] + ([16] if layout == "u16" else [])))
    pos = draw(st.integers(0, 7))
    size = (LAYOUTS[layout][1] + 1) * side ** 3
    # a 16³ chunk (20 KiB) is beyond what hypothesis draws at once: random bytes from a drawn seed, or a short
    # drawn pattern repeated (runs of air, of one block, of the extreme values)
    body = draw(st.one_of(st.integers(0, 2 ** 32).map(lambda seed: random.Random(seed).randbytes(size)),
                          st.binary(min_size=1, max_size=64).map(lambda p: (p * size)[:size])))
    return layout, side, pos, draw(st.binary(min_size=pos, max_size=pos)) + body


@settings(max_examples=150, deadline=None)
@given(chunks(), st.booleans())
def test_rows_hold_every_block_and_light(chunk, hex_ids):
    layout, side, pos, data = chunk
    f = map_fields(Binder("t"), "t.blocks")
    parent = Item(None)
    block_map(f, parent, data, pos, side, layout, "Blocks", hex_ids, 0)
    block_map(f, parent, data, pos, side, layout, "Blocks", hex_ids, 0)     # again: shared frozen slices
    assert len(parent.children) == 2
    for top in parent.children:
        check_map(top, data, pos, side, layout, hex_ids)
    longest = max(len(r.label) for s in parent.children[0].children for r in s.children)
    assert longest < 240        # Wireshark cuts a label at 240 bytes (ITEM_LABEL_LENGTH)


# --- the preference, on a table of its own ----------------------------------------------------------------------------

GRID = Packet("grid", "Grid", Bytes("cells", "Cells", size=2 * 8 ** 3),
              WhenPref("map", "Show the cells by position",
                       BlockMap("cells", "Cells", side=8, layout="split", back=2 * 8 ** 3), default=False))
TOY = Protocol("toy", "Toy voxels", header=Struct("header", None, U8("type", "Type")),
               body={"current": Switch("type", {1: GRID})})


@settings(max_examples=40, deadline=None)
@given(st.binary(min_size=1024, max_size=1024), st.sampled_from([None, "TRUE", "true", "FALSE", "false"]))
def test_a_preference_guards_fields(cells, value):
    prefs = {} if value is None else {"toy.map": value}
    values, tree = TOY.decode_values(TOY.encode({"type": 1, "cells": cells}), prefs)
    _, plain = TOY.decode_values(TOY.encode({"type": 1, "cells": cells}))
    shown = [c.field.abbrev for c in tree.children if c.field]
    assert values["cells"] == cells
    if value in ("TRUE", "true"):
        assert shown[-1] == "toy.grid.cells.map" and [c.field for c in tree.children[:-1]] == \
            [c.field for c in plain.children]
        check_map(tree.children[-1], b"\1" + cells, 1, 8, "split", False)
    else:
        assert "toy.grid.cells.map" not in shown and len(tree.children) == len(plain.children)


def test_the_table_declares_the_preference_to_every_consumer():
    assert TOY.preferences()["map"] == ("Show the cells by position", "FALSE", ["TRUE", "FALSE", "true", "false"])
    lua = Generator([TOY]).generate()
    assert 'P_toy.prefs.map = Pref.bool("Show the cells by position", false, ' in lua
    assert "if P_toy.prefs.map then" in lua and "rt.block_map(c, T, c.pos - 1024, 8, \"split\"" in lua
    with pytest.raises(ValueError):     # a guarded field must not take wire bytes
        WhenPref("p", "P", U8("x", "X"))
    from protodump.dissectors import PROTOCOLS, blank, rutentoy
    assert blank.PROTOCOL.preferences()["block_map"][1] == "FALSE"
    assert rutentoy.PROTOCOL.preferences()["block_map"][1] == "TRUE"
    Dispatcher(PROTOCOLS, Settings(prefs={"blank.block_map": "True", "rutentoy.block_map": "false"}))
    with pytest.raises(DispatchError, match="not one of TRUE, FALSE"):      # as tshark: a boolean or nothing
        Dispatcher(PROTOCOLS, Settings(prefs={"blank.block_map": "yes"}))


# --- the real blank session --------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def session(*prefs):
    settings = Settings(prefs=dict(p.split(":") for p in prefs))
    return list(packets(str(CAPTURES_DIR / "blank-server-session.pcap"), settings))


def test_real_session_every_chunk_by_position():
    chunks = [p for p in session("blank.block_map:TRUE") if "blank.chunk.blocks.map" in p]
    assert len(chunks) == 126
    varied = 0
    for p in chunks:
        (top,) = p.index()["blank.chunk.blocks.map"]
        assert top.label.startswith("Blocks by position (x, y, z)")
        data = next(s.data for s in p.sources if s.name == "Inflated chunk")
        check_map(top, data, 0, 16, "u16", False)
        varied += len({b for b, _ in expected_blocks(data, 0, 16, "u16")}) > 1
    assert varied > 0
    assert not any("blank.chunk.blocks.map" in p for p in session())          # off by default: goldens unchanged


# --- tshark + the plugin -------------------------------------------------------------------------------------------------

CHUNKED = ["blank-all-current.pcap", "blank-server-session.pcap"]
BLANK_VARIANTS = [v for v in VARIANTS if v[0].startswith("blank")]


@pytest.mark.parametrize("variant", BLANK_VARIANTS, ids=variant_id)
def test_whole_frames_equal_tshark_with_the_map_on(variant, protodump_run, standard_run):
    name, extra = variant
    for form in (("-V",), ("-T", "json")):
        ours, theirs = protodump_run(*form, *extra, *ON, name), standard_run(*form, *extra, *ON, "-r", name)
        assert ours.returncode == 0 and theirs.returncode == 0, theirs.stderr
        assert ("blank.chunk.blocks.map" in ours.stdout or "Blocks by position" in ours.stdout) == (name in CHUNKED)
        if form == ("-V",):
            assert ours.stdout == theirs.stdout
        else:
            same, compared, left_out, differ = compare(ours.stdout, theirs.stdout)
            assert not differ and not left_out and same == compared > 0, differ[:3]


@pytest.mark.parametrize("wireshark", ["tshark_run", "other_run"])
@pytest.mark.parametrize("name,prefs", [("blank-all-current.pcap", ON),
                                        ("rutentoy-every-opcode.pcap", ("-o", "rutentoy.block_map:FALSE"))])
def test_game_layers_equal_the_plugin_either_way(request, wireshark, name, prefs, protodump_run):
    tshark = request.getfixturevalue(wireshark)
    proto = name.split("-")[0]
    ours, theirs = protodump_run("-T", "json", *prefs, name), tshark("-T", "json", *prefs, "-r", name)
    assert ours.returncode == 0 and theirs.returncode == 0, theirs.stderr
    assert ("blocks.map" in ours.stdout) == (proto == "blank")
    assert not layer_mismatches(ours.stdout, theirs.stdout, proto)


def test_plugin_time_with_the_map_on_the_big_session(tshark_run):
    """The plugin with the map on (126 chunks, 34,398 more items) takes at most 1.8 times its time without."""
    def took(*prefs):
        start = time.monotonic()
        run = tshark_run.tshark.run(["-X", f"lua_script:{CAPTURES_DIR.parent / 'lua' / 'protodump.lua'}", *prefs,
                                     "-V", "-r", "blank-server-session.pcap"])
        assert run.returncode == 0 and (b"Blocks by position" in run.stdout) == bool(prefs)
        return time.monotonic() - start
    off, on = took(), took(*ON)
    assert on < 1.8 * off + 2, (on, off)
