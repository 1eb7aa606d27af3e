"""Where TCP options lie, without building their items: the walk as tshark makes it (option_spans), the
timestamps option the template leaves to slots, and the decisions the decoder takes before any tree is built
(capture/network.py: an exception in the walk; capture/layers/__init__.py: which protocol the snap length cut)."""
from __future__ import annotations

import struct

NOP_NOP_TS = b"\x01\x01\x08\x0a"     # what Linux puts in every segment of a connection
NOP_NOP_TS_KEY = b"\x01\x01\x02"     # its template key: the options without the timestamps, and where they are
TSVAL_TSECR = struct.Struct("!II").unpack_from    # a timestamps option's two values


def option_spans(data: bytes, p: int, end: int):
    """(offset, kind, length) of each option of data[p:end] up to an End of Option List, as tshark's walk finds
    them; the walk ends before an option whose length byte is missing, under 2 or runs past `end` (yielded as
    (offset, kind, None))."""
    while p < end:
        kind = data[p]
        if kind == 0:
            return
        if kind == 1:
            yield p, 1, 1
            p += 1
            continue
        n = data[p + 1] if p + 1 < end else 0
        if n < 2 or p + n > end:
            yield p, kind, None
            return
        yield p, kind, n
        p += n


def ts_option_at(options: bytes) -> int | None:
    """Where the one well-formed timestamps option of a well-formed option list starts (None: no such option)."""
    at = None
    for p, kind, n in option_spans(options, 0, len(options)):
        if n is None or kind == 8 and (at is not None or n != 10):
            return None
        if kind == 8:
            at = p
    return at


def cut_protocol(data: bytes, off: int, hl: int) -> str:
    """The protocol whose dissection the snap length cut in TCP options data[off + 20:off + hl]: "MPTCP" when
    it is an MPTCP option whose kind and length were captured, else "TCP" ([Packet size limited during capture:
    X truncated])."""
    p, end = off + 20, off + hl
    while p + 1 < min(end, len(data)):
        kind = data[p]
        if kind in (0, 1):
            p += 1
            continue
        n = data[p + 1]
        if n < 2 or p + n > end:
            return "TCP"
        if p + n > len(data):
            return "MPTCP" if kind == 30 else "TCP"
        p += n
    return "TCP"


def sack_throws(data: bytes, p: int, end: int) -> bool:
    """Whether tshark's walk over the options data[p:end] meets a SACK option too short for one block, whose
    D-SACK read then runs past it (an exception: [Malformed Packet])."""
    for _, kind, n in option_spans(data, p, end):
        if n is None:
            return False
        if kind == 5 and n < 10:
            return True
    return False


def short_exception(data: bytes, p: int, end: int, there: int) -> str:
    """Why tshark's walk over the options data[p:end] of a short segment (bytes only up to `there`) throws:
    "" when it reads a kind or length byte past them (ReportedBoundsError: "[Malformed Packet]"), tshark's
    ContainedBoundsError text when an option whose length fits the options runs past them (its own dissector
    reads from a subset longer than the bytes)."""
    while p < end:
        if p >= there:
            return ""
        kind = data[p]
        if kind in (0, 1):
            p += 1
            continue
        if p + 1 >= min(end, there):
            return ""
        n = data[p + 1]
        if n < 2 or p + n > end:
            return ""
        if p + n > there:
            return "length of contained item exceeds length of containing item"
        p += n
    return ""
