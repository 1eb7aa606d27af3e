"""Vectors and rotations: three (or more) numbers under one item labelled "Name: (x, y, z)" (Vec3 and its
kinds: int32, float, int8, packed floats), optionally with the generated sum with a base vector read earlier, and
blank's smallest-three quaternion (QuatSmallest3). Each decodes here and emits its Lua (`emit_lua`); the twin
lua/rt_vectors.lua holds what the Lua calls (rt.short, rt.quat_smallest3).
"""
from __future__ import annotations

import copy
import math

from .blocks_fixed_point import Packed, PackN, PackU
from .fields import F32LE, I8, I32LE, Field
from .lua_literals import lua_str
from .strings import g6
from .tree import BLOCK_MEMO_BYTES, Item, SubtreeMemo, frozen

# --- vectors -------------------------------------------------------------------------------------------------------


class Vec3(Field):
    """Three (or `len(names)`) fields of one kind under one item labelled "Name: (x, y, z)".

    absolute_base/absolute: also show the generated sum with a vector field read earlier (Entity Update's
    chunk positions relative to the packet's base)."""

    def __init__(self, name, label, element, *, names=("x", "y", "z"), absolute_base=None, absolute=None):
        super().__init__(name, label)
        self.element, self.names = element, names
        self.elements = [element(n, n) for n in names]
        for e in self.elements:
            if not isinstance(e, Packed) and (e.expect is not None or e.check_range or e.values):
                raise ValueError(f"{name}: vector elements take no checks")
        self.codes = tuple(c for e in self.elements for c in e.codes)
        self.endian = next((e.endian for e in self.elements if e.endian), "")
        self.size = sum(e.size for e in self.elements)
        self.absolute_base, self.absolute = absolute_base, absolute
        self.abs_info = self.abs_infos = None

    def bind(self, b, prefix):
        bound = copy.copy(self)
        bound.abbrev = f"{prefix}.{self.name}"
        bound.info = b.field(bound.abbrev, self.label, "none")
        bound.info.labeler = bound.vector_label
        bound.memo = SubtreeMemo(BLOCK_MEMO_BYTES)
        bound.elements = [e.bind(b, bound.abbrev) for e in self.elements]
        if self.absolute:
            absolute = f"{prefix}.{self.absolute}"
            bound.abs_info = b.field(absolute, "Chunk position", "none")
            bound.abs_info.labeler = lambda item: f"Chunk position: ({', '.join(str(c.value) for c in item.children)})"
            bound.abs_infos = [b.field(f"{absolute}.{n}", n, "int32") for n in self.names]
        return bound

    def take(self, ctx, parent, offset, raw):
        item = parent.add(Item(self.info, None, offset, self.size))
        item.children = frozen(self.memo, ctx, (raw, offset), self.element_items, raw, offset)
        ctx.scopes[-1][self.name] = raw
        if self.absolute:
            self.add_absolute(ctx, parent, offset, raw)

    def element_items(self, raw, offset):
        # Elements are plain numbers or packed floats (no checks): their items are made here directly.
        kids, at = [], offset
        for e, v in zip(self.elements, raw):
            if e.__class__ is Packed:
                kids.append(Item(e.raw_info, v, at, 2))
                kids.append(Item(e.info, v / e.divisor * e.scale, at, 2, None, True))
            else:
                kids.append(Item(e.info, v, at, e.size))
            at += e.size
        return kids

    def add_absolute(self, ctx, parent, offset, raw):
        """The generated sum with the base vector read earlier (Entity Update's relative chunk positions)."""
        base = ctx.lookup(self.absolute_base) or (0,) * len(raw)
        # int32 fields: a sum past 2^31 wraps, as Wireshark stores a Lua number in an FT_INT32
        total = tuple((a + b + 0x80000000) % 0x100000000 - 0x80000000 for a, b in zip(base, raw))
        node = parent.add(Item(self.abs_info, None, offset, self.size, None, True))
        node.children = frozen(self.memo, ctx, ("abs", total, offset), self.absolute_items, total, offset)

    def absolute_items(self, total, offset):
        return [Item(info, v, offset, self.size, None, True) for info, v in zip(self.abs_infos, total)]

    def vector_label(self, item) -> str:
        """"Velocity: (1.5, 0, -2)": the real values (packed elements: the computed one, not the raw)."""
        shown = [c.value for c in item.children if c.generated or c.field.abbrev[-4:] != "_raw"]
        return f"{self.label}: ({', '.join(g6(v) if isinstance(v, float) else str(v) for v in shown)})"

    def encode(self, values, out):
        for e, v in zip(self.elements, values.get(self.name, (0,) * len(self.elements))):
            e.encode({e.name: v}, out)

    def infos(self):
        yield self.info
        for e in self.elements:
            yield from e.infos()
        if self.abs_info:
            yield self.abs_info
            yield from self.abs_infos

    def emit_lua(self, gen, shown, raw):
        w = gen.w
        n = len(self.elements)
        with gen.fixed_range(self.size, self.label):
            w(f"local it = T:add(F[{lua_str(self.abbrev)}], r)")
            shows = [gen.tmp("e") for _ in range(n)]
            raws = [gen.tmp("w") for _ in range(n)]
            w(f"local {', '.join(shows + raws)}")
            w("c.sc[#c.sc + 1] = {}")
            w("do")
            w("local T = it")
            for e, s, rv in zip(self.elements, shows, raws):
                with w.block("do"):
                    gen.emit(e, s, rv)
            w("end")
            w("rt.pop(c)")
            w(f"c.sc[#c.sc][{lua_str(self.name)}] = {{ {', '.join(raws)} }}")
            is_float = [isinstance(e, Packed) or getattr(e, "kind", "") in ("float", "double")
                        for e in self.elements]
            joined = ' .. ", " .. '.join(f"rt.short({s}, {'true' if fl else 'false'})" for s, fl in zip(shows, is_float))
            w(f"it:set_text({lua_str(self.label + ': (')} .. {joined} .. \")\")")
            if self.absolute:
                w(f"local base = rt.lookup(c, {lua_str(self.absolute_base)}) or {{ {', '.join(['0'] * n)} }}")
                # wrapped to int32 as Python does (add_absolute)
                wrap = "(base[{}] + {} + 2147483648) % 4294967296 - 2147483648"
                w(f"local tot = {{ {', '.join(wrap.format(i + 1, rv) for i, rv in enumerate(raws))} }}")
                w(f"local g = T:add(F[{lua_str(self.abs_info.abbrev)}], r)")
                parts = ' .. ", " .. '.join(f'string.format("%d", tot[{i + 1}])' for i in range(n))
                w(f"g:set_text(\"Chunk position: (\" .. {parts} .. \")\")")
                w("g:set_generated()")
                for i, info in enumerate(self.abs_infos):
                    w(f"g:add(F[{lua_str(info.abbrev)}], r, tot[{i + 1}]):set_generated()")
            if shown:
                w(f"{shown} = nil")


def Vec3I(name, label, **kw):
    return Vec3(name, label, I32LE, **kw)


def Vec3F(name, label, **kw):
    return Vec3(name, label, F32LE, **kw)


def Vec3B(name, label, **kw):
    return Vec3(name, label, I8, **kw)


def Vec3N(name, label, **kw):
    return Vec3(name, label, lambda n, l: PackN(n, l), **kw)


def Vec3U(name, label, *, scale=1.0, **kw):
    return Vec3(name, label, lambda n, l: PackU(n, l, scale=scale), **kw)


# --- quaternion --------------------------------------------------------------------------------------------------

QUAT_BIAS = 524287
QUAT_RANGE = 0.7072


class QuatSmallest3(Field):
    """blank's `quat`: one little-endian u64; bits 63-62 the index of the largest component, then three 20-bit
    fields (bits 59-40, 39-20, 19-0) with the others in x,y,z,w order, each int(q * 524287 / 0.7072) + 524287.
    The largest is sqrt(1 - sum of squares of the others)."""

    codes, endian, size = ("Q",), "<", 8
    AXES = ("x", "y", "z", "w")

    def register(self, b):
        self.memo = SubtreeMemo(BLOCK_MEMO_BYTES)
        self.info = b.field(self.abbrev, self.label, "uint64", base="HEX")
        self.info.labeler = self.quat_label
        self.largest_info = b.field(self.abbrev + ".largest", "Largest component", "uint8",
                                    values=dict(enumerate(self.AXES)))
        self.axis_infos = [b.field(f"{self.abbrev}.{a}", a, "double") for a in self.AXES]

    @staticmethod
    def unpack(raw: int) -> tuple[int, list[float]]:
        largest = raw >> 62
        small = [((raw >> shift) & 0xFFFFF) for shift in (40, 20, 0)]
        small = [(c - QUAT_BIAS) * QUAT_RANGE / QUAT_BIAS for c in small]
        big = math.sqrt(max(0.0, 1.0 - (small[0] * small[0] + small[1] * small[1] + small[2] * small[2])))
        return largest, small[:largest] + [big] + small[largest:]

    def take(self, ctx, parent, offset, raw):
        ctx.scopes[-1][self.name] = raw
        item = parent.add(Item(self.info, raw, offset, 8))
        item.children = frozen(self.memo, ctx, (raw, offset), self.component_items, raw, offset)

    def component_items(self, raw, offset):
        largest, q = self.unpack(raw)
        yield Item(self.largest_info, largest, offset, 8, None, True)
        for info, v in zip(self.axis_infos, q):
            yield Item(info, v, offset, 8, None, True)

    def quat_label(self, item) -> str:
        q = [c.value for c in item.children[1:5]]
        return f"{self.label}: ({', '.join(g6(v) for v in q)})"

    def infos(self):
        yield self.info
        yield self.largest_info
        yield from self.axis_infos

    def emit_lua(self, gen, shown, raw):
        w = gen.w
        with gen.fixed_range(8, self.label):
            w(f"c.sc[#c.sc][{lua_str(self.name)}] = r:le_uint64()")
            w("local largest, q = rt.quat_smallest3(r)")
            w(f"local it = T:add_le(F[{lua_str(self.abbrev)}], r)")
            w(f"it:set_text(string.format(\"%s: (%.6g, %.6g, %.6g, %.6g)\", {lua_str(self.label)}, "
              f"q[1], q[2], q[3], q[4]))")
            w(f"it:add(F[{lua_str(self.largest_info.abbrev)}], r, largest):set_generated()")
            for i, info in enumerate(self.axis_infos):
                w(f"it:add(F[{lua_str(info.abbrev)}], r, q[{i + 1}]):set_generated()")
            w("c.pos = c.pos + 8")


__all__ = ["QuatSmallest3", "Vec3", "Vec3B", "Vec3F", "Vec3I", "Vec3N", "Vec3U"]
