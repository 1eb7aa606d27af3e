"""One byte budget for all pending reassembly (ENet fragments, chunk and file transfers, TCP PDUs being
assembled), across every conversation: a flood of messages that never complete cannot grow memory past it.

Bytes are taken when a piece is stored and given back when its reassembly completes or is dropped (evicted by a
per-conversation table, or with its conversation: OffsetReassembly gives its bytes back when it is freed, so
no eviction path has to remember to). A piece that does not fit is refused (OverBudget, an OutOfRange: every
caller already turns that into an expert note on the packet) and decoding goes on.

The limit is the preference `protodump.reassembly_budget` (bytes; engine.dispatch.Dispatcher sets it).
"""
from __future__ import annotations

DEFAULT_BUDGET = 64 << 20      # 64 MiB: a few of the largest real transfers (Iceball's map: 2.4 MB) at once


class Budget:
    __slots__ = ("limit", "used")

    def __init__(self, limit: int = DEFAULT_BUDGET):
        self.limit, self.used = limit, 0

    def take(self, n: int) -> bool:
        if self.used + n > self.limit:
            return False
        self.used += n
        return True

    def give(self, n: int) -> None:
        self.used = max(0, self.used - n)


PENDING = Budget()             # one per process: a process decodes one capture at a time
