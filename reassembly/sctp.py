"""The DATA chunks of one SCTP association direction as byte streams, one per stream id, for stream protocols
whose PDUs may run across messages (Rutentoy over SCTP: each message is a piece of the byte stream).

What tshark 4.0's SCTP dissector hands to a subdissector (measured, docs/tshark-formats.md section 7): every DATA
chunk's user data in packet order, except a chunk whose TSN was seen before (a retransmission); a fragmented
user message (B/E flags) once, reassembled, in the frame of the fragment that completes it; a late chunk (TSN
below the highest seen) is handed over too. On top of that (Python and the plugin alike): an ordered message
whose stream sequence number (SSN) is behind the next expected one is late and dropped, one ahead of it comes
after lost messages (`lost`: the stream layer resynchronises). Unordered messages just continue the stream.

Memory: TSNs seen are kept in a bounded window; fragments and the bytes of an unfinished PDU are bounded.
"""
from __future__ import annotations

from .tcp import MAX_PDU, Handover

SSN_MOD = 1 << 16
TSN_MOD = 1 << 32
SEEN_LIMIT = 4096          # TSNs remembered per direction (duplicate detection)
FRAGMENT_LIMIT = 1024      # fragments held per direction
B_BIT, E_BIT, U_BIT = 0x02, 0x01, 0x04


class Message:
    """One user message as tshark hands it over: its bytes, and where they are (chunk data in this frame, or
    reassembled from fragments: `frames` then lists their frames)."""

    __slots__ = ("chunk_offset", "data", "frames", "ordered", "sid", "ssn")

    def __init__(self, data: bytes, sid: int, ssn: int, ordered: bool, chunk_offset: int | None, frames):
        self.data, self.sid, self.ssn, self.ordered = data, sid, ssn, ordered
        self.chunk_offset, self.frames = chunk_offset, frames


class SctpDirection:
    """One direction of one association: duplicate TSNs, fragment reassembly, then one Stream per stream id."""

    __slots__ = ("fragments", "seen", "streams")

    def __init__(self):
        self.seen: dict[int, None] = {}                  # TSNs seen (insertion order: oldest evicted first)
        self.fragments: dict[int, tuple] = {}            # TSN -> (flags, sid, ssn, data, frame)
        self.streams: dict[int, Stream] = {}

    def data_chunk(self, tsn: int, sid: int, ssn: int, flags: int, data: bytes, frame: int,
                   chunk_offset: int) -> Message | None:
        """The message this DATA chunk hands over, or None (a retransmission, or a fragment of an unfinished
        message)."""
        if tsn in self.seen:
            return None
        if len(self.seen) >= SEEN_LIMIT:
            del self.seen[next(iter(self.seen))]
        self.seen[tsn] = None
        ordered = not flags & U_BIT
        if flags & (B_BIT | E_BIT) == B_BIT | E_BIT:
            return Message(data, sid, ssn, ordered, chunk_offset, (frame,))
        if len(self.fragments) >= FRAGMENT_LIMIT:
            del self.fragments[next(iter(self.fragments))]
        self.fragments[tsn] = (flags, sid, ssn, data, frame)
        return self.assemble(tsn, sid, ssn, ordered)

    def assemble(self, tsn: int, sid: int, ssn: int, ordered: bool) -> Message | None:
        """The whole message once its first (B) to last (E) fragment are all there, in TSN order."""
        first = tsn
        while first in self.fragments and not self.fragments[first][0] & B_BIT:
            first = (first - 1) % TSN_MOD
        last = tsn
        while last in self.fragments and not self.fragments[last][0] & E_BIT:
            last = (last + 1) % TSN_MOD
        if first not in self.fragments or last not in self.fragments:
            return None
        parts, t = [], first
        while True:
            parts.append(self.fragments.pop(t))
            if t == last:
                break
            t = (t + 1) % TSN_MOD
        data = b"".join(p[3] for p in parts)
        if len(data) > MAX_PDU:
            return None
        return Message(data, sid, ssn, ordered, None, tuple(dict.fromkeys(p[4] for p in parts)))

    def stream(self, sid: int) -> Stream:
        s = self.streams.get(sid)
        if s is None:
            s = self.streams[sid] = Stream()
        return s


class Stream:
    """The messages of one stream id in one direction as one byte stream (cut by the caller like TCP's)."""

    __slots__ = ("carry", "carry_frames", "next_ssn", "offset")

    def __init__(self):
        self.next_ssn = 0                  # SSNs start at 0 on every stream (RFC 9260 6.5)
        self.carry = b""                   # the start of a PDU still incomplete
        self.carry_frames: tuple[int, ...] = ()
        self.offset = 0                    # stream offset of the next message's first byte

    def message(self, m: Message, frame: int) -> Handover | None:
        """The bytes handed to the stream protocol for this message, or None for a late ordered message."""
        lost = False
        if m.ordered:
            delta = (m.ssn - self.next_ssn) % SSN_MOD
            if delta >= SSN_MOD // 2:
                return None                        # behind: a late message, its place in the stream is gone
            lost = delta > 0
            self.next_ssn = (m.ssn + 1) % SSN_MOD
        if lost:
            self.carry, self.carry_frames = b"", ()
        data = self.carry + m.data
        frames = tuple(dict.fromkeys((*self.carry_frames, *m.frames)))
        whole = not self.carry and m.chunk_offset is not None
        h = Handover(data, self.offset - len(self.carry), 0 if whole else None, frames, lost)
        self.offset += len(m.data)
        self.carry, self.carry_frames = b"", ()
        return h

    def desegment(self, h: Handover, pos: int, need: int) -> None:
        """The PDU at h.data[pos] needs more bytes: keep them for the next message (the caller bounds size)."""
        self.carry = h.data[pos:]
        self.carry_frames = h.frames
