"""Reassembly of a message sent in pieces placed at byte offsets (blank's chunk transfers; later ENet fragments
and Iceball file blocks): pieces in any order, duplicates and overlaps resolved as Wireshark does (the first
copy of a byte wins), complete when every byte of the announced total has arrived. Bounded: a total above the
limit is refused before anything is stored, and the bytes pending across all conversations share one budget
(reassembly/budget.py): a piece beyond it is refused with OverBudget. Its Lua twin is rt.chunk_piece in
lua/runtime.lua."""
from __future__ import annotations

from .budget import PENDING, PIECE_OVERHEAD, over_budget


class TooLarge(ValueError):
    pass


class OutOfRange(ValueError):
    pass


class OverBudget(OutOfRange):
    """The global budget of pending reassembly bytes is spent: the piece is not stored."""


class OffsetReassembly:
    __slots__ = ("total", "pieces", "done", "_frames", "_spans", "_covered", "_held")

    def __init__(self, total: int, limit: int):
        self._held = 0                                     # bytes of pieces counted in the global budget
        if total > limit:                                  # (set first: __del__ runs on a refused one too)
            raise TooLarge(f"Transfer of {total} bytes exceeds the limit of {limit}")
        self.total = total
        self.pieces: list[tuple[int, bytes, int]] = []   # (offset, data, frame), in arrival order
        self.done = 0                                      # the frame that completed it, once complete
        self._frames: list[int] = []
        self._spans: list[list[int]] = []                  # the covered [start, end) spans, sorted, disjoint
        self._covered = 0

    def __del__(self, _give=PENDING.give) -> None:      # bound early: safe at interpreter exit too
        if self._held:
            _give(self._held)

    def add(self, offset: int, data: bytes, frame: int) -> bytes | None:
        """Place a piece; the whole message when this piece completes it, else None (also for a late copy
        after completion: the message stays shown in the frame that completed it)."""
        if self.done:
            return None
        if offset + len(data) > self.total:
            raise OutOfRange(f"Block {offset}+{len(data)} lies beyond the transfer size {self.total}")
        cost = len(data) + PIECE_OVERHEAD
        if not PENDING.take(cost):
            raise OverBudget(over_budget())
        self._held += cost
        self.pieces.append((offset, data, frame))
        self._cover(offset, offset + len(data))
        if self._covered < self.total:
            return None
        self.done = frame
        buf = self._assemble()
        self._frames = sorted({f for _, _, f in self.pieces})
        self.pieces = []                                  # done: keep no bytes (memory stays bounded)
        PENDING.give(self._held)
        self._held = 0
        self._spans = []
        return bytes(buf)

    def _assemble(self) -> bytearray:
        """The whole message from its pieces: the first copy of a byte wins (Wireshark's rule for these)."""
        buf = bytearray(self.total)
        for at, piece, _ in reversed(self.pieces):
            buf[at:at + len(piece)] = piece
        return buf

    def _cover(self, start: int, stop: int) -> None:
        """Merge [start, stop) into the covered spans, keeping the covered byte count (a message may hold
        thousands of pieces: no sorting of every piece on every add)."""
        spans = self._spans
        if spans and spans[-1][0] <= start <= spans[-1][1]:      # the usual case: pieces in order
            if stop > spans[-1][1]:
                self._covered += stop - spans[-1][1]
                spans[-1][1] = stop
            return
        kept = []
        for lo, hi in spans:
            if hi < start or lo > stop:
                kept.append([lo, hi])
            else:
                self._covered -= hi - lo
                start, stop = min(start, lo), max(stop, hi)
        kept.append([start, stop])
        kept.sort()
        self._spans = kept
        self._covered += stop - start

    def covered(self) -> int:
        """Bytes covered by the union of the pieces."""
        return self._covered

    def frames(self) -> list[int]:
        """The frames whose pieces made the message (so far, or in the end)."""
        return self._frames if self.done else sorted({frame for _, _, frame in self.pieces})
