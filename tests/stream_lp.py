"""A test-only stream protocol ("lp"): u16 big-endian length of what follows, u8 type (1-31; anything else cannot
be framed), body. Duck-typed (no field tables): it shows the least a stream protocol must provide to
engine/streams.py and to the plugin generator, and lets the stream machinery be tested without a game protocol."""
from __future__ import annotations

import struct

from protodump.engine.fields import Binder
from protodump.engine.protocol import EXPERTS
from protodump.engine.streams import emit_stream_lua
from protodump.engine.tree import Item

PORT = 29999


def pdu(kind: int, body: bytes) -> bytes:
    return struct.pack("!HB", len(body) + 1, kind) + body


class LengthPrefixed:
    name, description = "lp", "Length Prefixed"
    revision_pref = sequence = None

    def __init__(self, port: int = PORT, heuristic: bool = False):
        b = Binder(self.name)
        self.info = b.field("lp", self.description, "protocol")
        self.f_len = b.field("lp.len", "Length", "uint16")
        self.f_type = b.field("lp.type", "Type", "uint8")
        self.f_body = b.field("lp.body", "Body", "bytes")
        self.data_info = b.field("lp.data", "Undecoded data", "bytes")
        self.fields = b.fields
        self.experts = EXPERTS
        self.ports = {"tcp.port": (port,), "sctp.port": (port,)}
        # optional heuristic: the first PDU of a connection is type 1 with a 1-64 byte body
        self.heuristics = {"tcp": self.looks_like_hello} if heuristic else {}

    @staticmethod
    def looks_like_hello(payload: bytes) -> bool:
        return len(payload) >= 3 and payload[2] == 1 and 2 <= struct.unpack_from("!H", payload)[0] <= 65

    def preferences(self) -> dict:
        return {}

    def pdu_length(self, data: bytes, pos: int, conv: dict, direction: str, prefs: dict) -> int:
        if len(data) - pos < 3:
            return 0
        if not 1 <= data[pos + 2] < 32:
            return -1
        return struct.unpack_from("!H", data, pos)[0] + 2

    def dissect(self, ctx, prefs) -> str:
        data, p, end = ctx.data, ctx.pos, ctx.end
        kind = data[p + 2]
        ctx.tree.add(Item(self.f_len, struct.unpack_from("!H", data, p)[0], p, 2, None, False, ctx.source))
        ctx.tree.add(Item(self.f_type, kind, p + 2, 1, None, False, ctx.source))
        if end > p + 3:
            ctx.tree.add(Item(self.f_body, data[p + 3:end], p + 3, end - p - 3, None, False, ctx.source))
        return f"LP type {kind}"

    def emit_lua(self, gen, var: str) -> None:
        w = gen.w
        with w.block("local function lp_len(tvb, pinfo, offset, conv)"):
            w("if tvb:len() - offset < 3 then return 0 end")
            w("local t = tvb(offset + 2, 1):uint()")
            w("if t < 1 or t >= 32 then return -1 end")
            w("return tvb(offset, 2):uint() + 2")
        with w.block("local function lp_pdu(tvb, pinfo, tree, conv, index)"):
            w(f"local T = tree:add({var}, tvb())")
            w('T:add(F["lp.len"], tvb(0, 2))')
            w('T:add(F["lp.type"], tvb(2, 1))')
            w('if tvb:len() > 3 then T:add(F["lp.body"], tvb(3)) end')
            w('return "LP type " .. tvb(2, 1):uint(), T')
        with w.block("local function lp_hello(tvb, pinfo)"):
            w("if tvb:len() < 3 or tvb(2, 1):uint() ~= 1 then return false end")
            w("local n = tvb(0, 2):uint()")
            w("return n >= 2 and n <= 65")
        emit_stream_lua(gen, self, var, "lp_len", "lp_pdu", heuristic_fn="lp_hello")
