"""An ack history: a bitmap of the sequence numbers received before the acknowledged one (blank's "Previous
acks"), shown as one bit line per earlier number and as the list of acknowledged numbers. Decoded here; the Lua
twin is lua/rt_ack_history.lua (rt.ack_history, `emit_lua` below writes the call).
"""
from __future__ import annotations

from .fields import Field
from .lua_literals import lua_str
from .tree import BLOCK_MEMO_BYTES, Item, SubtreeMemo, bit_picture, frozen


class AckHistory(Field):
    """A 32-bit bitmap of earlier acks: bit i-1 set means sequence number `ack - i` was received (16-bit wrap).
    Shown as 32 bit lines and as the list of acknowledged sequence numbers."""

    codes, endian, size = ("I",), "<", 4

    def __init__(self, name, label, *, relative_to: str, bits: int = 32, seq_bits: int = 16):
        super().__init__(name, label)
        self.relative_to, self.bits, self.modulo = relative_to, bits, 1 << seq_bits
        self.lines = [[bit_picture(v << i, 1 << i, bits) for v in (0, 1)] for i in range(bits)]

    def register(self, b):
        self.cache = SubtreeMemo(BLOCK_MEMO_BYTES)
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

    def emit_lua(self, gen, shown, raw):
        w = gen.w
        with gen.fixed_range(4, self.label):
            w(f"c.sc[#c.sc][{lua_str(self.name)}] = rt.ack_history(c, T, r, F[{lua_str(self.abbrev)}], "
              f"F[{lua_str(self.bit_info.abbrev)}], F[{lua_str(self.acked_info.abbrev)}], {self.bits}, {self.modulo}, "
              f"rt.lookup(c, {lua_str(self.relative_to)}) or 0)")
            w("c.pos = c.pos + 4")


__all__ = ["AckHistory"]
