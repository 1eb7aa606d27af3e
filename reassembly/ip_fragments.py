"""IPv4 datagrams from their fragments, as Wireshark's ip.defragment does it in one pass (packet-ip.c hands each
fragment to reassemble.c's fragment_add_check): the pieces of one datagram share (source, destination, protocol,
identification); the datagram is complete when its last fragment (More Fragments clear) has come and the pieces
cover it from byte 0 without a gap, whatever their order; the frame whose fragment completes it shows the whole
datagram, and a later fragment with the same key starts a new one.

Bounded: at most DATAGRAM_LIMIT datagrams pending (the oldest is forgotten), each piece charged to the global
pending-reassembly budget (reassembly/budget.py) until its datagram completes or is forgotten. What is not
modelled gives the datagram up and its frames stay plain fragments, shown as data (tshark shows overlaps with
"[Overlap]" items and an error on conflicting or too long fragments): a fragment that overlaps another one, ends
past the datagram's known end, or would make it longer than 65,535 bytes. No library does this over a stream of
frames (scapy's defragment() takes a whole list, and keeps no bounds).
"""
from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict

from .budget import PENDING, PIECE_OVERHEAD

DATAGRAM_LIMIT = 4096          # datagrams pending at once
DATAGRAM_MAX = 65535           # bytes of IP payload a reassembled datagram may reach


class _Datagram:
    __slots__ = ("pieces", "starts", "size", "covered", "top", "held")

    def __init__(self):
        self.pieces: list[tuple[int, bytes, int]] = []     # (offset, data, frame), sorted by offset
        self.starts: list[int] = []                        # their offsets, for the bisection
        self.size: int | None = None                       # known once the last fragment has come
        self.covered = 0                                   # bytes held (the pieces never overlap)
        self.top = 0                                       # the end of the furthest piece
        self.held = 0                                      # bytes charged to the budget

    def overlaps(self, offset: int, end: int, at: int) -> bool:
        """Whether [offset, end) overlaps the piece before index `at` or the one at it (they are disjoint and
        sorted: only the neighbours can): a look at two pieces, however many there are."""
        pieces = self.pieces
        if at and pieces[at - 1][0] + len(pieces[at - 1][1]) > offset:
            return True
        return at < len(pieces) and pieces[at][0] < end


class IpFragments:
    """One capture's pending datagrams. add() a fragment; it answers None (kept, or given up), or the whole
    datagram when this fragment completes it: (pieces [(frame, offset, length)] in offset order, its bytes)."""

    def __init__(self, limit: int = DATAGRAM_LIMIT, record: dict | None = None, learnt: dict | None = None):
        self.limit = limit
        self.pending: OrderedDict = OrderedDict()
        self.refused = 0           # fragments the budget refused (their datagrams given up)
        # -2 (cli/two_pass_opts.py): the first pass records, for each fragment of a datagram a later frame
        # completes, that frame; the second pass reads them (`learnt`: "[Reassembled IPv4 in frame: N]")
        self.record, self.learnt = record, learnt

    def add(self, key, offset: int, data: bytes, more: bool, frame: int):
        dgram = self.pending.get(key)
        if dgram is None:
            if len(self.pending) >= self.limit:
                self._drop(self.pending.popitem(last=False)[1])
            dgram = self.pending[key] = _Datagram()
        end = offset + len(data)
        at = bisect_left(dgram.starts, offset)
        if end > DATAGRAM_MAX or (dgram.size is not None and (end > dgram.size or not more)) or \
                (not more and end < dgram.top) or dgram.overlaps(offset, end, at):
            self._drop(self.pending.pop(key))
            return None
        cost = len(data) + PIECE_OVERHEAD
        if not PENDING.take(cost):
            self.refused += 1
            self._drop(self.pending.pop(key))
            return None
        dgram.held += cost
        dgram.pieces.insert(at, (offset, data, frame))
        dgram.starts.insert(at, offset)
        dgram.covered += len(data)
        dgram.top = max(dgram.top, end)
        if not more:
            dgram.size = end
        if dgram.size is None or dgram.covered != dgram.size:
            return None        # (no overlaps: the pieces cover the datagram exactly when their lengths add up)
        pieces = dgram.pieces
        del self.pending[key]
        self._drop(dgram)
        if self.record is not None:
            for _, _, f in pieces:
                if f != frame:
                    self.record[f] = frame
        return [(f, o, len(d)) for o, d, f in pieces], b"".join(d for _, d, _ in pieces)

    @staticmethod
    def _drop(dgram: _Datagram) -> None:
        PENDING.give(dgram.held)
        dgram.held = 0
