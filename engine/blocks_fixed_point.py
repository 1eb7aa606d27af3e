"""Building blocks first needed by Rutentoy (a stream protocol without length fields): fixed-point numbers,
bit fields packed into one integer, an ID combined from several fields, a field-dependent sub-layout and an
8x8x8 voxel chunk summary (transfers reassembled by cookie: engine/blocks_cookies.py). Each is written once here
and once in Lua (lua/rt_rutentoy.lua, `emit_lua` below)."""
from __future__ import annotations

import copy
import math
import struct
from collections import Counter

from .fields import Field, Struct
from .tree import Item


def _lua():
    from .lua_backend import lua_num, lua_str  # imported late: the backend imports the field modules
    return lua_str, lua_num


# --- fixed point -------------------------------------------------------------------------------------------------


class View:
    """One way to show a fixed-point number: value = raw / divisor * scale, as field `<name><suffix>`."""

    def __init__(self, suffix: str, label: str, scale: float = 1.0, unit: str = ""):
        self.suffix, self.label, self.scale, self.unit = suffix, label, scale, unit


class FixedPoint(Field):
    """An integer that stands for a real number (24.8 positions, 0.16 turns, 8.8 speeds): the wire integer is
    `<name>_raw`, each View a generated double next to it."""

    def __init__(self, name, label, code, divisor, views=None, unit=""):
        super().__init__(name, label)
        self.codes, self.endian = (code,), "<"
        self.size = struct.calcsize("<" + code)
        self.divisor = divisor
        self.views = views or (View("", label, 1.0, unit),)

    def register(self, b):
        signed = self.codes[0].islower()
        self.raw_info = b.field(self.abbrev + "_raw", f"{self.label} (raw)",
                                f"{'int' if signed else 'uint'}{self.size * 8}")
        self.view_infos = []
        for v in self.views:
            info = b.field(self.abbrev + v.suffix, v.label, "double")
            info.labeler = lambda item, v=v: f"{v.label}: {item.value:.6g}{v.unit}"
            self.view_infos.append(info)
        self.view_scales = [(info, v.scale) for v, info in zip(self.views, self.view_infos)]    # what take() reads
        self.info = self.raw_info

    def take(self, ctx, parent, offset, raw):
        ctx.scopes[-1][self.name] = raw
        size, src, divisor = self.size, ctx.source, self.divisor
        add = parent.add
        add(Item(self.raw_info, raw, offset, size, None, False, src))
        for info, scale in self.view_scales:
            add(Item(info, raw / divisor * scale, offset, size, None, True, src))

    def encode(self, values, out):
        value = values.get(self.name, 0)
        if isinstance(value, float):           # a real value: the encoder rounds it to the fixed point
            value = round(value * self.divisor / self.views[0].scale)
        out += struct.pack("<" + self.codes[0], value)

    def infos(self):
        yield self.raw_info
        yield from self.view_infos

    def emit_lua(self, gen, shown, raw):
        lua_str, lua_num = _lua()
        w = gen.w
        signed = self.codes[0].islower()
        with w.block("do"):
            w(f"rt.need(c, {self.size}, {lua_str(self.label)}, T)")
            w(f"local r = c.tvb(c.pos, {self.size})")
            w(f"local v = r:le_{'int' if signed else 'uint'}()")
            w(f"c.sc[#c.sc][{lua_str(self.name)}] = v")
            w(f"T:add_le(F[{lua_str(self.raw_info.abbrev)}], r)")
            for v, info in zip(self.views, self.view_infos):
                w(f"local real = v / {lua_num(float(self.divisor))} * {lua_num(float(v.scale))}")
                w(f"T:add(F[{lua_str(info.abbrev)}], r, real, string.format(\"%s: %.6g%s\", {lua_str(v.label)}, "
                  f"real, {lua_str(v.unit)})):set_generated()")
            w(f"c.pos = c.pos + {self.size}")


def Fixed24_8(name, label):
    """Signed 24.8 fixed point (value / 256)."""
    return FixedPoint(name, label, "i", 256)


def Fixed8_8(name, label, unit=""):
    """Unsigned 8.8 fixed point (value / 256)."""
    return FixedPoint(name, label, "H", 256, unit=unit)


def Turn16(name, label):
    """Unsigned 0.16 fraction of a turn: shown in degrees and in radians."""
    return FixedPoint(name, label, "H", 65536, (View("", label, 360.0, "°"),
                                                 View("_rad", f"{label} (radians)", 2 * math.pi, " rad")))


# --- bit fields --------------------------------------------------------------------------------------------------


class Bits:
    """One part of a BitFields integer: `width` bits from bit `shift` (0 = least significant), sign-extended
    when signed; `values` names it (unknown values flagged when `strict`)."""

    def __init__(self, name, label, shift, width, *, signed=False, values=None, strict=False, base="DEC"):
        self.name, self.label, self.shift, self.width = name, label, shift, width
        self.signed, self.values, self.strict, self.base = signed, values, strict, base
        self.info = None

    def extract(self, raw: int) -> int:
        v = (raw >> self.shift) & ((1 << self.width) - 1)
        if self.signed and v >> (self.width - 1):
            v -= 1 << self.width
        return v

    def insert(self, v: int) -> int:
        return (v & ((1 << self.width) - 1)) << self.shift


class BitFields(Field):
    """One little-endian integer holding several bit fields (the i21/i19/i21 chunk coordinates in a u64, the
    block nibbles in a u16): the integer in hex, each part as a child with its own (sign-extended) value."""

    def __init__(self, name, label, code, parts: tuple[Bits, ...]):
        super().__init__(name, label)
        self.codes, self.endian = (code,), "<"
        self.size = struct.calcsize("<" + code)
        self.parts = parts

    def bind(self, b, prefix):
        bound = copy.copy(self)
        bound.abbrev = f"{prefix}.{self.name}"
        bound.info = b.field(bound.abbrev, self.label, f"uint{self.size * 8}", base="HEX")
        bound.parts = tuple(copy.copy(p) for p in self.parts)
        for p in bound.parts:
            bits = 8 if p.width <= 8 else 16 if p.width <= 16 else 32
            kind = f"{'int' if p.signed else 'uint'}{bits}"
            p.info = b.field(f"{prefix}.{p.name}", p.label, kind, base="DEC" if p.signed else p.base,
                             values=p.values)
        return bound

    def take(self, ctx, parent, offset, raw):
        scope = ctx.scopes[-1]
        scope[self.name] = raw
        item = parent.add(Item(self.info, raw, offset, self.size, None, False, ctx.source))
        for p in self.parts:
            v = scope[p.name] = p.extract(raw)
            kid = item.add(Item(p.info, v, offset, self.size, None, False, ctx.source))
            if p.strict and p.values is not None and v not in p.values:
                ctx.expert(kid, "unexpected", f"Unknown {p.label} {v}")

    def encode(self, values, out):
        if self.name in values:
            raw = values[self.name]
        else:
            raw = 0
            for p in self.parts:
                raw |= p.insert(values.get(p.name, 0))
        out += struct.pack("<" + self.codes[0], raw)

    def infos(self):
        yield self.info
        for p in self.parts:
            yield p.info

    def emit_lua(self, gen, shown, raw):
        lua_str, _ = _lua()
        w = gen.w
        with w.block("do"):
            w(f"rt.need(c, {self.size}, {lua_str(self.label)}, T)")
            w(f"local r = c.tvb(c.pos, {self.size})")
            w("local s = r:bytes():raw()")
            w(f"local it = T:add_le(F[{lua_str(self.abbrev)}], r)")
            w(f"c.sc[#c.sc][{lua_str(self.name)}] = rt.bits(s, 0, {min(self.size * 8, 48)}, false)")
            for p in self.parts:
                w(f"local v = rt.bits(s, {p.shift}, {p.width}, {'true' if p.signed else 'false'})")
                w(f"c.sc[#c.sc][{lua_str(p.name)}] = v")
                w(f"local k = it:add(F[{lua_str(p.info.abbrev)}], r, v)")
                if p.strict and p.values is not None:
                    w(f"if {gen.values_table(p.values)}[v] == nil then rt.expert(c, k, \"unexpected\", "
                      f"string.format(\"Unknown %s %d\", {lua_str(p.label)}, v)) end")
            w(f"c.pos = c.pos + {self.size}")


# --- an ID made of several fields ----------------------------------------------------------------------------------


class Combined(Field):
    """A generated number made of fields read before: sum of value << shift (Set Block's nibble << 8 | block).
    Named from `values`; a value not named is flagged."""

    size = 0

    def __init__(self, name, label, parts: tuple[tuple[str, int], ...], *, values=None, base="HEX"):
        super().__init__(name, label)
        self.parts, self.values, self.base = parts, values, base
        self.codes = None

    def register(self, b):
        self.info = b.field(self.abbrev, self.label, "uint16", base=self.base, values=self.values)

    def decode(self, ctx, parent):
        v = sum((ctx.lookup(name) or 0) << shift for name, shift in self.parts)
        ctx.scopes[-1][self.name] = v
        item = parent.add(Item(self.info, v, ctx.pos, 0, None, True, ctx.source))
        if self.values is not None and v not in self.values:
            ctx.expert(item, "unexpected", f"Unknown {self.label} 0x{v:03x}")

    def encode(self, values, out):
        pass

    def size_rule(self):
        return (0, 0, 0)

    def emit_lua(self, gen, shown, raw):
        lua_str, _ = _lua()
        w = gen.w
        total = " + ".join(f"(rt.lookup(c, {lua_str(n)}) or 0) * {1 << s}" for n, s in self.parts)
        with w.block("do"):
            w(f"local v = {total}")
            w(f"c.sc[#c.sc][{lua_str(self.name)}] = v")
            w(f"local it = T:add(F[{lua_str(self.abbrev)}], c.tvb(c.pos, 0), v)")
            w("it:set_generated()")
            if self.values is not None:
                w(f"if {gen.values_table(self.values)}[v] == nil then rt.expert(c, it, \"unexpected\", "
                  f"string.format(\"Unknown %s 0x%03x\", {lua_str(self.label)}, v)) end")


# --- a layout chosen by an earlier field ------------------------------------------------------------------------------


class Select(Field):
    """The fields that follow depend on the value of an earlier field (Object Metadata's meta_type): one
    transparent Struct per value, `default` for the others. All cases have the same size (framing needs it)."""

    def __init__(self, on: str, cases: dict[int, Struct], default: Field):
        super().__init__(f"select_{on}", None)
        self.on, self.cases, self.default_field = on, cases, default
        sizes = {c.size for c in cases.values()} | {default.size}
        self.size = sizes.pop() if len(sizes) == 1 else None

    def bind(self, b, prefix):
        bound = copy.copy(self)
        bound.abbrev = prefix
        bound.cases = {k: s.bind(b, prefix) for k, s in self.cases.items()}
        bound.default_field = self.default_field.bind(b, prefix)
        bound.codes = None
        return bound

    def decode(self, ctx, parent):
        self.cases.get(ctx.lookup(self.on), self.default_field).decode(ctx, parent)

    def encode(self, values, out):
        self.cases.get(values.get(self.on, 0), self.default_field).encode(values, out)

    def size_rule(self):
        rules = [s.size_rule() for s in (*self.cases.values(), self.default_field)]
        return (min(r[0] for r in rules), max(r[1] for r in rules), 1 if len(set(rules)) > 1 else 0)

    def infos(self):
        for s in self.cases.values():
            yield from s.infos()
        yield from self.default_field.infos()

    def emit_lua(self, gen, shown, raw):
        lua_str, _ = _lua()
        w = gen.w
        with w.block("do"):
            w(f"local v = rt.lookup(c, {lua_str(self.on)})")
            first = True
            for k, s in self.cases.items():
                w(f"{'if' if first else 'elseif'} v == {k} then")
                w.depth += 1
                w(f"{gen.struct_body(s)}(c, T)")
                w.depth -= 1
                first = False
            w("else")
            w.depth += 1
            gen.emit(self.default_field)
            w.depth -= 1
            w("end")


# --- voxel chunk summary -------------------------------------------------------------------------------------------


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
        lua_str, _ = _lua()
        fs = ", ".join(f"{k} = F[{lua_str(v.abbrev)}]" for k, v in self.f.items())
        gen.w(f"rt.split_id_grid(c, T, {self.count}, {self.MAX_LISTED}, {lua_str(self.label)}, "
              f"{gen.values_table(self.names)}, {{ {fs} }})")


__all__ = ["BitFields", "Bits", "Combined", "Fixed8_8", "Fixed24_8", "FixedPoint", "Select", "SplitIdGrid", "Turn16",
           "View"]
