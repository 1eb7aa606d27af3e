"""Chunk transfers: a buffer announced by one packet (blank's Chunk Begin: transmission ID, size, flags) and
sent in pieces at offsets by others, reassembled per conversation (reassembly/offsets.py, the first copy of a
byte wins), inflated when the announcement says so, and its content decoded from the whole. Decoded here; the Lua
twin is lua/rt_chunks.lua (rt.chunk_piece, rt.inflate; `emit_lua` below writes the calls).
"""
from __future__ import annotations

import copy

from ..reassembly.offsets import OffsetReassembly, OutOfRange, TooLarge
from .context import Ctx, Truncated, bounded_put
from .fields import Field
from .inflate import inflate
from .lua_literals import lua_str
from .tree import DataSource, Item

TRANSFER_LIMIT = 1024         # transfers tracked per conversation (the oldest is forgotten)
CHUNK_LIMIT = 1 << 16          # the largest transfer we reassemble (blank's chunks are < 2 KiB compressed)
INFLATE_LIMIT = 1 << 20        # the largest inflated chunk we accept
# the plugin's copies (engine.lua_runtime.lua_limits): the Lua reads these values, never its own
LIMITS = {"CHUNK_LIMIT": CHUNK_LIMIT, "INFLATE_LIMIT": INFLATE_LIMIT, "TRANSFER_LIMIT": TRANSFER_LIMIT}


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
            data = inflate(buf, INFLATE_LIMIT, ctx, "Inflated chunk")
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

    def emit_lua(self, gen, shown, raw):
        w = gen.w
        flag_field, mask = self.compressed_flag
        content = gen.struct_body(self.content) if self.content is not None else None
        with w.block("do"):
            w(f"local want, n = rt.lookup(c, {lua_str(self.length)}), c.stop - c.pos")
            w(f"if want > n then rt.expert(c, T, \"malformed\", string.format(\"%s: block size %d, %d bytes "
              f"present\", {lua_str(self.label)}, want, n)) end")
            w("if want < n then n = want end")
            w("local r = c.tvb(c.pos, n)")
            w(f"local it = T:add(F[{lua_str(self.abbrev)}], r)")
            w("local piece = n > 0 and r:raw() or \"\"")
            w(f"c.sc[#c.sc][{lua_str(self.name)}] = piece")
            w("c.pos = c.pos + n")
            w(f"local res, done = rt.chunk_piece(c, it, {lua_str(self.begin)}, rt.lookup(c, {lua_str(self.key)}), "
              f"rt.lookup(c, {lua_str(self.at)}), piece, {lua_str(self.total)})")
            with w.block("if done then", None):
                w(f"it:add(F[{lua_str(self.r_in.abbrev)}], done):set_generated()")
            with w.block("elseif res then"):
                w(f"local node = it:add(F[{lua_str(self.r_info.abbrev)}])")
                w("node:set_text(\"Reassembled chunk\")")
                w("node:set_generated()")
                w(f"for _, fr in ipairs(res.frames) do node:add(F[{lua_str(self.r_frame.abbrev)}], fr):set_generated() end")
                w(f"node:add(F[{lua_str(self.r_size.abbrev)}], #res.buf):set_generated()")
                w("local data = ByteArray.new(res.buf, true):tvb(\"Reassembled chunk\")")
                w("local ok_data = true")
                with w.block(f"if math.floor((res.begin[{lua_str(flag_field)}] or 0) / {mask}) % 2 == 1 then"):
                    w("data = rt.inflate(data, \"Inflated chunk\")")
                    with w.block("if data == nil then", None):
                        w("rt.expert(c, node, \"malformed\", \"Chunk data does not inflate (zlib)\")")
                        w("ok_data = false")
                    with w.block("else"):
                        w(f"node:add(F[{lua_str(self.r_inflated.abbrev)}], data:len()):set_generated()")
                with w.block("if ok_data then"):
                    w("c.notes[#c.notes + 1] = string.format(\"[chunk %d bytes reassembled]\", #res.buf)")
                    if content:
                        w("local sub = { tvb = data, pos = 0, stop = data:len(), sc = { {} }, conv = c.conv, "
                          "frame = c.frame, dir = c.dir, E = c.E, notes = c.notes }")
                        w(f"pcall({content}, sub, node)")


__all__ = ["Chunk"]
