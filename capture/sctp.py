"""SCTP (RFC 9260): the common header and its chunks, several per packet. Decoding fills the Decoded record
(`d.chunks`: one Chunk per chunk; DATA chunks give their TSN, stream, SSN, PPID and where their user data is),
which engine.streams reads to feed DATA payloads to stream protocols; `sctp_layer` builds the tree lazily, with
tshark's field names (tshark 4.0 `-T json`; TSNs shown absolute, as protodump shows TCP sequence numbers raw).

No association state here: no relative TSNs, no reassembly of fragmented user messages (B/E flags are shown).
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from ..engine.tree import HiddenItem, Item, Layer, TextItem, bit_picture
from . import fields as f

_COMMON = struct.Struct("!HHII").unpack_from
_CHUNK = struct.Struct("!BBH").unpack_from
_DATA = struct.Struct("!IHHI").unpack_from

CHUNK_NAMES = {0: "DATA", 1: "INIT", 2: "INIT_ACK", 3: "SACK", 4: "HEARTBEAT", 5: "HEARTBEAT_ACK", 6: "ABORT",
               7: "SHUTDOWN", 8: "SHUTDOWN_ACK", 9: "ERROR", 10: "COOKIE_ECHO", 11: "COOKIE_ACK", 12: "ECNE",
               13: "CWR", 14: "SHUTDOWN_COMPLETE", 15: "AUTH", 16: "NR-SACK", 64: "I_DATA", 128: "ASCONF_ACK",
               129: "PKTDROP", 130: "RE_CONFIG", 132: "PAD", 192: "FORWARD_TSN", 193: "ASCONF",
               194: "I_FORWARD_TSN"}
DATA = 0


class Chunk(NamedTuple):
    kind: int
    flags: int
    offset: int          # of the chunk header in the frame
    length: int          # the chunk length field (header included, padding excluded)
    # DATA chunks only (else 0): TSN, stream id, stream sequence number, payload protocol id, user data offset
    tsn: int = 0
    sid: int = 0
    ssn: int = 0
    ppid: int = 0
    data_offset: int = 0

    @property
    def data_length(self) -> int:
        return self.offset + self.length - self.data_offset if self.kind == DATA else 0

    @property
    def name(self) -> str:
        return CHUNK_NAMES.get(self.kind, "UNKNOWN")


def decode(d, data: bytes, off: int, end: int) -> None:
    """The SCTP header and chunk list of one packet into `d` (never raises: a bad chunk ends the list)."""
    from .network import short
    d.protocols.append("sctp")
    wire, end = end, min(end, len(data))
    if off + 12 > end:
        if off + 12 <= wire:        # the snap length cut the common header: the ports, if there (network.cut)
            if end - off >= 4:
                d.sport, d.dport = struct.unpack_from("!HH", data, off)
            d.spans.append(("sctp", off, end - off, None, "cut"))
            return
        d.spans.append(("sctp", off, max(0, end - off)))
        short(d, "sctp", "SCTP", 12, off, end)
        return
    d.sport, d.dport, _vtag, _sum = _COMMON(data, off)
    d.transport = "sctp"
    d.payload_offset = off + 12
    d.payload = data[off + 12:end]
    d.spans.append(("sctp", off, end - off))
    chunks, p = [], off + 12
    while p + 4 <= end:
        kind, flags, length = _CHUNK(data, p)
        if end < p + length <= wire and length >= (16 if kind == DATA else 4):
            # the snap length cut this chunk: tshark shows the chunks before it, names it in the Info column
            d.spans[-1] = ("sctp", off, end - off, kind, "cut")
            break
        if length == 0:             # tshark's chunk loop throws: "[Malformed Packet: SCTP]", the chunks before it
            from ..engine.tree import ERROR, MALFORMED, ExpertInfo
            d.spans[-1] = ("sctp", off, end - off, None, "bad")
            d.problems.append(("sctp", ExpertInfo("_ws.malformed.expert", MALFORMED, ERROR,
                                                  "Malformed Packet (Exception occurred)")))
            break
        if length < 4 or p + length > end or (kind == DATA and length < 16):
            d.bad("sctp", f"Malformed chunk: length {length} at offset {p - off} ({end - p} bytes left)")
            break
        if kind == DATA:
            tsn, sid, ssn, ppid = _DATA(data, p + 4)
            chunks.append(Chunk(kind, flags, p, length, tsn, sid, ssn, ppid, p + 16))
        else:
            chunks.append(Chunk(kind, flags, p, length))
        p += length + (-length % 4)
    else:
        if p < end < p + 4 <= wire or p == end < wire:
            d.spans[-1] = ("sctp", off, end - off, None, "cut")       # a chunk header cut
    d.chunks = chunks


class TsnTable:
    """Per association direction, the TSN that relative TSNs count from (tshark: the INIT / INIT_ACK's Initial
    TSN, else the first TSN seen). Kept per capture in decode order; bounded."""

    LIMIT = 4096

    def __init__(self):
        self.bases: dict[tuple, int] = {}
        self.pending: dict[tuple, list] = {}     # (direction, stream id) -> [(frame, length)] of a message so far
        # -2 (cli/two_pass_opts.py): the first pass records where each piece's message completes (`record`:
        # (frame, chunk index) -> frame), the second shows it in the piece (`learnt`) as tshark's second pass
        self.record: dict[tuple, int] | None = None
        self.learnt: dict[tuple, int] | None = None

    def analyze(self, d, data: bytes) -> None:
        """Set d.tsn_bases = (the sender's base, the receiver's base) for this packet, and d.sctp_fragments =
        {chunk index: [(frame, length), ...]} for the DATA chunks that end a fragmented message."""
        me, peer = (d.src, d.sport, d.dst, d.dport), (d.dst, d.dport, d.src, d.sport)
        for i, c in enumerate(d.chunks or ()):
            if c.kind in (1, 2) and c.length >= 20:
                # tshark counts from the first DATA chunk's TSN; the association known, a SACK for a direction
                # that sent none yet counts from 0 (with no INIT seen, it shows no relative TSN at all)
                for key in (me, peer):
                    if key not in self.bases:
                        self._put(key, None)
            elif c.kind == DATA:
                if self.bases.get(me) is None:
                    self._put(me, c.tsn)
                self._fragment(d, i, c, (me, c.sid))
                if self.learnt and (d.frame.number, i) in self.learnt:
                    d.sctp_fragments = {**(d.sctp_fragments or {}), i: self.learnt[d.frame.number, i]}
        d.tsn_bases = (self.bases.get(me), (self.bases[peer] or 0) if peer in self.bases else None)

    def _fragment(self, d, index: int, c: Chunk, key: tuple) -> None:
        """Follow the B/E bits of a stream's DATA chunks (in capture order, as they come)."""
        begin, end = c.flags & 2, c.flags & 1
        if begin and end:
            return
        if begin or key not in self.pending:
            if not begin:
                return                          # a middle or last piece of a message whose start we missed
            if len(self.pending) >= self.LIMIT:
                self.pending.pop(next(iter(self.pending)))
            self.pending[key] = []
        pieces = self.pending[key]
        if len(pieces) < 4096:
            pieces.append((d.frame.number, c.data_length, index))
        if end:
            del self.pending[key]
            frame = d.frame.number
            if self.record is not None:
                self.record.update({(n, i): frame for n, _, i in pieces if n != frame})
            done = Pieces((n, size) for n, size, _ in pieces)
            done.second_pass = self.learnt is not None
            d.sctp_fragments = {**(d.sctp_fragments or {}), index: done}

    def _put(self, key: tuple, base: int) -> None:
        if len(self.bases) >= self.LIMIT:
            self.bases.pop(next(iter(self.bases)))
        self.bases[key] = base


class Pieces(list):
    """The pieces (frame, length) of a message completed in a frame. tshark's items for them span the reassembled
    message's data source (`source`: its index, once engine.streams made it); its second pass (-2,
    `second_pass`) numbers their payload bytes from 0."""

    second_pass = False
    source = 0


def info(d) -> str:
    """tshark's SCTP Info column: each chunk's name, a DATA chunk's relative TSN (and "(Message Fragment)" while
    its message is incomplete), a SACK's relative cumulative TSN and window; each followed by a space."""
    out = [_chunk_info(d, c) for c in d.chunks or ()]
    span = d.spans[-1]
    if span[-1] == "cut":           # (decode: the snap length cut a chunk, named once its header was captured)
        return "".join(out) + (CHUNK_NAMES.get(span[3], "UNKNOWN") + " " if span[3] is not None else "") + \
            "[Packet size limited during capture]"
    return "".join(out)


def around_data(d) -> tuple[str, str]:
    """The Info texts of the chunks before the first DATA chunk and after the last one: SCTP's column around
    what the dissector of the DATA chunks' payload writes (the plugin rewrites the column from its fence)."""
    if not d.chunks or len(d.chunks) < 2:
        return "", ""
    kinds = [c.kind for c in d.chunks]
    if DATA not in kinds:
        return "", ""
    first, last = kinds.index(DATA), len(kinds) - 1 - kinds[::-1].index(DATA)
    texts = [_chunk_info(d, c) for c in d.chunks]
    return "".join(texts[:first]), "".join(texts[last + 1:])


def _chunk_info(d, c: Chunk) -> str:
    bases = d.tsn_bases or (None, None)
    if c.kind == DATA:
        return f"DATA (TSN={_rel(c.tsn, bases[0])}) " + ("(Message Fragment) " if c.flags & 3 != 3 else "")
    if c.kind == 3 and c.length >= 12:
        cum, rwnd = struct.unpack_from("!II", d.transport_data(), c.offset + 4)
        # (relative to the peer's first TSN; absolute while none of the peer's was seen, as tshark)
        return f"SACK (Ack={cum if bases[1] is None else _rel(cum, bases[1])}, Arwnd={rwnd}) "
    return c.name + " "


def _rel(tsn: int, base: int | None) -> int:
    return (tsn - (tsn if base is None else base)) & 0xFFFFFFFF


# -- the tree -------------------------------------------------------------------------------------------------

def sctp_layer(d, data: bytes, off: int, length: int, cut_kind: int | None = None, cut: str | None = None
               ) -> list[Layer]:
    """The SCTP layer, and a continuation layer per DATA chunk after the first (engine.dispatch.Packet.layers
    puts those after the game layers of the chunk before). `cut`: the snap length cut a chunk, or "bad": a chunk
    of length 0 (capture.sctp.decode; tshark shows the chunks before it, and no association index)."""
    if length < 12 or len(data) < off + 12:
        return [Layer("sctp", Item(f.sctp, None, off, length, "Stream Control Transmission Protocol"))]
    sport, dport, vtag, csum = _COMMON(data, off)
    top = Item(f.sctp, None, off, length, f"Stream Control Transmission Protocol, Src Port: {sport} ({sport}), "
                                          f"Dst Port: {dport} ({dport})")
    top.add(Item(f.sctp_srcport, sport, off, 2, f"Source port: {sport}"))
    top.add(Item(f.sctp_dstport, dport, off + 2, 2, f"Destination port: {dport}"))
    top.add(Item(f.sctp_verification_tag, vtag, off + 4, 4, f"Verification tag: 0x{vtag:08x}"))
    if not cut:
        top.add(Item(f.sctp_assoc_index, 65535, off, 0, "[Association index: disabled (enable in preferences)]",
                     generated=True))
    top.add(HiddenItem(f.sctp_port, sport, off, 2))
    top.add(HiddenItem(f.sctp_port, dport, off + 2, 2))
    top.add(Item(f.sctp_checksum, csum, off + 8, 4, f"Checksum: 0x{csum:08x} [unverified]"))
    top.add(Item(f.sctp_checksum_status, 2, off + 8, 0, "[Checksum Status: Unverified]", generated=True))
    bases = getattr(d, "tsn_bases", None) or (None, None)
    layers, after_data = [Layer("sctp", top)], False
    fragments = getattr(d, "sctp_fragments", None) or {}
    for i, c in enumerate(getattr(d, "chunks", None) or ()):
        if after_data:     # tshark: a chunk after a DATA chunk opens a new sctp item, after that one's payload
            top = Item(f.sctp, None, c.offset, off + length - c.offset)
            layers.append(Layer("sctp", top))
        after_data = c.kind == DATA
        item = top.add(chunk_item(data, c, bases, fragments.get(i)))
        if c.kind == DATA and c.length > 16:
            # tshark hands the user data to the layer above: the chunk's item, and the sctp item holding it, end
            # at the chunk's 16-byte header (packet-sctp.c proto_item_set_len)
            item.length = 16
            top.length = c.offset + 16 - top.offset
    return layers


def chunk_item(data: bytes, c: Chunk, bases=(None, None), fragments=None) -> Item:
    name = CHUNK_NAMES.get(c.kind, "UNKNOWN")
    # a text item (tshark's JSON keys it by its label)
    item = TextItem(None, None, c.offset, c.length + (-c.length % 4), f"{name} chunk" + _summary(data, c, bases))
    p = c.offset
    t = item.add(Item(f.sctp_chunk_type, c.kind, p, 1, f"Chunk type: {name} ({c.kind})"))
    t.add(Item(f.sctp_chunk_bit_1, bool(c.kind & 0x80), p, 1, f"{bit_picture(c.kind, 0x80, 8)} = Bit: " + (
        "Skip chunk and continue processing of the packet" if c.kind & 0x80 else "Stop processing of the packet")))
    t.add(Item(f.sctp_chunk_bit_2, bool(c.kind & 0x40), p, 1, f"{bit_picture(c.kind, 0x40, 8)} = Bit: " + (
        "Do report" if c.kind & 0x40 else "Do not report")))
    fl = item.add(Item(f.sctp_chunk_flags, c.flags, p + 1, 1, f"Chunk flags: 0x{c.flags:02x}"))
    if c.kind in (6, 14):
        t_bit = f.sctp_abort_t_bit if c.kind == 6 else f.sctp_shutdown_complete_t_bit
        fl.add(Item(t_bit, bool(c.flags & 1), p + 1, 1, f"{bit_picture(c.flags, 1, 8)} = "
                    f"T-Bit: {'Tag reflected' if c.flags & 1 else 'Tag not reflected'}"))
    if c.kind == 3:
        fl.add(Item(f.sctp_sack_nounce_sum, c.flags & 1, p + 1, 1, f"{bit_picture(c.flags, 1, 8)} = Nounce sum: "
                                                                   f"{c.flags & 1}"))
    if c.kind == DATA:
        for field, mask, label, on, off in _DATA_BITS:
            fl.add(Item(field, bool(c.flags & mask), p + 1, 1,
                        f"{bit_picture(c.flags, mask, 8)} = {label}: {on if c.flags & mask else off}"))
    item.add(Item(f.sctp_chunk_length, c.length, p + 2, 2, f"Chunk length: {c.length}"))
    if c.kind == DATA:
        rel = _rel(c.tsn, bases[0])
        item.add(Item(f.sctp_data_tsn, rel, p + 4, 4, f"Transmission sequence number (relative): {rel}"))
        item.add(Item(f.sctp_data_tsn_raw, c.tsn, p + 4, 4, f"Transmission sequence number (absolute): {c.tsn}"))
        item.add(Item(f.sctp_data_sid, c.sid, p + 8, 2, f"Stream identifier: 0x{c.sid:04x}"))
        item.add(Item(f.sctp_data_ssn, c.ssn, p + 10, 2, f"Stream sequence number: {c.ssn}"))
        item.add(Item(f.sctp_data_ppid, c.ppid, p + 12, 4, f"Payload protocol identifier: "
                                                             f"{PPIDS.get(c.ppid, 'Unknown')} ({c.ppid})"))
        if isinstance(fragments, int):        # -2: a piece of a message completed in a later frame
            item.add(Item(f.sctp_reassembled_in, fragments, p + 16, 0, f"Reassembled Message in frame: {fragments}"))
        elif fragments:
            _fragments(item, fragments)
    else:
        for field, at, size, label in _FIXED.get(c.kind, ()):
            if c.length >= at + size:
                value = int.from_bytes(data[p + at:p + at + size], "big")
                if field is f.sctp_sack_cumulative_tsn_ack_raw and bases[1] is not None:
                    rel = _rel(value, bases[1])
                    item.add(Item(f.sctp_sack_cumulative_tsn_ack, rel, p + at, size,
                                  f"Cumulative TSN ACK (relative): {rel}"))
                shown = f"0x{value:08x}" if field.base == "HEX" else str(value)
                item.add(Item(field, value, p + at, size, f"{label}: {shown}"))
                if at == 4 and c.kind in (1, 2):       # tshark 4.0 adds the tag again, hidden, for filtering
                    item.add(HiddenItem(f.sctp_initiate_tag, value, p + at, size))
        rest = max((at + size for _, at, size, _ in _FIXED.get(c.kind, ())), default=4)
        if c.kind in (1, 2, 4, 5):     # INIT, INIT_ACK; HEARTBEAT(_ACK): the heartbeat info parameter
            _parameters(item, data, p + rest, p + c.length)
        elif c.length > rest:
            value = data[p + rest:p + c.length]
            field, label = (f.sctp_cookie, "Cookie") if c.kind == 10 else (f.sctp_chunk_value, "Chunk value")
            item.add(Item(field, value, p + rest, len(value), f"{label}: {value.hex()}"))
    pad = -c.length % 4
    if pad and len(data) >= p + c.length + pad:
        raw = data[p + c.length:p + c.length + pad]
        item.add(Item(f.sctp_chunk_padding, raw, p + c.length, pad, f"Chunk padding: {raw.hex()}"))
    return item


def _fragments(item: Item, pieces: list) -> None:
    """tshark's summary of a message reassembled from DATA chunks, in the chunk that completed it. tshark 4.0
    numbers the pieces' payload bytes from the message length on (not from 0) on its first pass, from 0 on its second
    (-2): kept as it prints them, over the reassembled message (PDML and `-x` show its bytes, or none past its end)."""
    total = sum(n for _, n in pieces)
    # measured: the summary spans this chunk's user data; each piece claims bytes [at, at + n) of the frame
    # (PDML shows them past its end: "field length invalid!")
    top = item.add(Item(f.sctp_fragments, None, item.offset + 16, pieces[-1][1],
                        f"Reassembled SCTP Fragments ({total} bytes, {len(pieces)} fragments): "))
    at = 0 if getattr(pieces, "second_pass", False) else total
    source = getattr(pieces, "source", 0)
    for frame, n in pieces:
        top.add(Item(f.sctp_fragment, frame, at, n, f"Frame: {frame}, payload: {at}-{at + n - 1} ({n} bytes)",
                     False, source))
        at += n


PARAMETER_NAMES = {7: "State cookie", 1: "Heartbeat info"}
PPIDS = {0: "not specified"}


def _parameters(chunk: Item, data: bytes, p: int, end: int) -> None:
    """The variable-length parameters of an INIT / INIT_ACK chunk (type, length, value, padding to 4 bytes)."""
    while p + 4 <= end:
        kind, length = struct.unpack_from("!HH", data, p)
        if length < 4 or p + length > end:
            value = data[p:end]
            chunk.add(Item(f.sctp_chunk_value, value, p, len(value), f"Chunk value: {value.hex()}"))
            return
        name = PARAMETER_NAMES.get(kind, "Unknown")
        extra = f" (Cookie length: {length - 4} bytes)" if kind == 7 else \
            f" (Information: {length - 4} bytes)" if kind == 1 else ""
        item = chunk.add(TextItem(None, None, p, length + (-length % 4), f"{name} parameter{extra}"))
        t = item.add(Item(f.sctp_parameter_type, kind, p, 2, f"Parameter type: {name} (0x{kind:04x})"))
        t.add(Item(f.sctp_parameter_bit_1, bool(kind & 0x8000), p, 2, f"{bit_picture(kind, 0x8000, 16)} = Bit: " + (
            "Skip parameter and continue processing of the chunk" if kind & 0x8000 else "Stop processing of chunk")))
        t.add(Item(f.sctp_parameter_bit_2, bool(kind & 0x4000), p, 2, f"{bit_picture(kind, 0x4000, 16)} = Bit: " + (
            "Do report" if kind & 0x4000 else "Do not report")))
        item.add(Item(f.sctp_parameter_length, length, p + 2, 2, f"Parameter length: {length}"))
        value = data[p + 4:p + length]
        if value:
            field, label = ((f.sctp_parameter_state_cookie, "State cookie") if kind == 7
                            else (f.sctp_parameter_heartbeat_information, "Heartbeat information") if kind == 1
                            else (f.sctp_parameter_value, "Parameter value"))
            item.add(Item(field, value, p + 4, len(value), f"{label}: {value.hex()}"))
        pad = -length % 4
        if pad and p + length + pad <= end:
            raw = data[p + length:p + length + pad]
            item.add(Item(f.sctp_parameter_padding, raw, p + length, pad, f"Parameter padding: {raw.hex()}"))
        p += length + pad


def _summary(data: bytes, c: Chunk, bases=(None, None)) -> str:
    if c.kind == DATA:
        order = "unordered" if c.flags & 0x04 else "ordered"
        part = {3: "complete segment", 2: "first segment", 1: "last segment", 0: "middle segment"}[c.flags & 3]
        return (f" ({order}, {part}, TSN: {_rel(c.tsn, bases[0])}, SID: {c.sid}, SSN: {c.ssn}, PPID: {c.ppid}, "
                f"payload length: {c.data_length} bytes)")
    if c.kind in (1, 2) and c.length >= 16:
        out_streams, in_streams = struct.unpack_from("!HH", data, c.offset + 12)
        return f" (Outbound streams: {out_streams}, inbound streams: {in_streams})"
    if c.kind == 3 and c.length >= 16:
        cum, rwnd, gaps, dups = struct.unpack_from("!IIHH", data, c.offset + 4)
        return f" (Cumulative TSN: {cum}, a_rwnd: {rwnd}, gaps: {gaps}, duplicate TSNs: {dups})"
    if c.kind == 10:
        return f" (Cookie length: {c.length - 4} bytes)"
    if c.kind in (4, 5):
        return f" (Information: {c.length - 4} bytes)"
    if c.kind == 7 and c.length >= 8:
        return f" (Cumulative TSN ack: {struct.unpack_from('!I', data, c.offset + 4)[0]})"
    return ""


_DATA_BITS = [(f.sctp_data_i_bit, 0x08, "I-Bit", "Immediately send SACK", "Possibly delay SACK"),
              (f.sctp_data_u_bit, 0x04, "U-Bit", "Unordered delivery", "Ordered delivery"),
              (f.sctp_data_b_bit, 0x02, "B-Bit", "First segment", "Subsequent segment"),
              (f.sctp_data_e_bit, 0x01, "E-Bit", "Last segment", "Not the last segment")]

# chunk type -> (field, offset in the chunk, size, -V label) of its fixed fields
_INIT = [(4, 4, "Initiate tag"), (8, 4, "Advertised receiver window credit (a_rwnd)"),
         (12, 2, "Number of outbound streams"), (14, 2, "Number of inbound streams"), (16, 4, "Initial TSN")]
_FIXED = {
    1: [(fld, *spec) for fld, spec in zip(f.sctp_init_fields, _INIT)],
    2: [(fld, *spec) for fld, spec in zip(f.sctp_initack_fields, _INIT)],
    3: [(f.sctp_sack_cumulative_tsn_ack_raw, 4, 4, "Cumulative TSN ACK (absolute)"),
        (f.sctp_sack_a_rwnd, 8, 4, "Advertised receiver window credit (a_rwnd)"),
        (f.sctp_sack_gap_blocks, 12, 2, "Number of gap acknowledgement blocks"),
        (f.sctp_sack_dup_tsns, 14, 2, "Number of duplicated TSNs")],
    7: [(f.sctp_shutdown_cumulative_tsn_ack, 4, 4, "Cumulative TSN Ack")],
}
