"""One direction of a TCP connection, handed to a subdissector the way tshark 4.0's TCP dissector does it with
its default preferences (desegmentation on, out-of-order reassembly off, sequence analysis on), so that a PDU
appears in exactly the frame where tshark shows a dissect_tcp_pdus dissector's PDU (the plugin's twin is
stream_tcp_segment in lua/rt_stream.lua).

Measured on tshark 4.0.17 (docs/tshark-formats.md section 6):

- a segment starting before the next expected sequence number (a retransmission, a duplicate, or an
  out-of-order segment arriving late) is never handed over, not even its new bytes; for tshark's own
  reassembly (`fill`: TCP's analysis calls it out-of-order or a fast retransmission) one that falls in the
  pending PDU is stored there and can complete it, and one that falls in a PDU completed before is a
  reassembly error (`overlaps_done`, the last DONE_KEPT such PDUs remembered);
- a segment after a gap (its predecessor lost or not yet arrived) is handed over as if it followed on, with
  the "previous segment not captured" flag (`Handover.lost`): there the stream layer resynchronises;
- when the subdissector needs more bytes than there are (a desegment request), the rest becomes a pending PDU
  (Wireshark's multi-segment PDU) with a known end, or open ("one more segment": the whole next segment joins
  it). Later segments inside it are stored at their offsets; once every byte is there it is handed over,
  reassembled, in the frame that completed it, followed by the rest of that segment. A pending PDU with a hole
  never completes: the first segment reaching past its end abandons it and hands over the bytes after its end.

Memory: only the pending PDU is kept, at most `max_pdu` bytes (a longer one is framed without its bytes, see
Pending), and the bounds of the last DONE_KEPT PDUs reassembled from segments.

Usage (engine/streams.py is the real caller)::

    direction = TcpDirection()
    for h in direction.segment(seq, payload, frame, flags):     # a generator: consume it fully, in order
        ... cut h.data into PDUs; if the last one is incomplete at position p and needs n bytes in all
        (0: unknown, one more segment):
        direction.desegment(h, p, n)
"""
from __future__ import annotations

from collections.abc import Iterator

from .offsets import OffsetReassembly, OverBudget

SEQ_MOD = 1 << 32
MAX_PDU = 1 << 20          # the longest PDU a stream may assemble (a longer one is refused by the caller)
DONE_KEPT = 64             # PDUs reassembled from segments remembered per direction (late bytes that fall in one)
PASSED_KEPT = 4            # incomplete PDUs the stream went past kept per direction (late bytes may complete one)
FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10


class Handover:
    """Bytes handed to the subdissector in one call.

    data        the bytes (a whole segment, the rest of one, or a reassembled PDU)
    offset      stream offset of data[0] (0 = the first payload byte of this direction)
    seg_offset  where data starts in this frame's TCP payload; None for a reassembled PDU (spans segments:
                it needs its own data source, "Reassembled TCP (N bytes)")
    frames      the frames the bytes came from, in stream order (one frame unless reassembled)
    pieces      reassembled only: (frame, length, offset in data) of each segment's part, in stream order
                (tshark's "[N Reassembled TCP Segments (M bytes): #9(1448), #10(1448), ...]"); a retransmitted
                part overlaps the ones before it
    conflicts   reassembled only, when any: per piece, whether its data differs from the earlier bytes it overlaps
    lost        bytes before this were never handed over ("previous segment not captured"): the framing is
                unknown here (a direction whose start was not captured: the caller decides, see engine.streams)
    late        a fast retransmission of bytes handed over before, handed over again as they are: a PDU it
                leaves incomplete is never assembled (the stream went on past it)
    """

    __slots__ = ("conflicts", "data", "frames", "late", "lost", "offset", "pieces", "seg_offset")

    def __init__(self, data: bytes, offset: int, seg_offset: int | None, frames: tuple[int, ...], lost: bool,
                 pieces: tuple[tuple[int, int, int], ...] = (), late: bool = False):
        self.data, self.offset, self.seg_offset, self.frames, self.lost = data, offset, seg_offset, frames, lost
        self.pieces, self.late = pieces, late
        self.conflicts: tuple[bool, ...] = ()     # per piece: its data conflicts with the bytes before it

    def __repr__(self) -> str:
        return (f"Handover({len(self.data)} bytes @{self.offset} seg_offset={self.seg_offset} "
                f"frames={self.frames}{' lost' if self.lost else ''})")


class SegmentReassembly(OffsetReassembly):
    """A PDU's segments as reassemble.c's fragment_add_work puts them together: in stream order (segments at the
    same offset in arrival order), each adding the bytes past what the ones before it covered, so the lowest
    offset wins. A segment starting inside those bytes overlaps them; if its first bytes differ from them, its data
    conflicts (tshark's "[Conflicting data in segment overlap]", and "[Illegal Segments]" in Info).
    `conflicts`: once complete, the arrival indices of the conflicting pieces."""

    __slots__ = ("conflicts",)

    def _assemble(self) -> bytearray:
        buf, covered, conflicts = bytearray(self.total), 0, set()
        for i in sorted(range(len(self.pieces)), key=lambda k: self.pieces[k][0]):
            at, piece, _ = self.pieces[i]
            if at < covered:
                n = min(len(piece), covered - at)
                if buf[at:at + n] != piece[:n]:
                    conflicts.add(i)
            end = at + len(piece)
            if end > covered:
                buf[covered:end] = piece[covered - at:]
                covered = end
        self.conflicts = conflicts
        return buf


class Pending:
    """A PDU being assembled from segments: [start, end) in stream offsets, or open-ended (end None). One longer
    than the limit (tshark's own dissectors only: a WebSocket frame's declared length, often noise read after a
    lost segment) frames the segments that fall in it as tshark's multi-segment PDU does, but stores none of their
    bytes: `reached` counts how far they arrived without a hole, and `arrived` says a whole one came, which tshark
    would reassemble and protodump refuses (TcpDirection.refused)."""

    __slots__ = ("arrived", "end", "open_data", "oversized", "parts", "placed", "reached", "start")

    def __init__(self, start: int, end: int | None, limit: int):
        self.start, self.end = start, end
        self.oversized = end is not None and end - start > limit
        self.parts = SegmentReassembly(end - start, limit) if end is not None and not self.oversized else None
        self.open_data = bytearray()                  # open-ended: the bytes so far (contiguous)
        self.placed: list[tuple[int, int, int]] = []  # (offset, frame, length) of each part stored
        self.reached, self.arrived = start, False

    def add(self, offset: int, data: bytes, frame: int) -> bytes | None:
        """Store bytes at stream `offset`; the whole PDU once complete."""
        if self.oversized:
            if offset <= self.reached:
                self.reached = max(self.reached, min(self.end, offset + len(data)))
                self.arrived = self.reached == self.end
            return None
        if self.end is None:
            self.placed.append((offset, frame, len(data)))
            self.open_data += data
            return bytes(self.open_data)
        data = data[:self.end - offset]
        if not data:
            return None
        try:
            whole = self.parts.add(offset - self.start, data, frame)
        except OverBudget:              # the global reassembly budget is spent: this PDU never completes
            return None
        self.placed.append((offset, frame, len(data)))
        return whole

    def frames(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(frame for _, frame, _ in sorted(self.placed, key=lambda p: p[0])))

    def pieces(self) -> tuple[tuple[int, int, int], ...]:
        # by offset, parts at the same offset in arrival order (reassemble.c's fragment list)
        return tuple((frame, length, offset - self.start)
                     for offset, frame, length in sorted(self.placed, key=lambda p: p[0]))

    def conflicts(self) -> tuple[bool, ...]:
        """Per piece, in pieces() order: whether its data conflicts with the bytes before it (SegmentReassembly)."""
        flagged = getattr(self.parts, "conflicts", None) or ()
        order = sorted(range(len(self.placed)), key=lambda i: self.placed[i][0])
        return tuple(i in flagged for i in order) if flagged else ()

    def handover(self, data: bytes) -> Handover:
        h = Handover(data, self.start, None, self.frames(), False, self.pieces())
        h.conflicts = self.conflicts()
        return h


class TcpDirection:
    """The byte stream of one direction of one connection (see the module docstring)."""

    __slots__ = ("base", "done", "filled", "fin", "head_kept", "late", "lost_bytes", "max_pdu", "nxt",
                 "overlaps_done", "passed", "pending", "refused", "repeats_start", "rst", "tsharks_reassembly")

    def __init__(self, max_pdu: int = MAX_PDU):
        self.base: int | None = None      # raw sequence number of stream offset 0
        self.nxt: int | None = None       # next expected stream offset (the highest end seen)
        self.pending: Pending | None = None
        self.max_pdu = max_pdu
        self.fin = self.rst = False
        self.filled = False               # the last segment was an out-of-order one stored in the pending PDU
        self.late = False                 # the last segment came after bytes past its start (never handed over)
        self.done: list[tuple[int, int]] = []     # [start, end) of the last PDUs reassembled from segments
        self.passed: list[Pending] = []           # the last PDUs the stream went past incomplete (_passed)
        # the caller's protocol is framed by tshark's own reassembly (a C dissector's tcp_dissect_pdus), which
        # keeps PDUs the stream went past; the plugin's own stream framing keeps none (engine/streams.py sets it)
        self.tsharks_reassembly = False
        self.overlaps_done = False        # the last segment was a stored one's bytes falling in a PDU done before
        self.repeats_start = False        # the last segment was late bytes where a PDU from segments starts
        # bytes at the start of the last segment stored in a PDU from segments that stays incomplete (a segment
        # after a gap, past that PDU's end): desegment_tcp's first round, which calls no dissector
        self.head_kept = 0
        self.refused = 0                  # the length of an oversized pending PDU whose bytes all arrived (Pending)
        self.lost_bytes = 0               # bytes skipped by gaps so far (statistics)

    def offset_of(self, seq: int) -> int:
        """Stream offset of a raw sequence number, unwrapped around the next expected offset."""
        rel = (seq - self.base) % SEQ_MOD
        if self.nxt is None:
            return rel
        delta = (rel - self.nxt) % SEQ_MOD
        return self.nxt + (delta - SEQ_MOD if delta >= SEQ_MOD // 2 else delta)

    def segment(self, seq: int, payload: bytes, frame: int, flags: int = 0, resent: bool = False,
                fill: bool = False, gap: bool | None = None, fast: bool = False) -> Iterator[Handover]:
        """The handovers one segment makes, in order (a generator: the caller may call desegment() between
        them, which changes what follows). `resent`: TCP's analysis calls it a retransmission though it starts at
        the next expected byte (a spurious one: the peer acknowledged it already): handed over neither. `fill`:
        TCP's analysis calls this late segment out-of-order (not a retransmission), and tshark's own reassembly
        (a C dissector's tcp_dissect_pdus) stores it in the pending PDU it falls in (measured on 4.0.17). `gap`:
        whether TCP's analysis flags this segment "previous segment not captured" (None: unknown); bytes skipped
        by segments never handed over (a pure ACK ahead of the stream) are no gap without it, as in the plugin.
        `fast`: a `fill` segment that TCP's analysis calls a fast retransmission: outside the pending PDU and the
        PDUs done, tshark hands it over again as it is (decode_tcp_ports refuses out-of-order segments and
        retransmissions, not fast retransmissions; measured on 4.0.17)."""
        if flags & SYN:
            self.base, self.nxt = (seq + 1) % SEQ_MOD, 0
        elif self.base is None:
            self.base = seq                  # started mid-stream: this segment's first byte is offset 0
        offset = self.offset_of(seq)
        end = offset + len(payload)
        self.filled = self.late = self.overlaps_done = self.repeats_start = False
        self.head_kept = 0
        self.fin |= bool(flags & FIN)
        self.rst |= bool(flags & RST)
        first = self.nxt is None
        if not payload:
            if first:
                self.nxt = offset
            return
        behind = not first and offset < self.nxt
        if behind and self.tsharks_reassembly and offset == self.nxt - 1 and len(payload) > 1:
            # tcp.c calls a segment from the byte before the next expected one no retransmission (a keep-alive's
            # byte with data after it): tshark's own reassembly gets it from its first byte (the plugin's stream
            # framing drops it as late)
            behind = False
        if resent or behind:                              # retransmission / late: tshark hands nothing over
            self.late = True
            self.nxt = end if first else max(self.nxt, end)
            pend = self.pending
            if self.starts_pdu(offset, end):
                # desegment_tcp looks up a multi-segment PDU starting at this very sequence number first: these
                # are its first segment's bytes again, shown as retransmitted data and stored nowhere
                self.repeats_start = True
                return
            if fill and not resent and pend is not None and pend.end is not None and pend.start <= offset < pend.end:
                whole = pend.add(offset, payload, frame)         # ... but an out-of-order one fills a hole
                self.filled = whole is None
                if whole is not None:
                    self.pending = None
                    self._done(pend)
                    yield pend.handover(whole)
            elif fill and not resent:
                old = self._passed_at(offset)
                if old is not None:
                    # in a PDU left incomplete when the stream went past it: desegment_tcp still finds it
                    whole = old.add(offset, payload, frame)
                    self.filled = whole is None
                    if whole is not None:
                        self.passed.remove(old)
                        self._done(old)
                        yield old.handover(whole)
                    return
                # in a PDU reassembled already: tshark's reassembly refuses it ("New fragment overlaps old data")
                self.overlaps_done = self._in_done(offset)
                if fast and not self.overlaps_done:
                    self.late = False
                    yield Handover(payload, offset, 0, (frame,), False, late=True)
            return
        lost = not first and offset > self.nxt and gap is not False
        if lost:
            self.lost_bytes += offset - self.nxt
        self.nxt = end
        pos = 0
        pend = self.pending
        if pend is not None:
            if pend.end is None and offset == pend.start + len(pend.open_data):
                whole = pend.add(offset, payload, frame)
                self.pending = None
                yield pend.handover(whole)
                return
            if pend.end is not None and pend.start <= offset < pend.end:
                whole = pend.add(offset, payload, frame)
                if pend.arrived:
                    self.refused = pend.end - pend.start
                if whole is None and end <= pend.end and not pend.arrived:
                    return                   # inside the PDU, still incomplete: nothing to hand over yet
                self.pending = None
                pos = pend.end - offset
                if whole is not None:
                    self._done(pend)
                    yield pend.handover(whole)
                    if self.pending is not None:          # the reassembled PDU asked for more: the rest joins it
                        if pos < len(payload):
                            self.pending.add(pend.end, payload[pos:], frame)
                        return
                else:
                    self.head_kept = pos
                    self._passed(pend)
                lost = False                 # the PDU's known end frames the rest of the segment
            else:
                self.pending = None          # past it: abandoned (complete only if late segments fill it)
                self._passed(pend)
        if pos < len(payload):
            yield Handover(payload[pos:], offset + pos, pos, (frame,), lost)

    def _passed(self, pend: Pending) -> None:
        """Keep a PDU the stream went past incomplete (tshark keeps its multi-segment PDUs): an out-of-order
        segment or fast retransmission falling in it is stored there, and may complete it. The last PASSED_KEPT,
        their bytes in the global reassembly budget."""
        if pend.end is None or pend.oversized or not self.tsharks_reassembly:
            return
        passed = self.passed
        if len(passed) >= PASSED_KEPT:
            del passed[0]
        passed.append(pend)

    def _passed_at(self, offset: int) -> Pending | None:
        """The passed PDU desegment_tcp finds for stream `offset`: of all its PDUs (done or not) the one that
        starts last at or before it, if that one is a passed one holding the offset."""
        best = None
        for pend in self.passed:
            if pend.start <= offset and (best is None or pend.start >= best.start):
                best = pend
        if best is None or offset >= best.end:
            return None
        if any(best.start < start <= offset for start, _ in self.done):
            return None
        return best

    def _done(self, pend: Pending) -> None:
        done = self.done
        if len(done) >= DONE_KEPT:
            del done[0]
        done.append((pend.start, pend.end))

    def starts_pdu(self, offset: int, end: int) -> bool:
        """Whether stream bytes [offset, end) start a PDU assembled from segments (the pending one, or one done
        before), within it: desegment_tcp's exact lookup of a multi-segment PDU at a segment's sequence number."""
        pend = self.pending
        if pend is not None and pend.end is not None and pend.start == offset and end <= pend.end:
            return True
        return any(start == offset and end <= stop for start, stop in self.done)

    def _in_done(self, offset: int) -> bool:
        """Whether stream `offset` falls in the PDU reassembled from segments that starts last at or before it
        (desegment_tcp's lookup of the multi-segment PDU a segment belongs to)."""
        best = None
        for start, end in self.done:
            if start <= offset and (best is None or start >= best[0]):
                best = (start, end)
        return best is not None and offset < best[1]

    def desegment(self, h: Handover, pos: int, need: int) -> None:
        """The subdissector needs more bytes: the PDU starting at h.data[pos] is `need` bytes long in all
        (0: unknown, take the whole next segment). Over max_pdu, the PDU is oversized (Pending): framed, not
        stored; the caller refuses such lengths for the protocols it frames by itself."""
        if h.late:              # (the stream is past these bytes: the pending PDU, if any, stays)
            return
        start = h.offset + pos
        pend = Pending(start, start + need if need > 0 else None, self.max_pdu)
        if h.seg_offset is not None:
            pend.add(start, h.data[pos:], h.frames[0])
        else:                                # re-pending part of a reassembled PDU: keep its parts apart
            for frame, length, rel in h.pieces:
                at = h.offset + rel
                lo = max(at, start)
                if at + length > lo:
                    pend.add(lo, h.data[lo - h.offset:at + length - h.offset], frame)
        self.pending = pend
