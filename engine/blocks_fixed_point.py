"""Integers that stand for real numbers: fixed point (24.8 positions, 0.16 turns, 8.8 speeds; each shown through
one or more Views), packed floats (blank's packn/packu: a 16-bit integer for a real in [-1, 1] or [0, 1]) and
scaled bytes (a byte standing for raw / divisor * scale, Packed's 8-bit kin). The wire integer is `<name>_raw`,
the real value a generated double next to it. Each is written once here and once as the Lua it emits
(`emit_lua`: straight-line Lua, no runtime function of its own).
"""
from __future__ import annotations

import math
import struct

from .fields import Field
from .lua_literals import lua_num, lua_str
from .tree import Item


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
        w = gen.w
        signed = self.codes[0].islower()
        with gen.fixed_range(self.size, self.label):
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


# --- packed floats -------------------------------------------------------------------------------------------------


class Packed(Field):
    """A float packed into an integer (blank's packn/packu): the wire integer is `<name>_raw`, the real value
    `<name>` is a generated double: raw / divisor * scale."""

    def __init__(self, name, label, code, divisor, *, scale=1.0, unit=""):
        super().__init__(name, label)
        self.codes, self.endian, self.size = (code,), "<", 2
        self.divisor, self.scale, self.unit = divisor, scale, unit
        self.raw_info = None

    def register(self, b):
        signed = self.codes[0] == "h"
        self.raw_info = b.field(self.abbrev + "_raw", f"{self.label} (packed)", "int16" if signed else "uint16")
        self.info = b.field(self.abbrev, self.label, "double")
        self.info.labeler = lambda item, label=self.label, unit=self.unit: f"{label}: {item.value:.6g}{unit}"

    def real(self, raw: int) -> float:
        return raw / self.divisor * self.scale

    def take(self, ctx, parent, offset, raw):
        ctx.scopes[-1][self.name] = raw
        parent.add(Item(self.raw_info, raw, offset, 2))
        parent.add(Item(self.info, raw / self.divisor * self.scale, offset, 2, None, True))

    def infos(self):
        yield self.raw_info
        yield self.info

    def emit_lua(self, gen, shown, raw):
        w = gen.w
        with gen.fixed_range(2, self.label):
            w(f"local v = r:le_{'int' if self.codes[0] == 'h' else 'uint'}()")
            w(f"c.sc[#c.sc][{lua_str(self.name)}] = v")
            w(f"T:add_le(F[{lua_str(self.raw_info.abbrev)}], r)")
            w(f"local real = v / {self.divisor} * {lua_num(self.scale)}")
            w(f"T:add(F[{lua_str(self.abbrev)}], r, real, string.format(\"%s: %.6g%s\", {lua_str(self.label)}, real, "
              f"{lua_str(self.unit)})):set_generated()")
            w("c.pos = c.pos + 2")
            if shown:
                w(f"{shown} = real")
            if raw:
                w(f"{raw} = v")


def PackN(name, label, *, scale=1.0, unit=""):
    """int16 representing a float in [-1, 1]: raw / 32767."""
    return Packed(name, label, "h", 32767, scale=scale, unit=unit)


def PackU(name, label, *, scale=1.0, unit=""):
    """uint16 representing a float in [0, 1]: raw / 65535."""
    return Packed(name, label, "H", 65535, scale=scale, unit=unit)


# --- scaled bytes --------------------------------------------------------------------------------------------------


class ScaledByte(Packed):
    """A byte (code "b" signed, "B" unsigned) standing for the real value raw / divisor * scale, shown as Packed
    shows its 16-bit kin: the wire value as `<name>_raw`, the real value as the generated double `<name>`
    (Iceball's angles: 256 steps to a full or a half turn, shown in degrees)."""

    def __init__(self, name, label, code, divisor, *, scale=1.0, unit=""):
        super().__init__(name, label, code, divisor, scale=scale, unit=unit)
        self.endian, self.size = "", 1

    def register(self, b):
        ftype = "int8" if self.codes[0] == "b" else "uint8"
        self.raw_info = b.field(self.abbrev + "_raw", f"{self.label} (raw)", ftype)
        self.info = b.field(self.abbrev, self.label, "double")
        self.info.labeler = lambda item, label=self.label, unit=self.unit: f"{label}: {item.value:.6g}{unit}"

    def take(self, ctx, parent, offset, raw):
        ctx.scopes[-1][self.name] = raw
        parent.add(Item(self.raw_info, raw, offset, 1))
        parent.add(Item(self.info, raw / self.divisor * self.scale, offset, 1, None, True))

    def emit_lua(self, gen, shown, raw):
        w, q = gen.w, lua_str
        with gen.fixed_range(1, self.label):
            w(f"local v = r:{'int' if self.codes[0] == 'b' else 'uint'}()")
            w(f"c.sc[#c.sc][{q(self.name)}] = v")
            w(f"T:add(F[{q(self.raw_info.abbrev)}], r)")
            w(f"local real = v / {self.divisor} * {float(self.scale)!r}")
            w(f"T:add(F[{q(self.abbrev)}], r, real, string.format(\"%s: %.6g%s\", {q(self.label)}, real, "
              f"{q(self.unit)})):set_generated()")
            w("c.pos = c.pos + 1")


__all__ = ["Fixed8_8", "Fixed24_8", "FixedPoint", "PackN", "PackU", "Packed", "ScaledByte", "Turn16", "View"]
