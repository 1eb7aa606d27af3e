"""Building blocks first needed by ENet, named for what they do (any protocol may use them). Each decodes in Python
and emits its Lua twin itself (`emit_lua`), the hook engine/lua_backend.py calls for classes it does not know."""
from __future__ import annotations

import copy

from .fields import Field, Number
from .tree import Item


class Part:
    """One named bit group of a BitSplit: a 1-bit mask is a boolean, a wider one an integer (masked, shifted)."""

    def __init__(self, name: str, label: str, mask: int, *, values: dict[int, str] | None = None,
                 base: str = "DEC"):
        self.name, self.label, self.mask, self.values, self.base = name, label, mask, values, base
        self.shift = (mask & -mask).bit_length() - 1
        self.is_bool = mask & (mask - 1) == 0
        self.info = None


class BitSplit(Field):
    """An integer with named bit groups under it (ENet's peer id / session id / flags in one u16, the command
    byte's type nibble and flags). Parts are registered as `<prefix>.<part>` and their values (ints; 0/1 for
    booleans) go into the scope under their names, so later fields and switches can read them."""

    def __init__(self, number: Number, parts: tuple[Part, ...]):
        super().__init__(number.name, number.label)
        self.number, self.parts = number, parts
        self.codes, self.endian, self.size = number.codes, number.endian, number.size

    def bind(self, b, prefix):
        bound = copy.copy(self)
        bound.abbrev = f"{prefix}.{self.name}"
        bound.number = self.number.bind(b, prefix)
        bound.info = bound.number.info
        bound.parts = tuple(copy.copy(p) for p in self.parts)
        bits = self.size * 8
        for p in bound.parts:
            if p.is_bool:
                p.info = b.field(f"{prefix}.{p.name}", p.label, "bool", mask=p.mask, bits=bits)
            else:
                p.info = b.field(f"{prefix}.{p.name}", p.label, bound.number.ftype, base=p.base, values=p.values,
                                 mask=p.mask)
        return bound

    def take(self, ctx, parent, offset, raw):
        self.number.take(ctx, parent, offset, raw)
        item = parent.children[-1]
        scope = ctx.scopes[-1]
        for p in self.parts:
            value = (raw & p.mask) >> p.shift
            scope[p.name] = value
            item.add(Item(p.info, bool(value) if p.is_bool else value, offset, self.size))

    def store(self, scope, raw):
        scope[self.name] = raw
        for p in self.parts:
            scope[p.name] = (raw & p.mask) >> p.shift

    def encode(self, values, out):
        raw = values.get(self.name)
        if raw is None:
            raw = 0
            for p in self.parts:
                raw |= (int(values.get(p.name, 0)) << p.shift) & p.mask
        self.number.encode({self.name: raw}, out)

    def infos(self):
        yield self.info
        for p in self.parts:
            yield p.info

    # --- Lua ------------------------------------------------------------------------------------------------------
    def emit_lua(self, gen, shown, raw):
        from .lua_backend import lua_str  # the backend imports the table language, not the other way round
        w = gen.w
        with w.block("do"):
            gen.emit_Number(self.number, shown, raw, item_var="it")
            w("local sc = c.sc[#c.sc]")
            for p in self.parts:
                w(f"local p = math.floor(v / {1 << p.shift}) % {(p.mask >> p.shift) + 1}")
                w(f"sc[{lua_str(p.name)}] = p")
                # every part's ProtoField carries its mask (lua_backend.protofield), so it splits the value itself
                w(f"it:{gen.add(self.number)}(F[{lua_str(p.info.abbrev)}], r)")
