"""One byte budget for all pending reassembly (ENet fragments, chunk and file transfers, TCP PDUs being
assembled), across every conversation: a flood of messages that never complete cannot grow memory past it.

Bytes are taken when a piece is stored and given back when its reassembly completes or is dropped (evicted by a
per-conversation table, or with its conversation: OffsetReassembly gives its bytes back when it is freed, so
no eviction path has to remember to). A piece that does not fit is refused (OverBudget, an OutOfRange: every
caller already turns that into an expert note on the packet) and decoding goes on.

The limit is the preference `protodump.reassembly_budget` (bytes; engine.dispatch.Dispatcher sets it).
"""
from __future__ import annotations

DEFAULT_BUDGET = 32 << 20      # 32 MiB: several of the largest real transfers (Iceball's map: 2.4 MB) at once
PIECE_OVERHEAD = 160           # what Python spends per stored piece besides its bytes (bytes header, tuples,
                               # spans): a flood of tiny pieces is bounded too


class Budget:
    __slots__ = ("limit", "used")

    def __init__(self, limit: int = DEFAULT_BUDGET):
        self.limit, self.used = limit, 0

    def fits(self, n: int) -> bool:
        return self.used + n <= self.limit

    def take(self, n: int) -> bool:
        if self.used + n > self.limit:
            return False
        self.used += n
        return True

    def give(self, n: int) -> None:
        self.used = max(0, self.used - n)


def over_budget() -> str:
    """The expert text of a refused piece (the plugin's twin: rt_enet.lua's pending_refused)."""
    return (f"Pending reassembly exceeds the budget of {PENDING.limit} bytes (protodump.reassembly_budget): "
            "piece not stored")


PENDING = Budget()             # one per process: a process decodes one capture at a time
# Long-lived conversation state that is not pending reassembly but weighs (an inflate window: ~40 KB a
# direction): charged to its conversation (engine.lifetime.Lifetimes.charge), given back when the conversation is
# freed; beyond STATE.limit the oldest conversations are freed at once (preference protodump.state_budget).
STATE_BUDGET = 32 << 20
INFLATE_COST = 48 << 10        # an inflate window and its state (measured): what one costs the state budget
STATE = Budget(STATE_BUDGET)
