"""Parts whose length an earlier field gives, and the stream framing a table gives from them:

- Counted: a string or byte run whose length is an earlier field (`len.u8 name[len]`).
- Framed: an inner packet bounded by a length (an earlier field plus a constant, e.g. Iceball's 0x40 + len - 1).
- framing_steps / measure / lua_steps: how long a packet on a byte stream is, told from its table (fixed sizes
  and these lengths) before decoding it, for a protocol with no length header of its own.

Each decodes here and emits its Lua twin (`emit_lua`, runtime in lua/rt_framing.lua: rt.framed, rt.measure), so
tshark builds the same tree.
"""
from __future__ import annotations

import copy
import struct

from .blocks_transfer import Transfer
from .fields import Field, Struct
from .lua_literals import lua_str
from .strings import TRAILING_STRAY, stray_after_nul, wire_string
from .tree import UNDECODED, WARN, ExpertInfo, Item


# --- counted strings and bytes -------------------------------------------------------------------------------------


class Counted(Field):
    """`length` bytes (the value of an earlier field) as a UTF-8 string (text=True) or raw bytes. A length past
    the data is Malformed (the decode stops), so a stream framer can tell "need more" from a whole packet."""

    def __init__(self, name, label, *, length: str, text: bool = True):
        super().__init__(name, label)
        self.length, self.text = length, text

    def register(self, b):
        self.info = b.field(self.abbrev, self.label, "string" if self.text else "bytes")

    def decode(self, ctx, parent):
        n = ctx.lookup(self.length) or 0
        ctx.need(n, self.label, parent)
        raw = ctx.data[ctx.pos:ctx.pos + n]
        value = wire_string(raw) if self.text else raw
        ctx.scopes[-1][self.name] = value
        item = parent.add(Item(self.info, value, ctx.pos, n))
        if self.text and stray_after_nul(raw):      # the expert Wireshark adds by itself to such a string item
            item.expert(ExpertInfo(TRAILING_STRAY, UNDECODED, WARN, "Trailing stray characters"))
        ctx.pos += n

    def encode(self, values, out):
        value = values.get(self.name, "" if self.text else b"")
        out += value.encode() if isinstance(value, str) else value

    def default(self):
        return "" if self.text else b""

    def size_rule(self):
        return (0, 255, 1)

    def emit_lua(self, gen, shown, raw):
        w, q = gen.w, lua_str
        with w.block("do"):
            w(f"local n = rt.lookup(c, {q(self.length)}) or 0")
            gen.take_range("n", self.label)
            if self.text:
                w(f"c.sc[#c.sc][{q(self.name)}] = rt.utf8(c.tvb:raw(c.pos, n))")
                w(f"T:add_packet_field(F[{q(self.abbrev)}], r, ENC_UTF_8)")
            else:
                w(f"c.sc[#c.sc][{q(self.name)}] = n > 0 and r:raw() or \"\"")
                w(f"T:add(F[{q(self.abbrev)}], r)")
            w("c.pos = c.pos + n")


# --- framing ---------------------------------------------------------------------------------------------------------


class Framed(Field):
    """An inner packet of `length` bytes: the value of an earlier field plus `delta` (0x40..0x7E carry
    "length + 0x3F" in the id byte itself). The inner decode is bounded by the frame; bytes it leaves are trailing
    data. `shown`: also show the length as a generated item (when the wire has no length field of its own)."""

    def __init__(self, name, label, *, length: str, delta: int = 0, body: Struct, limit: int | None = None,
                 shown: bool = False):
        super().__init__(name, label)
        self.length, self.delta, self.body, self.limit, self.shown = length, delta, body, limit, shown

    def bind(self, b, prefix):
        bound = copy.copy(self)
        bound.abbrev = f"{b.proto}.{self.name}"
        bound.info = b.field(bound.abbrev, self.label, "uint16") if self.shown else None
        bound.trailing_info = b.field(f"{b.proto}.{self.name}_trailing", "Bytes after the inner packet", "bytes")
        bound.body = self.body.bind(b, prefix)
        return bound

    def frame_size(self, ctx) -> int:
        return (ctx.lookup(self.length) or 0) + self.delta

    def decode(self, ctx, parent):
        n = self.frame_size(ctx)
        if self.shown:
            parent.add(Item(self.info, n, ctx.pos, 0, None, True))
        if self.limit is not None and not 1 <= n <= self.limit:
            ctx.expert(parent, "unexpected", f"{self.label}: length {n} is outside 1..{self.limit}")
        ctx.need(n, self.label, parent)
        start, end = ctx.pos, ctx.end
        ctx.end = start + n
        try:
            self.body.decode(ctx, parent)
            if ctx.pos < ctx.end:
                parent.add(Item(self.trailing_info, ctx.data[ctx.pos:ctx.end], ctx.pos, ctx.end - ctx.pos))
                ctx.expert(parent, "trailing", f"{ctx.end - ctx.pos} bytes after the inner packet")
        finally:
            ctx.end = end
            ctx.pos = start + n

    def encode(self, values, out):
        self.body.encode(values, out)

    def size_rule(self):
        return (0, self.limit or (1 << 16), 1)

    def infos(self):
        if self.info is not None:
            yield self.info
        yield self.trailing_info
        yield from self.body.infos()

    def emit_lua(self, gen, shown, raw):
        w, q = gen.w, lua_str
        body = gen.struct_body(self.body)
        with w.block("do"):
            w(f"local n = (rt.lookup(c, {q(self.length)}) or 0) + {self.delta}")
            if self.shown:
                w(f"T:add(F[{q(self.abbrev)}], c.tvb(c.pos, 0), n):set_generated()")
            if self.limit is not None:
                w(f"if n < 1 or n > {self.limit} then rt.expert(c, T, \"unexpected\", string.format("
                  f"\"%s: length %d is outside 1..%d\", {q(self.label)}, n, {self.limit})) end")
            w(f"rt.need(c, n, {q(self.label)}, T)")
            w(f"rt.framed(c, T, n, {body}, F[{q(self.trailing_info.abbrev)}])")


# --- stream framing from the tables -----------------------------------------------------------------------------------


INT_CODES = ("B", "H", "I", "b", "h", "i")


def framing_steps(packet: Struct) -> list[tuple] | None:
    """How to measure `packet` on the wire from its table: ("fixed", size, code, name) steps (code and name when it
    is an integer a later length refers to) and ("counted", length name, delta) steps; None when a field's size
    cannot be told before decoding it. Python and Lua (rt.measure) read the same steps."""
    steps = []
    lengths = {f.length for f in packet.fields if isinstance(f, (Counted, Framed))}
    for f in packet.fields:
        if isinstance(f, Transfer):
            continue
        if isinstance(f, (Counted, Framed)):
            steps.append(("counted", f.length, getattr(f, "delta", 0)))
        elif f.size is not None:
            read = f.name in lengths and f.codes is not None and len(f.codes) == 1 and f.codes[0] in INT_CODES
            steps.append(("fixed", f.size, f.endian + f.codes[0] if read else "", f.name))
        else:
            return None
    return steps


def measure(steps: list[tuple] | None, data: bytes, pos: int, values: dict[str, int]) -> int:
    """The length the steps give at `pos` (it may run past the data: the rest is still to come); -1 cannot tell,
    0 more bytes are needed to tell. Twin of rt.measure."""
    if steps is None:
        return -1
    at = pos
    for step in steps:
        if step[0] == "counted":
            n = values.get(step[1])
            if n is None or n + step[2] < 0:
                return -1
            at += n + step[2]
            continue
        _, size, code, name = step
        if code:
            if at + size > len(data):
                return 0
            values[name] = struct.unpack_from(code if code[0] in "<>" else "<" + code, data, at)[0]
        at += size
    return at - pos


def lua_steps(steps: list[tuple] | None) -> str:
    """framing_steps as a Lua table for rt.measure (false: cannot be measured)."""
    if steps is None:
        return "false"
    items = []
    for step in steps:
        if step[0] == "counted":
            items.append(f"{{ \"counted\", {lua_str(step[1])}, {step[2]} }}")
        else:
            items.append(f"{{ \"fixed\", {step[1]}, {lua_str(step[2])}, {lua_str(step[3])} }}")
    return "{ " + ", ".join(items) + " }"


__all__ = ["Counted", "Framed", "framing_steps", "lua_steps", "measure"]
