"""Text of frozen subtrees: children tuples shared between packets (capture/layers.py, engine blocks) depend only
on their bytes, so their rendered text (JSON or -V) is made once per nesting depth and reused."""
from __future__ import annotations


class FrozenText:
    """render(kids, depth, out) appends the text of `kids` to the list `out`; text(kids, depth) memoises it.
    Keyed by (id(kids), depth); the entry holds `kids`, which keeps its id from being reused. Bounded."""

    def __init__(self, render, limit: int = 2048):
        self.render, self.limit = render, limit
        self.memo: dict[tuple[int, int], tuple] = {}

    def text(self, kids: tuple, depth: int) -> str:
        key = (id(kids), depth)
        hit = self.memo.get(key)
        if hit is None or hit[0] is not kids:
            out: list[str] = []
            self.render(kids, depth, out)
            if len(self.memo) >= self.limit:
                self.memo.clear()
            hit = self.memo[key] = (kids, "".join(out))
        return hit[1]
