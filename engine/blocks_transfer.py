"""File transfers: a file sent in blocks (request, start, blocks at offsets, end, abort), per conversation,
reassembled through reassembly/offsets.py, zlib-inflated with a cap, shown with its name, type, sizes and a look
inside (Iceball's maps and scripts are the first user). Decoded here; the Lua twin is lua/rt_transfer.lua
(rt.transfer, `emit_lua` below writes the call), so tshark builds the same tree.
"""
from __future__ import annotations

import copy

from ..reassembly.offsets import OffsetReassembly, OutOfRange, TooLarge
from .context import Ctx, Truncated
from .fields import Binder, Field
from .inflate import inflate
from .lua_literals import lua_str
from .strings import c_string
from .tree import Item


# --- file transfers --------------------------------------------------------------------------------------------------


FILE_LIMIT = 1 << 24          # the largest compressed file we reassemble (Iceball maps are ~400 KB compressed)
INFLATED_LIMIT = 1 << 24      # the largest inflated file we accept (announced or actual): bounds the plugin too
REQUEST_LIMIT = 16            # requests waiting for their transfer, per conversation
BLOCK_LIMIT = 1 << 16         # blocks one transfer may take (duplicates count: a replayed block cannot grow state)
# the plugin's copies (engine.lua_runtime.lua_limits): the Lua reads these values, never its own
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
        # "Reassembled file" (in both halves: --export-objects saves it)
        data = inflate(whole, INFLATED_LIMIT, ctx, "Inflated file")
        if data is None:
            if whole:
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
        node = parent.add(Item(self.info, None, ctx.pos, 0, c_string(f"{self.label}: {name}"), True))
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


__all__ = ["BLOCK_LIMIT", "FILE_LIMIT", "INFLATED_LIMIT", "LIMITS", "REQUEST_LIMIT", "Transfer"]
