"""Integers made of bits: named bit groups of one integer (BitSplit with Parts: masks shown as Wireshark shows
them; BitFields with Bits: shifted and sign-extended fields of a little-endian integer) and a generated ID
combined from several fields (Combined). Each decodes here and emits its Lua twin (`emit_lua`; BitFields reads
through rt.bits in lua/rt_bits.lua), so tshark builds the same tree.
"""
from __future__ import annotations

import struct

from .fields import Field, NumberWithParts, WithParts
from .lua_literals import lua_str
from .tree import Item


class Part:
    """One named bit group of a BitSplit: a 1-bit mask is a boolean, a wider one an integer (masked, shifted)."""

    def __init__(self, name: str, label: str, mask: int, *, values: dict[int, str] | None = None,
                 base: str = "DEC"):
        self.name, self.label, self.mask, self.values, self.base = name, label, mask, values, base
        self.shift = (mask & -mask).bit_length() - 1
        self.is_bool = mask & (mask - 1) == 0
        self.info = None


class BitSplit(NumberWithParts):
    """An integer with named bit groups under it (ENet's peer id / session id / flags in one u16, the command
    byte's type nibble and flags). Parts are registered as `<prefix>.<part>` and their values (ints; 0/1 for
    booleans) go into the scope under their names, so later fields and switches can read them."""

    def part_info(self, b, prefix, p):
        if p.is_bool:
            return b.field(f"{prefix}.{p.name}", p.label, "bool", mask=p.mask, bits=self.size * 8)
        return b.field(f"{prefix}.{p.name}", p.label, self.number.ftype, base=p.base, values=p.values, mask=p.mask)

    def take_parts(self, ctx, item, offset, raw):
        scope = ctx.scopes[-1]
        for p in self.parts:
            value = (raw & p.mask) >> p.shift
            scope[p.name] = value
            item.add(Item(p.info, bool(value) if p.is_bool else value, offset, self.size))

    # take() as NumberWithParts's, restated here beside store() so that a NULL-tree scan stores the values
    # without a throwaway item (engine.fields._stores: the nearest class defining either must define both)
    take = NumberWithParts.take

    def store(self, scope, raw):
        scope[self.name] = raw
        for p in self.parts:
            scope[p.name] = (raw & p.mask) >> p.shift

    def store_source(self, value):
        if type(self).store is not BitSplit.store:
            return None
        return [f"v = {value}", f"s[{self.name!r}] = v",
                *(f"s[{p.name!r}] = (v & {p.mask}) >> {p.shift}" for p in self.parts)]

    def encode(self, values, out):
        raw = values.get(self.name)
        if raw is None:
            raw = 0
            for p in self.parts:
                raw |= (int(values.get(p.name, 0)) << p.shift) & p.mask
        self.number.encode({self.name: raw}, out)

    # --- Lua ------------------------------------------------------------------------------------------------------
    def emit_lua(self, gen, shown, raw):
        w = gen.w
        with w.block("do"):
            gen.emit_Number(self.number, shown, raw, item_var="it")
            w("local sc = c.sc[#c.sc]")
            for p in self.parts:
                w(f"local p = math.floor(v / {1 << p.shift}) % {(p.mask >> p.shift) + 1}")
                w(f"sc[{lua_str(p.name)}] = p")
                # every part's ProtoField carries its mask (lua_backend.protofield), so it splits the value itself
                w(f"it:{gen.add(self.number)}(F[{lua_str(p.info.abbrev)}], r)")


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


class BitFields(WithParts):
    """One little-endian integer holding several bit fields (the i21/i19/i21 chunk coordinates in a u64, the
    block nibbles in a u16): the integer in hex, each part as a child with its own (sign-extended) value."""

    def __init__(self, name, label, code, parts: tuple[Bits, ...]):
        super().__init__(name, label)
        self.codes, self.endian = (code,), "<"
        self.size = struct.calcsize("<" + code)
        self.parts = parts

    def register(self, b):
        self.info = b.field(self.abbrev, self.label, f"uint{self.size * 8}", base="HEX")

    def part_info(self, b, prefix, p):
        bits = 8 if p.width <= 8 else 16 if p.width <= 16 else 32
        kind = f"{'int' if p.signed else 'uint'}{bits}"
        return b.field(f"{prefix}.{p.name}", p.label, kind, base="DEC" if p.signed else p.base, values=p.values)

    def store(self, scope, raw):
        """The integer and each part's value (NULL tree: engine.fields Field.scan)."""
        scope[self.name] = raw
        for p in self.parts:
            scope[p.name] = p.extract(raw)

    def take(self, ctx, parent, offset, raw):
        scope = ctx.scopes[-1]
        self.store(scope, raw)
        item = parent.add(Item(self.info, raw, offset, self.size, None, False, ctx.source))
        for p in self.parts:
            v = scope[p.name]
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

    def emit_lua(self, gen, shown, raw):
        w = gen.w
        with gen.fixed_range(self.size, self.label):
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


__all__ = ["BitFields", "BitSplit", "Bits", "Combined", "Part"]
