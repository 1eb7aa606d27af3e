"""Readable values: Rutentoy message chunks as text (a code point split across chunks shows as U+FFFD, as tshark
shows a partial UTF-8 sequence; the reassembled message is whole) and world chunks by position (every block's ID
and light at x, y, z, as tools/make_rutentoy_captures.py built them; blank's: tests/test_voxels.py). The plugin
shows the same: test_parity."""
from __future__ import annotations

from functools import lru_cache

from conftest import CAPTURES_DIR
from protodump.session import packets
from test_voxels import parse_row


@lru_cache(maxsize=None)
def decoded(name):
    return list(packets(str(CAPTURES_DIR / name)))


def test_chunk_text_and_split_code_points():
    split = whole = 0
    for p in decoded("rutentoy-messages.pcap"):
        for chunk, text in zip(p.index().get("rutentoy.message.chunk", ()),
                               p.values("rutentoy.message.chunk.text")):
            raw = bytes(chunk.value).rstrip(b"\0")
            assert text == raw.decode("utf-8", "replace")
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                split += 1
                assert "\ufffd" in text
        if p.values("rutentoy.message.cookie") == [100] and "rutentoy.message.text" in p:
            whole = p["rutentoy.message.text"]
    assert split >= 2
    assert whole.startswith("Ünïcödé → 日本語") and "\ufffd" not in whole and whole.endswith("🎉🎉🎉 end")


def test_world_chunk_by_position():
    """On by default (rutentoy.block_map): a slice per z, a row per y listing x's IDs (hex) and lights."""
    chunks = [p for p in decoded("rutentoy-every-opcode.pcap") if "rutentoy.world_chunk.blocks.map" in p]
    assert chunks
    top = chunks[0].index()["rutentoy.world_chunk.blocks.map"][0]
    assert [s.label.split(":")[0] for s in top.children] == [f"z={z}" for z in range(8)]
    for z, piece in enumerate(top.children):
        assert piece.value == z and len(piece.children) == 8
        for y, row in enumerate(piece.children):
            assert row.label == row.value and row.label.startswith(f"y={y}: blocks ")
            ids, lights = parse_row(row.value, hex_ids=True)
            for x, (block, light) in enumerate(zip(ids, lights)):
                # make_rutentoy_captures.world_chunk: stone below y 3, dirt, grass at 5, flowers at 6, a firepit
                if y < 3:
                    assert block == 0x020
                elif y < 5:
                    assert block == 0x010
                elif y == 5:
                    assert block == 0x011
                assert light == (12 if (x, y, z) == (3, 6, 0) else 0)
    assert parse_row(top.children[0].children[6].value, hex_ids=True)[0][3] == 0x07D
    # the summary stays
    assert chunks[0]["rutentoy.world_chunk.blocks.lit"] == 1
