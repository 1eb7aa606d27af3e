"""Text of frozen subtrees: children tuples shared between packets (capture/layers.py, engine blocks) depend only
on their bytes, so their rendered text (JSON or -V) is made once per nesting depth and reused."""
from __future__ import annotations

MEMO_BYTES = 8 << 20       # text kept per output form; about 200 bytes of overhead counted per entry besides it
ENTRY_OVERHEAD = 200


class FrozenText:
    """render(kids, depth, out) appends the text of `kids` to the list `out`; text(kids, depth) memoises it.
    Keyed by (id(kids), depth); the entry holds `kids`, which keeps its id from being reused. Bounded in bytes:
    cleared when the texts kept reach `limit` bytes (a subtree's text may be a few bytes or many kilobytes)."""

    def __init__(self, render, limit: int = MEMO_BYTES):
        self.render, self.limit = render, limit
        self.memo: dict[tuple[int, int], tuple] = {}
        self.size = 0

    def text(self, kids: tuple, depth: int) -> str:
        key = (id(kids), depth)
        hit = self.memo.get(key)
        if hit is None or hit[0] is not kids:
            out: list[str] = []
            self.render(kids, depth, out)
            text = "".join(out)
            cost = len(text) + ENTRY_OVERHEAD
            if self.size + cost > self.limit:
                self.memo.clear()
                self.size = 0
            self.size += cost
            hit = self.memo[key] = (kids, text)
        return hit[1]
