"""Building blocks for message protocols that carry a type byte, counted strings, framed inner packets and file
transfers (Iceball's system and Lua packets are the first user). Each block decodes here and emits its Lua twin
(`emit_lua`, runtime in lua/rt_iceball.lua), so tshark builds the same tree.

- Counted: a string or byte run whose length is an earlier field (`len.u8 name[len]`).
- Framed: an inner packet bounded by a length (an earlier field plus a constant, e.g. Iceball's 0x40 + len - 1).
- Dispatch: reads a type code and decodes the packet table chosen by a variant value (a preference such as the
  spec's numbering); an unknown code is an expert item and the rest is shown as data; the chosen packet names
  the Info column.
- Fit: alternatives of one packet told apart by the length left (a field present in one direction only).
- Transfer: a file sent in blocks (request, start, blocks at offsets, end, abort), reassembled through
  reassembly/offsets.py, zlib-inflated with a cap, shown with its name, type, sizes and a look inside.
"""
from __future__ import annotations

import copy
import struct

from ..reassembly.offsets import OffsetReassembly, OutOfRange, TooLarge
from .blocks import Packed
from .blocks import _inflate as inflate  # the capped zlib inflate blank's chunks use
from .context import Ctx, Truncated
from .fields import Binder, Field, Packet, Struct, format_template
from .protocol import EXPERTS
from .strings import stray_after_nul, wire_string
from .tree import UNDECODED, WARN, ExpertInfo, Item


def lua_str(s) -> str:
    from .lua_backend import lua_str as quote  # late: the backend imports the block modules
    return quote(s)


INFO_KEY = "_info"          # the innermost Dispatch's Info text, kept in the outermost scope


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
            item.expert(ExpertInfo("_ws.string.trailing_stray_characters", UNDECODED, WARN,
                                   "Trailing stray characters"))
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
            w(f"rt.need(c, n, {q(self.label)}, T)")
            w("local r = c.tvb(c.pos, n)")
            if self.text:
                w(f"c.sc[#c.sc][{q(self.name)}] = rt.utf8(c.tvb:raw(c.pos, n))")
                w(f"T:add_packet_field(F[{q(self.abbrev)}], r, ENC_UTF_8)")
            else:
                w(f"c.sc[#c.sc][{q(self.name)}] = n > 0 and r:raw() or \"\"")
                w(f"T:add(F[{q(self.abbrev)}], r)")
            w("c.pos = c.pos + n")


# --- scaled bytes ------------------------------------------------------------------------------------------------

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
        with w.block("do"):
            w(f"rt.need(c, 1, {q(self.label)}, T)")
            w("local r = c.tvb(c.pos, 1)")
            w(f"local v = r:{'int' if self.codes[0] == 'b' else 'uint'}()")
            w(f"c.sc[#c.sc][{q(self.name)}] = v")
            w(f"T:add(F[{q(self.raw_info.abbrev)}], r)")
            w(f"local real = v / {self.divisor} * {float(self.scale)!r}")
            w(f"T:add(F[{q(self.abbrev)}], r, real, string.format(\"%s: %.6g%s\", {q(self.label)}, real, "
              f"{q(self.unit)})):set_generated()")
            w("c.pos = c.pos + 1")


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


# --- dispatch on a type code ------------------------------------------------------------------------------------------

class Dispatch(Field):
    """A type code (u8) and the packet it selects. `variants`: {variant: {code: Packet}}; the variant in use is the
    value `variant_key` looked up in the scopes (set by the protocol from a preference), else the first one. Each
    variant has its own code field (`<name>` for the first, `<name>_<variant>` for others) so that the value names
    match the numbering in use. An unknown code: expert item (`unknown` message), the rest shown as data."""

    def __init__(self, name, label, variants: dict[str, dict[int, Packet]], *, variant_key: str | None = None,
                 unknown: str = "Unknown packet id {}", code_names: dict[str, dict[int, str]] | None = None):
        super().__init__(name, label)
        self.variants, self.variant_key, self.unknown = variants, variant_key, unknown
        self.code_names = code_names or {v: {c: p.label for c, p in cases.items()} for v, cases in variants.items()}

    def bind(self, b, prefix):
        bound = copy.copy(self)
        bound.abbrev = f"{b.proto}.{self.name}"
        bound.code_infos = {}
        for i, variant in enumerate(self.variants):
            abbrev = bound.abbrev if i == 0 else f"{bound.abbrev}_{variant}"
            label = self.label if i == 0 else f"{self.label} ({variant})"
            bound.code_infos[variant] = b.field(abbrev, label, "uint8", base="HEX_DEC",
                                                values=self.code_names[variant])
        bound.data_info = b.field(f"{bound.abbrev}.data", "Undecoded data", "bytes")
        bound.variants = {v: {code: p.bind(b, prefix) for code, p in cases.items()}
                          for v, cases in self.variants.items()}
        return bound

    def variant(self, ctx) -> str:
        chosen = ctx.lookup(self.variant_key) if self.variant_key else None
        return chosen if chosen in self.variants else next(iter(self.variants))

    def decode(self, ctx, parent):
        ctx.need(1, self.label, parent)
        variant = self.variant(ctx)
        code = ctx.data[ctx.pos]
        ctx.scopes[-1][self.name] = code
        item = parent.add(Item(self.code_infos[variant], code, ctx.pos, 1))
        ctx.pos += 1
        packet = self.variants[variant].get(code)
        if packet is None:
            message = self.unknown.format(code)
            ctx.expert(item, "undecoded", message)
            ctx.scopes[0][INFO_KEY] = message
            if ctx.pos < ctx.end:
                parent.add(Item(self.data_info, ctx.data[ctx.pos:ctx.end], ctx.pos, ctx.end - ctx.pos))
                ctx.pos = ctx.end
            return
        values = ctx.scopes[-1]
        ctx.scopes[0][INFO_KEY] = packet.label
        packet.decode(ctx, parent)
        if packet.info_template:
            ctx.scopes[0][INFO_KEY] = f"{packet.label} {format_template(packet.info_template, values)}"

    def encode(self, values, out):
        variant = values.get(self.variant_key) if self.variant_key else None
        cases = self.variants.get(variant) or next(iter(self.variants.values()))
        code = values.get(self.name, 0)
        out.append(code)
        if code in cases:
            cases[code].encode(values, out)

    def size_rule(self):
        return (1, 1 << 16, 1)

    def infos(self):
        yield from self.code_infos.values()
        yield self.data_info
        seen = set()
        for cases in self.variants.values():
            for p in cases.values():
                if id(p) not in seen:
                    seen.add(id(p))
                    yield from p.infos()

    def emit_lua(self, gen, shown, raw):
        w, q = gen.w, lua_str
        tables = []
        for variant, cases in self.variants.items():
            entries = []
            for code, p in cases.items():
                info = gen.template(p.info_template) if p.info_template else "nil"
                entries.append(f"[{code}] = {{ {gen.struct_body(p)}, {q(p.label)}, {info} }}")
            tables.append(f"[{q(variant)}] = {{ F[{q(self.code_infos[variant].abbrev)}], {{ {', '.join(entries)} }} }}")
        key = q(self.variant_key) if self.variant_key else "nil"
        # the tables are built once (on first use: the packet functions are defined after this one)
        w(f"rt.dispatch(c, T, {q(self.name)}, {q(self.label)}, rt.cached({q(self.abbrev)}, function() return "
          f"{{ {', '.join(tables)} }} end), {q(next(iter(self.variants)))}, {key}, {q(self.unknown)}, "
          f"F[{q(self.data_info.abbrev)}])")


# --- alternatives told apart by length -----------------------------------------------------------------------------

class Fit(Field):
    """Alternative layouts of one packet (`choices`, transparent Structs of fixed size): the one whose size is the
    length left is decoded, else the last one (Iceball's NADE_THROW has a player id server->client only)."""

    def __init__(self, name, *choices: Struct):
        super().__init__(name, None)
        self.choices = choices

    def bind(self, b, prefix):
        bound = copy.copy(self)
        bound.choices = tuple(s.bind(b, prefix) for s in self.choices)
        return bound

    def pick(self, left: int) -> Struct:
        return next((s for s in self.choices if s.size == left), self.choices[-1])

    def decode(self, ctx, parent):
        self.pick(ctx.end - ctx.pos).decode(ctx, parent)

    def encode(self, values, out):
        choice = next((s for s in self.choices if all(f.name in values for f in s.fields)), self.choices[-1])
        choice.encode(values, out)

    def size_rule(self):
        sizes = [s.size for s in self.choices]
        return (min(sizes), max(sizes), 1)

    def infos(self):
        for s in self.choices:
            yield from s.infos()

    def emit_lua(self, gen, shown, raw):
        w = gen.w
        fns = [gen.struct_body(s) for s in self.choices]
        w("do")
        w("  local left = c.stop - c.pos")
        for i, (s, fn) in enumerate(zip(self.choices[:-1], fns)):
            w(f"  {'if' if i == 0 else 'elseif'} left == {s.size} then {fn}(c, T)")
        w(f"  else {fns[-1]}(c, T) end" if len(fns) > 1 else f"  {fns[-1]}(c, T)")
        w("end")


# --- file transfers --------------------------------------------------------------------------------------------------

FILE_LIMIT = 1 << 24          # the largest compressed file we reassemble (Iceball maps are ~400 KB compressed)
INFLATED_LIMIT = 1 << 24      # the largest inflated file we accept (announced or actual): bounds the plugin too
REQUEST_LIMIT = 16            # requests waiting for their transfer, per conversation
BLOCK_LIMIT = 1 << 16         # blocks one transfer may take (duplicates count: a replayed block cannot grow state)
# the plugin's copies (engine.lua_backend.lua_limits): the Lua reads these values, never its own
LIMITS = {"FILE_LIMIT": FILE_LIMIT, "INFLATED_LIMIT": INFLATED_LIMIT, "REQUEST_LIMIT": REQUEST_LIMIT,
          "BLOCK_LIMIT": BLOCK_LIMIT}


class Transfer(Field):
    """One step of a file transfer, per conversation: "request" (remembers `name` and `kind` from this packet's
    fields), "start" (`total` compressed bytes, `size` announced unpacked bytes), "piece" (`data` at offset `at`),
    "end" (reassemble, inflate, show the file and a look inside: `inside` = {kind: Struct} decoded over the
    inflated file, `kind_mask` selects the kind from the request's flags) and "abort" (`who` aborted).
    Adds no wire bytes of its own: it is placed after the fields it reads."""

    keeps_state = True

    def __init__(self, name, label, step: str, *, names: dict | None = None, inside: dict | None = None,
                 kinds: dict[int, str] | None = None, kind_mask: int = 0xF, who: str = ""):
        super().__init__(name, label)
        self.step, self.names = step, names or {}
        self.inside, self.kinds, self.kind_mask, self.who = inside or {}, kinds or {}, kind_mask, who
        self.size = 0

    def bind(self, b: Binder, prefix):
        bound = copy.copy(self)
        top = f"{b.proto}.{self.name}"
        bound.abbrev = top
        bound.info = b.field(top, self.label, "none")
        bound.f_name = b.field(top + ".name", "File name", "string")
        bound.f_kind = b.field(top + ".type", "File type", "uint8", values=self.kinds)
        bound.f_total = b.field(top + ".compressed_size", "Compressed size", "uint32")
        bound.f_size = b.field(top + ".size", "Unpacked size", "uint32")
        bound.f_received = b.field(top + ".received", "Bytes received", "uint32")
        bound.f_blocks = b.field(top + ".blocks", "Blocks", "uint32")
        bound.f_first = b.field(top + ".first_frame", "First block in frame", "uint32")
        bound.f_last = b.field(top + ".last_frame", "Last block in frame", "uint32")
        bound.f_inflated = b.field(top + ".inflated_size", "Inflated size", "uint32")
        bound.f_request = b.field(top + ".request_frame", "Requested in frame", "uint32")
        bound.inside = {kind: s.bind(b, top) for kind, s in self.inside.items()}
        return bound

    def decode(self, ctx, parent):
        state = ctx.conv.setdefault("files", {"requests": [], "current": None})
        getattr(self, "step_" + self.step)(ctx, parent, state)

    def encode(self, values, out):
        pass

    def size_rule(self):
        return (0, 0, 0)

    # The steps. Problems are expert items; the transfer state is the conversation's.
    def step_request(self, ctx, parent, state):
        requests = state["requests"]
        if len(requests) >= REQUEST_LIMIT:
            requests.pop(0)
        requests.append((ctx.lookup(self.names["name"]), ctx.lookup(self.names["kind"]) & self.kind_mask, ctx.frame))

    def step_start(self, ctx, parent, state):
        total, size = ctx.lookup(self.names["total"]), ctx.lookup(self.names["size"])
        request = state["requests"].pop(0) if state["requests"] else None
        name, kind, _ = request or ("?", 0, 0)
        node = self.node(ctx, parent, name, kind)
        if request is None:
            ctx.expert(node, "unexpected", "File transfer started without a request")
        try:
            message = OffsetReassembly(total, FILE_LIMIT)
        except TooLarge as exc:
            ctx.expert(node, "reassembly", str(exc))
            state["current"] = None
            return
        if size > INFLATED_LIMIT:           # given up at once, before any byte is kept or inflated
            ctx.expert(node, "reassembly", f"File of {size} bytes exceeds the limit of {INFLATED_LIMIT}")
            state["current"] = None
            return
        state["current"] = {"name": name, "kind": kind, "total": total, "size": size, "message": message,
                            "whole": None, "blocks": 0}

    def step_piece(self, ctx, parent, state):
        current = state["current"]
        if current is None:
            ctx.expert(parent, "unexpected", "File block with no file transfer active")
            return
        at, piece = ctx.lookup(self.names["at"]), ctx.lookup(self.names["data"])
        node = self.node(ctx, parent, current["name"], current["kind"])
        if current["blocks"] >= BLOCK_LIMIT:
            ctx.expert(node, "reassembly", f"More than {BLOCK_LIMIT} blocks: the transfer is dropped")
            state["current"] = None
            return
        try:
            whole = current["message"].add(at, piece, ctx.frame)
        except OutOfRange as exc:
            ctx.expert(node, "malformed", str(exc))
            return
        current["blocks"] += 1
        if whole is not None:
            current["whole"] = whole

    def step_end(self, ctx, parent, state):
        current, state["current"] = state["current"], None
        if current is None:
            ctx.expert(parent, "unexpected", "File end with no file transfer active")
            ctx.scopes[0]["file"] = "no transfer active"
            return
        node = self.node(ctx, parent, current["name"], current["kind"])
        message = current["message"]
        node.add(Item(self.f_total, current["total"], ctx.pos, 0, None, True))
        node.add(Item(self.f_size, current["size"], ctx.pos, 0, None, True))
        whole = current["whole"]
        if whole is None:
            got = message.covered()
            node.add(Item(self.f_received, got, ctx.pos, 0, None, True))
            ctx.expert(node, "reassembly", f"File transfer ended with {got} of {current['total']} bytes")
            ctx.scopes[0]["file"] = f"{current['name']} incomplete"
            return
        frames = message.frames()
        node.add(Item(self.f_blocks, current["blocks"], ctx.pos, 0, None, True))
        node.add(Item(self.f_first, frames[0], ctx.pos, 0, None, True))
        node.add(Item(self.f_last, frames[-1], ctx.pos, 0, None, True))
        # the plugin's buffer is the zlib stream ("Inflated file (zlib)"); one that does not inflate is kept as
        # "Reassembled file" (protodump's own: --export-objects saves it)
        data = inflate(whole, INFLATED_LIMIT, ctx, "Inflated file")
        if data is None:
            ctx.new_source("Reassembled file", whole)
            ctx.expert(node, "malformed", "File does not inflate (zlib)")
            ctx.scopes[0]["file"] = f"{current['name']} (does not inflate)"
            return
        source = ctx.new_source("Inflated file", data)
        node.add(Item(self.f_inflated, len(data), ctx.pos, 0, None, True))
        if len(data) != current["size"]:
            ctx.expert(node, "unexpected", f"Inflated to {len(data)} bytes, {current['size']} announced")
        ctx.scopes[0]["file"] = f"{current['name']} ({len(whole)} -> {len(data)} bytes)"
        self.look_inside(ctx, node, current["kind"], data, source)

    def step_abort(self, ctx, parent, state):
        current, state["current"] = state["current"], None
        if current is None and self.who == "Server" and state["requests"]:
            # no transfer started: the server refuses the oldest request (a missing file), and says so this way
            name, kind, frame = state["requests"].pop(0)
            node = self.node(ctx, parent, name, kind)
            node.add(Item(self.f_request, frame, ctx.pos, 0, None, True))
            ctx.expert(node, "unexpected", f"Server refused the request for {name} (frame {frame})")
            return
        if current is None:
            ctx.expert(parent, "unexpected", f"{self.who} aborts with no file transfer active")
            return
        node = self.node(ctx, parent, current["name"], current["kind"])
        got = current["message"].covered() if current["whole"] is None else current["total"]
        node.add(Item(self.f_received, got, ctx.pos, 0, None, True))
        ctx.expert(node, "reassembly", f"{self.who} aborted the transfer of {current['name']} "
                                       f"({got} of {current['total']} bytes)")

    def node(self, ctx, parent, name, kind) -> Item:
        node = parent.add(Item(self.info, None, ctx.pos, 0, f"{self.label}: {name}", True))
        node.add(Item(self.f_name, name, ctx.pos, 0, None, True))
        node.add(Item(self.f_kind, kind, ctx.pos, 0, None, True))
        return node

    def look_inside(self, ctx, node, kind, data, source):
        struct_ = self.inside.get(kind)
        if struct_ is None:
            return
        sub = Ctx(data, 0, len(data), node, ctx.proto, ctx.conv, ctx.direction, ctx.frame, ctx.sources)
        sub.source, sub.prefs = source, ctx.prefs
        try:
            struct_.decode(sub, node)
        except Truncated:       # reported by ctx.need; the file stays shown
            pass

    def infos(self):
        yield from (self.info, self.f_name, self.f_kind, self.f_total, self.f_size, self.f_received, self.f_blocks,
                    self.f_first, self.f_last, self.f_inflated, self.f_request)
        for s in self.inside.values():
            yield from s.infos()

    def emit_lua(self, gen, shown, raw):
        w, q = gen.w, lua_str
        fields = {"node": self.info, "name": self.f_name, "kind": self.f_kind, "total": self.f_total,
                  "size": self.f_size, "received": self.f_received, "blocks": self.f_blocks,
                  "first": self.f_first, "last": self.f_last, "inflated": self.f_inflated, "request": self.f_request}
        fl = ", ".join(f"{k} = F[{q(v.abbrev)}]" for k, v in fields.items())
        names = ", ".join(f"{k} = {q(v)}" for k, v in self.names.items())
        inside = ", ".join(f"[{k}] = {gen.element_function(s)}" for k, s in self.inside.items())
        w(f"rt.transfer(c, T, {q(self.step)}, {q(self.label)}, {{ {fl} }}, {{ {names} }}, {{ {inside} }}, "
          f"{self.kind_mask}, {q(self.who)})")


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


# --- the protocol -----------------------------------------------------------------------------------------------------

class ChannelProtocol:
    """A protocol of type-coded messages that rides on a message transport with channels (ENet) or on a byte
    stream (TCP). `messages`: {channel: Struct} — the table a message on that channel starts with; key None is
    the table for a stream and for an unknown channel, whose first field is the Dispatch a stream is framed by.
    The channel comes from the layer below (`ctx.meta["channel"]`). `variant_pref`: (name, description, default,
    choices), its value is put in the scopes under that name for the Dispatch blocks to read."""

    sequence = None              # what the generic parts of the plugin generator ask of every protocol
    revision_pref = None
    own_state_only = True        # its transfer state feeds only its own items (engine.demand)

    def __init__(self, name, description, *, messages: dict, ports: dict, variant_pref: tuple,
                 stream_start: tuple[int, int] | None = None):
        self.name, self.description = name, description
        self.experts = EXPERTS
        self.ports = ports
        self.udp_ports = tuple(ports.get("udp.port", ()))
        # A stream on any port is ours when it starts with packet `code` holding printable text from `text_at`
        # to its last byte, a NUL (Iceball: the server's BASE_DIR, the first packet of every session).
        self.stream_start = stream_start
        self.heuristics = {"tcp": self.starts_stream} if stream_start else {}
        self.variant_pref = variant_pref
        b = Binder(name)
        self.info = b.field(name, description, "protocol")
        self.messages = {channel: s.bind(b, name) for channel, s in messages.items()}
        self.trailing_info = b.field(f"{name}.trailing", "Bytes after the packet", "bytes")
        self.data_info = b.field(f"{name}.data", "Undecoded data", "bytes")     # what a stream cannot frame
        self.fields = b.fields
        self.table_prefs = b.prefs           # the preferences the tables declare (fields.WhenPref)
        self.stream_dispatch = self.messages[None].fields[0]
        self.type_field = self.stream_dispatch.name          # what `-z <proto>,types` counts
        self.type_fields = tuple(dict.fromkeys(             # the type codes a message starts with, per channel
            s.fields[0].name for s in self.messages.values() if isinstance(s.fields[0], Dispatch)))
        stream_cases = next(iter(self.stream_dispatch.variants.values()))
        self.framing = {code: framing_steps(p) for code, p in stream_cases.items()}

    def preferences(self) -> dict[str, tuple[str, str, list[str]]]:
        pname, desc, default, choices = self.variant_pref
        return {pname: (desc, default, list(choices)), **self.table_prefs}

    def variant(self, prefs: dict) -> str:
        pname, _, default, _ = self.variant_pref
        return prefs.get(f"{self.name}.{pname}", default)

    def dissect(self, ctx: Ctx, prefs: dict, channel=None) -> str:
        ctx.scopes[0][self.variant_pref[0]] = self.variant(prefs)
        if channel is None:
            channel = (getattr(ctx, "meta", None) or {}).get("channel")
        message = self.messages.get(channel, self.messages[None])
        try:
            message.decode(ctx, ctx.tree)
            if ctx.pos < ctx.end:
                ctx.tree.add(Item(self.trailing_info, ctx.data[ctx.pos:ctx.end], ctx.pos, ctx.end - ctx.pos))
                ctx.expert(ctx.tree.children[-1], "trailing", f"{ctx.end - ctx.pos} bytes after the packet")
                ctx.pos = ctx.end
        except Truncated:
            pass
        return ctx.scopes[0].get(INFO_KEY, "Malformed")

    def pdu_length(self, data: bytes, pos: int, conv: dict, direction: str, prefs: dict) -> int:
        """Length of the packet at `pos` of a stream: > 0 its length, 0 need more bytes, -1 cannot frame."""
        if pos >= len(data):
            return 0
        code = data[pos]
        packet = next(iter(self.stream_dispatch.variants.values())).get(code)
        if packet is None:
            return -1
        n = measure(self.framing[code], data, pos + 1, {self.stream_dispatch.name: code})
        return n + 1 if n > 0 or (n == 0 and not self.framing[code]) else n

    def starts_stream(self, payload: bytes) -> bool:
        """The "tcp" heuristic (twin of rt.stream_start)."""
        code, text_at = self.stream_start
        if len(payload) < text_at + 2 or payload[0] != code:
            return False
        n = self.pdu_length(payload, 0, {}, "", {})
        if n <= text_at + 1 or n > len(payload) or payload[n - 1] != 0:
            return False
        return all(0x20 <= b <= 0x7E for b in payload[text_at:n - 1])

    # --- the plugin -------------------------------------------------------------------------------------------------
    def emit_lua(self, gen, var: str) -> None:
        """The preference, the message functions per channel, the dissector (channel from rt.meta, set by the
        layer below), its registration, and the stream framing (rt.measure over the same framing steps)."""
        w = gen.w
        pname, desc, default, choices = self.variant_pref
        enum = ", ".join(f"{{ {i + 1}, {lua_str(c)}, {i} }}" for i, c in enumerate(choices))
        w(f"{var}.prefs.{pname} = Pref.enum({lua_str(desc)}, {list(choices).index(default)}, {lua_str(desc)}, "
          f"{{ {enum} }}, false)")
        fns = {channel: gen.struct_body(s) for channel, s in self.messages.items()}
        gen.flush()
        w(f"local MESSAGES = {{ {', '.join(f'[{ch}] = {fn}' for ch, fn in fns.items() if ch is not None)} }}")
        w(f"local CHOICES = {{ {', '.join(lua_str(c) for c in choices)} }}")
        with w.block(f"local function core_{self.name}(tvb, pinfo, tree, index, channel)"):
            w(f"local conv, dir = rt.conversation({lua_str(self.name)}, pinfo)")
            w(f"local T = tree:add({var}, tvb())")
            w("local c = { tvb = tvb, pos = 0, stop = tvb:len(), sc = { {} }, conv = conv, frame = pinfo.number, "
              "dir = dir, E = E, notes = {}, visited = pinfo.visited, layer = index }")
            w(f"c.sc[1][{lua_str(pname)}] = CHOICES[({var}.prefs.{pname} or 0) + 1] or {lua_str(default)}")
            w(f"local ok, err = pcall(channel ~= nil and MESSAGES[channel] or {fns[None]}, c, T)")
            with w.block("if ok and c.pos < c.stop then", None):
                w(f"local ti = T:add(F[{lua_str(self.trailing_info.abbrev)}], c.tvb(c.pos, c.stop - c.pos))")
                w("rt.expert(c, ti, \"trailing\", string.format(\"%d bytes after the packet\", c.stop - c.pos))")
            with w.block("elseif not ok and err ~= rt.TRUNC then", None):
                w("rt.expert(c, T, \"malformed\", \"Dissector error: \" .. tostring(err))")
            w("end")
            w("return c.sc[1]._info or \"Malformed\", T")
        w("-- one message handed up by a message transport (ENet: rt.meta.channel)")
        with w.block(f"local function dissect_{self.name}(tvb, pinfo, tree)"):
            w(f"pinfo.cols.protocol:set({lua_str(self.name)})")
            w(f"local index = rt.layer_index({{ conv = rt.conversation({lua_str(self.name)}, pinfo), "
              "frame = pinfo.number, visited = pinfo.visited })")
            w(f"local info = core_{self.name}(tvb, pinfo, tree, index, rt.meta and rt.meta.channel)")
            w("if index > 1 then pinfo.cols.info:append(\", \" .. info) else pinfo.cols.info:set(info) end")
            w("return tvb:len()")
        self.emit_stream(gen, var)            # defines the Proto's dissector: wslua adds only a Proto that has one
        gen.register_tables(self, var)
        w()

    def emit_stream(self, gen, var: str) -> None:
        """The PDU length function (twin of pdu_length) and the registration on the stream tables."""
        w = gen.w

        w("local FRAMING = {}")
        for code, steps in self.framing.items():
            w(f"FRAMING[{code}] = {lua_steps(steps)}")
        with w.block(f"local function pdu_len_{self.name}(tvb, offset)"):
            w("if offset >= tvb:len() then return 0 end")
            w("local code = tvb(offset, 1):uint()")
            w("local steps = FRAMING[code]")
            w("if not steps then return -1 end")
            w(f"local n = rt.measure(steps, tvb, offset + 1, {{ [{lua_str(self.stream_dispatch.name)}] = code }})")
            w("if n > 0 or (n == 0 and #steps == 0) then return n + 1 end")
            w("return n")
        w(f"local stream_{self.name} = rt.stream_dissector({var}, {lua_str(self.name)}, "
          f"function(tvb, pinfo, offset, conv) return pdu_len_{self.name}(tvb, offset) end, "
          f"function(tvb, pinfo, tree, conv, index) return core_{self.name}(tvb, pinfo, tree, index, nil) end, "
          f"{{ data = F[{lua_str(self.data_info.abbrev)}], E = E }})")
        w("-- one Proto, two ways in: a byte stream (TCP, SCTP: port types 2, 1) or a message (ENet sets rt.meta;")
        w("-- a datagram by decode-as)")
        with w.block(f"function {var}.dissector(tvb, pinfo, tree)"):
            w("if rt.meta == nil and (pinfo.port_type == 2 or pinfo.port_type == 1) then")
            w(f"  return stream_{self.name}(tvb, pinfo, tree)")
            w("end")
            w(f"return dissect_{self.name}(tvb, pinfo, tree)")
        w(f"pcall(function() DissectorTable.get(\"udp.port\"):add_for_decode_as({var}) end)")
        ports = {t: ", ".join(str(k) for k in self.ports.get(t, ())) for t in ("tcp.port", "sctp.port")}
        w(f"rt.stream_register({var}, {{ {ports['tcp.port']} }}, {{ {ports['sctp.port']} }})")
        if self.stream_start:
            code, text_at = self.stream_start
            with w.block(f"local function heur_{self.name}(tvb, pinfo, tree)"):
                w(f"if not rt.stream_start(tvb, pdu_len_{self.name}, {code}, {text_at}) then return false end")
                w(f"pinfo.conversation = {var}            -- later segments of this connection: ours")
                w(f"stream_{self.name}(tvb, pinfo, tree)")
                w("return true")
            w(f"{var}:register_heuristic(\"tcp\", heur_{self.name})")

    # --- tests and capture making ---------------------------------------------------------------------------------
    def decode_values(self, payload: bytes, prefs: dict | None = None, channel=None) -> tuple[dict, Item]:
        """Decode one message on its own (fresh conversation), as if it came on `channel`: values and tree."""
        tree = Item(self.info, self.description, 0, len(payload), self.description)
        ctx = Ctx(payload, 0, len(payload), tree, self, {}, "a>b", 1, [])
        ctx.prefs = prefs or {}
        self.dissect(ctx, ctx.prefs, channel)
        return ctx.scopes[0], tree

    def encode(self, values: dict, channel=None) -> bytes:
        out = bytearray()
        self.messages.get(channel, self.messages[None]).encode(values, out)
        return bytes(out)


__all__ = [
    "INFO_KEY",
    "ChannelProtocol",
    "Counted",
    "Dispatch",
    "Fit",
    "Framed",
    "ScaledByte",
    "Transfer",
    "framing_steps",
    "lua_steps",
    "measure",
]
