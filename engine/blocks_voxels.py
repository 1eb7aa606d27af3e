"""Voxel chunks: a chunk's blocks summarised (Summary: figures over strided values, as blank's 16³ chunk's
non-zero and distinct types, non-zero and maximum lights; SplitIdGrid: IDs split over two byte arrays, with
lights), and the chunk browsable by position (BlockMap): every block's ID and light by x, y, z, in a "Blocks by
position" subtree (collapsed in the GUI until opened): one slice per z, in it one row per y listing the run of x,
block IDs then lights (`y=7: blocks 1 1 0 ..., light 15 15 0 ...`). One item per row, not two per block: a 16³
chunk is 273 items, not 8,449, so -V and -T json stay readable and a whole session's map costs what its summaries
do. Index i = x + side (y + side z) (NOTES.md). Lua twin: lua/rt_voxels.lua (rt.summary, rt.split_id_grid,
rt.block_map), the same text byte for byte.

Used by Rutentoy's 8³ world chunk (split ID nibbles, summarised by SplitIdGrid) and blank's 16³
chunk (u16 types, a light byte array, summarised by Summary), each map behind its protocol's `block_map`
preference (fields.WhenPref)."""
from __future__ import annotations

import copy
import struct
import sys
from collections import Counter

from .fields import Field
from .lua_literals import lua_str
from .tree import Item, SubtreeMemo

# Frozen slices by (fields, source, place, bytes): air and stone repeat across a session's chunks. Bounded in
# bytes (a slice of random content holds about 7.5 KiB, measured with tracemalloc: some 500 slices).
SLICE_MEMO_BYTES = 4 << 20
_SLICES = SubtreeMemo(SLICE_MEMO_BYTES)

# How IDs and lights are stored (the same names in lua/rt_voxels.lua):
#   "split": ID = data[i] << 4 | data[n + i] >> 4, light = data[n + i] & 15 (Rutentoy: high bytes, then meta)
#   "u16":   ID = u16le at 4 i (type, face, turn), light = data[4 n + i] (blank)
LAYOUTS = {"split": (1, 1), "u16": (4, 4)}     # bytes per block in the ID array, light array at n * this


def map_fields(b, p: str) -> dict:
    """The fields of the map under `p` (registered in this order: map, slice, row)."""
    return {
        "map": b.field(f"{p}.map", "Block map", "none"),
        "z": b.field(f"{p}.map.z", "Slice z", "uint8"),
        "row": b.field(f"{p}.map.row", "Row of x (block IDs, lights)", "string"),
    }


def map_label(label: str, side: int) -> str:
    return f"{label} by position (x, y, z): a slice per z, a row per y, x = 0..{side - 1}"


def row_text(y: int, ids, lights, hex_ids: bool) -> str:
    """One row: `y=Y: blocks ID ID ..., light L L ...` (IDs as 3 hex digits where the spec names them in hex)."""
    shown = " ".join(f"{i:03x}" for i in ids) if hex_ids else " ".join(map(str, ids))
    return f"y={y}: blocks {shown}, light {' '.join(map(str, lights))}"


def row_values(layout: str, ids: bytes, lit: bytes, side: int) -> tuple[list[int], list[int]]:
    """The IDs and lights of one row from its ID bytes and its light (or meta) bytes."""
    if layout == "split":
        return [h << 4 | m >> 4 for h, m in zip(ids, lit)], [m & 0x0F for m in lit]
    return list(struct.unpack("<" + "H2x" * side, ids)), list(lit)


def block_map(f: dict, parent: Item, data, pos: int, side: int, layout: str, label: str, hex_ids: bool,
              src: int) -> None:
    """Every block of the side³ chunk at `pos` of `data` by position. A slice's items are frozen and shared by
    every slice with the same bytes at the same place, so a session's repeated slices cost a lookup each."""
    n = side ** 3
    stride, light_at = LAYOUTS[layout]
    lights = pos + light_at * n
    top = parent.add(Item(f["map"], None, pos, n * stride, map_label(label, side), False, src))
    plane = side * side
    for z in range(side):
        at = plane * z
        ids = bytes(data[pos + stride * at:pos + stride * (at + plane)])
        lit = bytes(data[lights + at:lights + at + plane])
        key = (id(f), src, pos, z, ids, lit, hex_ids)
        top.add(_SLICES.get(key, _slice, f, layout, side, z, ids, lit, hex_ids, pos, stride, at, src)[0])


def _slice(f, layout, side, z, ids, lit, hex_ids, pos, stride, at, src) -> tuple:
    """One z slice of a block map: its item and a row item per y (a one-item tuple, as SubtreeMemo keeps)."""
    plane = side * side
    rows, filled, lighted = [], 0, 0
    for y in range(side):
        k = side * y
        row_ids, row_lights = row_values(layout, ids[stride * k:stride * (k + side)], lit[k:k + side], side)
        filled += side - row_ids.count(0)
        lighted += side - row_lights.count(0)
        text = row_text(y, row_ids, row_lights, hex_ids)
        rows.append(Item(f["row"], text, pos + stride * (at + k), stride * side, text, False, src))
    # what the slice holds, seen before opening it: where the ground and the lights are
    piece = Item(f["z"], z, pos + stride * at, stride * plane, f"z={z}: {filled} non-zero, {lighted} lit",
                 False, src)
    piece.children = tuple(rows)
    return (piece,)


class BlockMap(Field):
    """The map of the side³ chunk that ends `back` bytes before the current position (after its IDs and lights
    were read and summarised): no bytes of its own. `hex_ids`: IDs in hex (the spec names them so)."""

    size = 0

    def __init__(self, name, label, *, side, layout, back, hex_ids=False):
        super().__init__(name, label)
        if layout not in LAYOUTS or not 0 < side <= 256 or back < (LAYOUTS[layout][1] + 1) * side ** 3:
            raise ValueError(f"BlockMap {name}: layout {layout!r}, side {side}, back {back}")
        self.side, self.layout, self.back, self.hex_ids = side, layout, back, hex_ids
        self.codes = None

    def bind(self, b, prefix):
        bound = copy.copy(self)
        bound.abbrev = f"{prefix}.{self.name}"
        bound.f = map_fields(b, bound.abbrev)
        bound.info = bound.f["map"]
        return bound

    def decode(self, ctx, parent):
        if ctx.pos < self.back:      # never after the fields that read the chunk; the Lua checks the same
            return
        block_map(self.f, parent, ctx.data, ctx.pos - self.back, self.side, self.layout, self.label,
                  self.hex_ids, ctx.source)

    def encode(self, values, out):
        pass

    def size_rule(self):
        return (0, 0, 0)

    def infos(self):
        yield from self.f.values()

    def emit_lua(self, gen, shown, raw):
        """rt.block_map (lua/rt_voxels.lua) on the chunk `back` bytes before the Lua position."""
        fs = gen.field_refs(self.f)
        gen.w(f"rt.block_map(c, T, c.pos - {self.back}, {self.side}, {lua_str(self.layout)}, "
              f"{lua_str(map_label(self.label, self.side))}, {'true' if self.hex_ids else 'false'}, {{ {fs} }})")


# --- voxel chunk summary -------------------------------------------------------------------------------------------


class Summary(Field):
    """Statistics over `count` little-endian values of `width` bytes, `stride` bytes apart, from the current
    position: how many are non-zero, how many distinct values, the maximum. Shown as generated items."""

    STATS = {"nonzero": "Non-zero", "distinct": "Distinct values", "max": "Maximum"}

    def __init__(self, name, label, *, count, stride, width, stats):
        super().__init__(name, label)
        self.count, self.stride, self.width, self.stats = count, stride, width, stats
        self.size = count * stride

    def values(self, data: bytes, pos: int) -> list[int]:
        w, s = self.width, self.stride
        if w in (1, 2, 4) and s % w == 0 and sys.byteorder == "little":    # one C-level cast, not 4096 slices
            return memoryview(data)[pos:pos + self.size].cast("BHxI"[w - 1] if w != 4 else "I")[::s // w].tolist()
        return [int.from_bytes(data[pos + i * s:pos + i * s + w], "little") for i in range(self.count)]

    def register(self, b):
        self.info = b.field(self.abbrev, self.label, "none")
        self.stat_infos = [b.field(f"{self.abbrev}.{s}", self.STATS[s], "uint32") for s in self.stats]

    def decode(self, ctx, parent):
        ctx.need(self.size, self.label, parent)
        pos = ctx.pos
        values = self.values(ctx.data, pos)
        figures = {"nonzero": len(values) - values.count(0), "distinct": len(set(values)), "max": max(values)}
        item = parent.add(Item(self.info, None, pos, self.size, self.label, False, ctx.source))
        parts = []
        for stat, info in zip(self.stats, self.stat_infos):
            item.add(Item(info, figures[stat], pos, self.size, None, True, ctx.source))
            parts.append(f"{self.STATS[stat].lower()} {figures[stat]}")
        item.label = f"{self.label}: {', '.join(parts)}"
        ctx.pos += self.size

    def infos(self):
        yield self.info
        yield from self.stat_infos

    def emit_lua(self, gen, shown, raw):
        w = gen.w
        with gen.fixed_range(self.size, self.label):
            w(f"local s = rt.summary(c, {self.count}, {self.stride}, {self.width})")
            w(f"local it = T:add(F[{lua_str(self.abbrev)}], r)")
            w("local parts = {}")
            for stat, info in zip(self.stats, self.stat_infos):
                w(f"it:add(F[{lua_str(info.abbrev)}], r, s.{stat}):set_generated()")
                w(f"parts[#parts + 1] = {lua_str(self.STATS[stat].lower() + ' ')} .. string.format(\"%d\", s.{stat})")
            w(f"it:set_text({lua_str(self.label + ': ')} .. table.concat(parts, \", \"))")
            w(f"c.pos = c.pos + {self.size}")


_UPPER_NIBBLE = bytes(b >> 4 for b in range(256))       # bytes.translate tables
_LOWER_NIBBLE = bytes(b & 0x0F for b in range(256))


class SplitIdGrid(Field):
    """`count` block IDs stored in two arrays: `high` bytes (the ID's two most significant nibbles) then `low`
    bytes (upper nibble: the ID's least significant nibble; lower nibble: a light value). ID = high << 4 |
    low >> 4. Summarised: non-air blocks, the distinct block IDs (named, with counts), lights; unknown IDs
    flagged."""

    MAX_LISTED = 64

    def __init__(self, name, label, *, count, names):
        super().__init__(name, label)
        self.count, self.names = count, names
        self.size = 2 * count
        self.codes = None

    def bind(self, b, prefix):
        bound = copy.copy(self)
        bound.abbrev = p = f"{prefix}.{self.name}"
        bound.f = {
            "high": b.field(f"{p}.high", "Block IDs (high nibbles)", "bytes"),
            "low": b.field(f"{p}.low", "Metadata (low nibble, light)", "bytes"),
            "summary": b.field(p, self.label, "none"),
            "non_air": b.field(f"{p}.non_air", "Non-air blocks", "uint32"),
            "distinct": b.field(f"{p}.distinct", "Distinct blocks", "uint32"),
            "block": b.field(f"{p}.block", "Block", "uint16", base="HEX", values=self.names),
            "count": b.field(f"{p}.block.count", "Count", "uint32"),
            "lit": b.field(f"{p}.lit", "Lit blocks", "uint32"),
            "max_light": b.field(f"{p}.max_light", "Maximum light", "uint8"),
            "unknown": b.field(f"{p}.unknown", "Blocks with unknown IDs", "uint32"),
        }
        bound.info = bound.f["summary"]
        return bound

    def decode(self, ctx, parent):
        ctx.need(self.size, self.label, parent)
        pos, n, f, src = ctx.pos, self.count, self.f, ctx.source
        high, low = ctx.data[pos:pos + n], ctx.data[pos + n:pos + 2 * n]
        parent.add(Item(f["high"], high, pos, n, None, False, src))
        parent.add(Item(f["low"], low, pos + n, n, None, False, src))
        # counted in C (bytes.translate, Counter over zip): a Python loop over the 512 blocks was the hot spot
        pairs = Counter(zip(high, bytes(low).translate(_UPPER_NIBBLE)))
        counts = {h << 4 | m: c for (h, m), c in pairs.items()}
        lights = bytes(low).translate(_LOWER_NIBBLE)
        node = parent.add(Item(f["summary"], None, pos, self.size, None, True, src))
        non_air = n - counts.get(0, 0)
        unknown = sum(c for bid, c in counts.items() if bid not in self.names)
        node.add(Item(f["non_air"], non_air, pos, self.size, None, True, src))
        node.add(Item(f["distinct"], len(counts), pos, self.size, None, True, src))
        for bid in sorted(counts)[:self.MAX_LISTED]:
            it = node.add(Item(f["block"], bid, pos, self.size, None, True, src))
            it.add(Item(f["count"], counts[bid], pos, self.size, None, True, src))
        node.add(Item(f["lit"], n - lights.count(0), pos, self.size, None, True, src))
        node.add(Item(f["max_light"], max(lights), pos, self.size, None, True, src))
        if unknown:
            it = node.add(Item(f["unknown"], unknown, pos, self.size, None, True, src))
            ctx.expert(it, "unexpected", f"{unknown} blocks have IDs the spec does not list")
        node.label = (f"{self.label}: {non_air} non-air, {len(counts)} distinct, "
                      f"{n - lights.count(0)} lit")
        ctx.pos += self.size

    def encode(self, values, out):
        ids, lights = values.get(self.name, [0] * self.count), values.get("lights", [0] * self.count)
        out += bytes(i >> 4 for i in ids) + bytes((i & 0xF) << 4 | (l & 0xF) for i, l in zip(ids, lights))

    def size_rule(self):
        return (self.size, self.size, 0)

    def infos(self):
        yield from self.f.values()

    def emit_lua(self, gen, shown, raw):
        fs = gen.field_refs(self.f)
        gen.w(f"rt.split_id_grid(c, T, {self.count}, {self.MAX_LISTED}, {lua_str(self.label)}, "
              f"{gen.values_table(self.names)}, {{ {fs} }})")


__all__ = ["BlockMap", "SplitIdGrid", "Summary", "block_map", "row_text", "row_values"]
