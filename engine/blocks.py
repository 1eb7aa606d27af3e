"""Building blocks: logic a table cannot spell out, implemented once here and once in the Lua runtime
(lua/runtime.lua, same names). Each is a field class, so a table uses it like any other field."""
from __future__ import annotations

import copy
import math
import sys
import zlib

from ..reassembly.offsets import OffsetReassembly, OutOfRange, TooLarge
from .context import Ctx, Truncated, bounded_put
from .fields import F32LE, I8, I32LE, Field, Struct
from .strings import g6
from .tree import DataSource, Item, SubtreeMemo, bit_picture

# --- frozen subtrees -------------------------------------------------------------------------------------------

MEMO_BYTES = 4 << 20       # bytes of shared subtrees one block keeps (engine.tree.SubtreeMemo)


def frozen(memo: SubtreeMemo, ctx: Ctx, key, build, *args) -> tuple:
    """The children a block makes for `key`, built once and shared between packets as a frozen tuple (see
    engine.tree.Item): many values repeat across a session (an idle entity's velocity, the acks of one direction),
    and outputs memoise the text of a frozen subtree too. Bounded in bytes; none when the run reads nothing in
    it (ctx.demand)."""
    return memo.get_for(ctx.demand, key, build, *args)


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


def PackN(name, label, *, scale=1.0, unit=""):
    """int16 representing a float in [-1, 1]: raw / 32767."""
    return Packed(name, label, "h", 32767, scale=scale, unit=unit)


def PackU(name, label, *, scale=1.0, unit=""):
    """uint16 representing a float in [0, 1]: raw / 65535."""
    return Packed(name, label, "H", 65535, scale=scale, unit=unit)


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
        bound.memo = SubtreeMemo(MEMO_BYTES)
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
        self.memo = SubtreeMemo(MEMO_BYTES)
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


# --- ack history ------------------------------------------------------------------------------------------------


class AckHistory(Field):
    """A 32-bit bitmap of earlier acks: bit i-1 set means sequence number `ack - i` was received (16-bit wrap).
    Shown as 32 bit lines and as the list of acknowledged sequence numbers."""

    codes, endian, size = ("I",), "<", 4

    def __init__(self, name, label, *, relative_to: str, bits: int = 32, seq_bits: int = 16):
        super().__init__(name, label)
        self.relative_to, self.bits, self.modulo = relative_to, bits, 1 << seq_bits
        self.lines = [[bit_picture(v << i, 1 << i, bits) for v in (0, 1)] for i in range(bits)]

    def register(self, b):
        self.cache = SubtreeMemo(MEMO_BYTES)
        self.info = b.field(self.abbrev, self.label, "uint32", base="HEX")
        self.bit_info = b.field(self.abbrev + ".received", "Received", "uint8")
        self.acked_info = b.field(f"{b.proto}.acked", "Acknowledged sequence number", "uint16")

    def take(self, ctx, parent, offset, raw):
        ctx.scopes[-1][self.name] = raw
        ack = ctx.lookup(self.relative_to) or 0
        item = parent.add(Item(self.info, raw, offset, 4))
        # The subtree depends on (bitmap, ack, offset) only, and a direction repeats the same ack for many
        # packets: keep it as a frozen (tuple) subtree shared between packets; outputs may memoise its text.
        item.children = frozen(self.cache, ctx, (raw, ack, offset), self.lines_for, raw, ack, offset)

    def lines_for(self, raw, ack, offset):
        acked = []
        for i in range(self.bits):
            bit = (raw >> i) & 1
            seq = (ack - i - 1) % self.modulo
            yield Item(self.bit_info, bit, offset, 4,
                       f"{self.lines[i][bit]} = seq {seq} (ack-{i + 1}): {'received' if bit else 'missing'}")
            if bit:
                acked.append(seq)
        for seq in acked:
            yield Item(self.acked_info, seq, offset, 4, None, True)

    def infos(self):
        yield self.info
        yield self.bit_info
        yield self.acked_info


# --- summaries of a buffer -----------------------------------------------------------------------------------------


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


# --- chunk reassembly ---------------------------------------------------------------------------------------------

TRANSFER_LIMIT = 1024         # transfers tracked per conversation (the oldest is forgotten)
CHUNK_LIMIT = 1 << 16          # the largest transfer we reassemble (blank's chunks are < 2 KiB compressed)
INFLATE_LIMIT = 1 << 20        # the largest inflated chunk we accept


class Chunk(Field):
    """A piece of a transfer announced earlier (Chunk Begin): `length` bytes placed at offset `at` of the
    transfer `key`. When every byte of `total` has arrived, the frame that completes it shows the reassembled
    buffer, inflated when `compressed_flag` is set, and its `content` decoded from that buffer.
    State lives per conversation; the first copy of a byte wins (as Wireshark's reassembly does)."""

    keeps_state = True

    def __init__(self, name, label, *, begin, key, at, length, total, compressed_flag, content=None):
        super().__init__(name, label)
        self.begin, self.key, self.at, self.length, self.total = begin, key, at, length, total
        self.compressed_flag, self.content = compressed_flag, content

    def bind(self, b, prefix):
        bound = copy.copy(self)
        bound.abbrev = f"{prefix}.{self.name}"
        bound.info = b.field(bound.abbrev, self.label, "bytes")
        top = f"{b.proto}.{self.begin.split('_')[0]}"
        bound.r_info = b.field(top, "Reassembled chunk", "none")
        bound.r_frame = b.field(top + ".frame", "Reassembled from frame", "uint32")
        bound.r_size = b.field(top + ".size", "Reassembled size", "uint32")
        bound.r_inflated = b.field(top + ".inflated_size", "Inflated size", "uint32")
        bound.r_in = b.field(top + ".reassembled_in", "Reassembled in frame", "uint32")
        bound.content = self.content.bind(b, top) if self.content else None
        return bound

    def decode(self, ctx, parent):
        want, n = ctx.lookup(self.length), ctx.end - ctx.pos
        if want > n:
            ctx.expert(parent, "malformed", f"{self.label}: block size {want}, {n} bytes present")
        n = min(want, n)
        start = ctx.pos
        piece = ctx.data[start:start + n]
        ctx.scopes[-1][self.name] = piece
        item = parent.add(Item(self.info, piece, start, n))
        ctx.pos += n
        self.reassemble(ctx, item, ctx.lookup(self.key), ctx.lookup(self.at), piece)

    def size_rule(self):
        return (0, CHUNK_LIMIT, 1)

    def encode(self, values, out):
        out += values.get(self.name, b"")

    def reassemble(self, ctx: Ctx, item: Item, key: int, at: int, piece: bytes) -> None:
        state = ctx.conv.setdefault("transfers", {})
        begin = ctx.conv.get("remember", {}).get(self.begin, {}).get(key)
        if begin is None:
            ctx.expert(item, "reassembly", f"No {self.begin} for transmission {key}")
            return
        transfer = state.get(key)
        if transfer is None or transfer[0] is not begin:       # a new Chunk Begin restarts the transfer
            try:
                transfer = (begin, OffsetReassembly(begin[self.total], CHUNK_LIMIT))
                bounded_put(state, key, transfer, TRANSFER_LIMIT)
            except TooLarge as exc:
                ctx.expert(item, "reassembly", str(exc))
                return
        message = transfer[1]
        if message.done:      # the Lua adds it with no byte range: at the start of the layer's tvb
            at, src = ctx.unranged(item)
            item.add(Item(self.r_in, message.done, at, 0, None, True, src))
            return
        try:
            whole = message.add(at, piece, ctx.frame)
        except OutOfRange as exc:
            ctx.expert(item, "reassembly", str(exc))
            return
        if whole is not None:
            self.show(ctx, item, whole, message.frames(), begin)

    def show(self, ctx, item, buf, frames, begin):
        at, src = ctx.unranged(item)    # items the Lua adds with no byte range: at the layer tvb's start
        node = item.add(Item(self.r_info, None, at, 0, "Reassembled chunk", True, src))
        for frame in frames:
            node.add(Item(self.r_frame, frame, at, 0, None, True, src))
        node.add(Item(self.r_size, len(buf), at, 0, None, True, src))
        ctx.sources.append(DataSource("Reassembled chunk", buf))
        field, mask = self.compressed_flag
        data = buf
        if begin.get(field, 0) & mask:
            data = _inflate(buf, INFLATE_LIMIT, ctx, "Inflated chunk")
            if data is None:
                ctx.expert(node, "malformed", "Chunk data does not inflate (zlib)")
                return
            ctx.sources.append(DataSource("Inflated chunk", data))
            node.add(Item(self.r_inflated, len(data), at, 0, None, True, src))
        ctx.notes.append(f"[chunk {len(buf)} bytes reassembled]")
        if self.content is not None:
            sub = Ctx(data, 0, len(data), node, ctx.proto, ctx.conv, ctx.direction, ctx.frame, ctx.sources)
            sub.source, sub.prefs = len(ctx.sources) - 1, ctx.prefs
            try:
                self.content.decode(sub, node)
            except Truncated:       # reported by ctx.need; the rest of the packet stands
                pass

    def infos(self):
        yield from (self.info, self.r_info, self.r_frame, self.r_size, self.r_inflated, self.r_in)
        if self.content:
            yield from self.content.infos()


def _inflate(data: bytes, limit: int, ctx: Ctx | None = None, name: str = "") -> bytes | None:
    """zlib-inflate at most `limit` bytes; None when the stream is corrupt, incomplete or too large. With `ctx`,
    an inflated stream's own bytes become the data source "NAME (zlib)" first, as the plugin's rt.inflate_strict
    makes a tvb of the stream before uncompressing it (tshark -x shows it)."""
    z = zlib.decompressobj()
    try:
        out = z.decompress(data, limit + 1)
    except zlib.error:
        return None
    if len(out) > limit or not z.eof:
        return None
    if ctx is not None:
        ctx.new_source(f"{name} (zlib)", data[:len(data) - len(z.unused_data)])
    return out


__all__ = ["PackN", "PackU", "Vec3", "Vec3I", "Vec3F", "Vec3B", "Vec3N", "Vec3U", "QuatSmallest3",
           "AckHistory", "Summary", "Chunk", "Packed"]
