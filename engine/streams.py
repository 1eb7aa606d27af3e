"""Stream protocols over TCP and SCTP: the glue between the transport and a protocol that frames its own PDUs.

The dispatcher hands every TCP segment and SCTP packet here (`Streams.dissect(stack, d)`). Per connection the
protocol is chosen at its first payload: decode-as ("tcp.port"/"sctp.port", port), then registrations
`ports["tcp.port"]` / `ports["sctp.port"]` (lower port first, as tshark tries them), then the heuristic list
"tcp"/"sctp" (offered every payload until one claims the connection). Which bytes reach the protocol in which
frame is decided by reassembly/tcp.py (exactly where tshark's TCP hands them to a dissect_tcp_pdus dissector,
docs/tshark-formats.md section 6) and reassembly/sctp.py (each DATA message continues the byte stream of its
stream id, section 7); this module cuts them into PDUs with the protocol's framing function. The plugin does the
same in lua/rt_stream.lua (rt.stream_dissector; `emit_stream_lua` below writes the call).

The interface a stream protocol implements (besides the usual name, description, fields, experts,
preferences(), dissect(ctx, prefs)):

    pdu_length(data: bytes, pos: int, conv: dict, direction: str, prefs: dict) -> int
        The length of the PDU starting at data[pos] (data[pos:] is all there is so far):
        > 0  the whole PDU's length (it may run past the end of data: more segments are awaited);
        0    cannot tell yet, need more bytes (the next segment is appended and it is asked again);
        -1   no PDU can start here: this direction stops being decoded (expert error on this PDU, the rest
             of the direction shown as undecoded data `<proto>.data`). So does a length over MAX_PDU (1 MiB)
             (tshark's own dissectors: over their max_pdu, framed as tcp_dissect_pdus waits, bytes not kept).
        May be asked several times about the same position; an exception counts as -1.
    resync(data: bytes, pos: int, conv: dict, direction: str) -> int | None      (optional)
        After a gap (a segment not captured) or at a mid-stream start: the first position >= pos where a PDU
        plausibly starts, or None (nothing in data: skip it all and try again on the next bytes). Default
        (default_resync): the first position where a whole PDU starts and the PDUs chained from it end exactly
        at the end of data, or with one running past it.
    fields[f"{name}.data"]  a bytes field for undecoded bytes (Protocol has it as `data_info`).

Each PDU is dissected with the protocol's dissect(ctx, prefs) as a layer of the frame that completes it:
ctx.data/ctx.pos/ctx.end = the frame and the PDU's bytes in it when the PDU lies in one segment (or SCTP
chunk), else a new data source "Reassembled TCP" / "Reassembled SCTP" (ctx.source is its index). ctx.conv is
the protocol's conversation (one per connection, both directions), ctx.direction "a:p>b:q" (this frame's).
Several PDUs in one frame give several layers, in stream order. A PDU reassembled from TCP segments also gives
the frame tshark's "tcp.segments" layer (d.reassembled, built by capture/layers.py).

After a gap the protocol gets a "previous segment not captured" note (`<proto>.sequence`) on the first layer
that follows it; bytes skipped to resynchronise are shown as `<proto>.data` in a layer of their own. tshark's own
dissectors (WebSocket: `lua = False`) are framed from the new segment's start, without a note, as tcp_dissect_pdus
does.
"""
from __future__ import annotations

from collections import OrderedDict

from ..reassembly.sctp import SctpDirection
from ..reassembly.tcp import ACK, FIN, MAX_PDU, RST, SYN, Handover, TcpDirection
from .lua_literals import lua_str
from .tree import DataSource, ExpertInfo, Item, Layer

RESYNC_LIMIT = 65536       # bytes scanned for a resynchronisation point per handover
CONNECTION_LIMIT = 16384   # connections tracked at once: the oldest is forgotten beyond (memory stays bounded)
RECORD_LIMIT = 1 << 22     # -2: segments whose completing frame the first pass remembers (later ones show none)


class Direction:
    """What one direction of one connection has told us: its byte stream, and whether framing still holds."""

    __slots__ = ("resyncing", "started", "stopped", "stream")

    def __init__(self, stream):
        self.stream = stream       # reassembly.tcp.TcpDirection or reassembly.sctp.Stream: desegment()
        self.stopped = False       # the protocol could not frame a PDU: the rest is shown undecoded
        self.resyncing = False     # after a gap: looking for a plausible PDU start
        self.started = False       # bytes were handed over already


class Connection:
    __slots__ = ("directions", "handshake", "proto", "sctp", "claimed")

    def __init__(self):
        self.proto = None          # the stream protocol, once chosen
        self.claimed = False       # chosen by a heuristic (Wireshark: the conversation's dissector from then on)
        self.directions: dict = {}  # TCP: sender -> Direction; SCTP: (sender, stream id) -> Direction
        self.sctp: dict[str, SctpDirection] = {}
        self.handshake = 0         # 1: a SYN seen, 2: a SYN-ACK seen (tshark's tcp.completeness bits)

    @property
    def synced(self) -> bool:
        """Both starts captured: a direction's first bytes are a PDU start. Else its first bytes are treated
        as coming after a gap (the plugin reads the same from tcp.completeness, so both decide alike)."""
        return self.handshake == 3


class Streams:
    """All stream state of one pass over a capture (the dispatcher owns one)."""

    def __init__(self, dispatcher):
        self.prefs = dispatcher.settings.prefs
        self.connections: OrderedDict[tuple, Connection] = OrderedDict()   # (oldest out: popitem)
        self.reassembled_in = dispatcher.reassembled_in          # -2's first pass: segment frame -> completing frame
        self.reassembled_learnt = dispatcher.reassembled_learnt  # -2's second pass: what the first recorded

    def dissect(self, stack, d) -> None:
        """Give one TCP segment (or SCTP packet) to its stream. Never raises for any content."""
        if d.transport == "tcp" and d.seq is not None:
            self.tcp(stack, d)
        elif d.transport == "sctp" and d.chunks:
            self.sctp(stack, d)

    def connection(self, stack) -> Connection:
        key = stack.pair
        conn = self.connections.get(key)
        if conn is None:
            if len(self.connections) >= CONNECTION_LIMIT:
                self.connections.popitem(last=False)
            conn = self.connections[key] = Connection()
        return conn

    def choose(self, stack, conn: Connection, table: str, d, payload: bytes):
        """The connection's protocol: chosen at its first payload (decode-as, ports lower first, heuristics;
        until one claims it, every payload is offered to the heuristics), then kept."""
        if conn.proto is None and payload and not _resent(d):
            # (a retransmitted or out-of-order segment goes to no subdissector: no heuristic tried, no wslua item)
            ports = (d.sport, d.dport) if d.sport <= d.dport else (d.dport, d.sport)
            tried = len(stack.tries)
            conn.proto = stack.lookup(table, ports, payload, d.payload_offset)
            conn.claimed = conn.proto is not None and len(stack.tries) > tried
        return conn.proto

    def claimed(self, src, sport: int, dst, dport: int):
        """The protocol a heuristic claimed the TCP connection between these ends for, or None."""
        a, b = f"{src}:{sport}", f"{dst}:{dport}"
        conn = self.connections.get((a, b) if a < b else (b, a))
        return conn.proto if conn is not None and conn.claimed else None

    # --- TCP ------------------------------------------------------------------------------------------------
    def tcp(self, stack, d) -> None:
        conn = self.connection(stack)
        sender = stack.endpoints[0]
        state = conn.directions.get(sender)
        if state is None:
            state = conn.directions[sender] = Direction(TcpDirection(MAX_PDU))
        flags = d.flags or 0
        if getattr(d, "tcp", None) is not None:
            conn.handshake = d.tcp.completeness & 3      # tshark's tcp.completeness, as the plugin reads it
        elif flags & SYN:
            conn.handshake |= 2 if flags & ACK else 1
        proto = self.choose(stack, conn, "tcp.port", d, d.payload)
        made = 0                         # layers this segment's one (Lua) dissector call made so far
        own = getattr(proto, "lua", True) is False
        t = getattr(d, "tcp", None)
        # tshark's own reassembly stores an out-of-order segment, or a fast retransmission, in the pending PDU it
        # falls in (desegment_tcp); the Lua dissectors reassemble by themselves and never see either
        fill = own and t is not None and ("out_of_order" in t.flags or "fast_retransmission" in t.flags)
        resent = _resent(d, retransmission=True)
        gap = None if t is None else "lost_segment" in t.flags
        fast = fill and "fast_retransmission" in t.flags
        state.stream.tsharks_reassembly = own
        for h in state.stream.segment(d.seq, d.payload, stack.frame.number, flags, resent, fill, gap, fast):
            if proto is not None:
                if not state.started:
                    state.started = True
                    h.lost = h.lost or not conn.synced
                cutter = Cutter(self, stack, proto, state, h, d.payload_offset, "Reassembled TCP")
                # (tshark calls its own dissector once per round of desegment_tcp: the PDU reassembled here, then
                # the rest of the segment, each listing its protocols in frame.protocols)
                cutter.layers = 0 if own else made
                if own and made and h.seg_offset is not None and d.reassembled:
                    stack.round_at = len(stack.layers)
                cutter.run()
                made = made + cutter.layers if own else cutter.layers
                if h.seg_offset is None and cutter.source is not None and own:
                    # a PDU shown from several segments: tshark's "[N Reassembled TCP Segments ...]" (only for
                    # tshark's own dissectors: the generated Lua reassembles by itself, tshark's TCP shows nothing)
                    d.reassembled = [*(d.reassembled or ()), (h.pieces, h.data, cutter.source, h.conflicts)]
                    if self.reassembled_in is not None:
                        self._record_pieces(h.pieces, stack.frame.number)
                elif (own and h.seg_offset is not None and cutter.kept_from is not None
                      and (cutter.kept_from > 0 or d.reassembled or state.stream.head_kept)):
                    # PDUs of this segment (after one reassembled here, or the bytes desegment_tcp's first round
                    # kept, if any), then the start of one it does not hold: tshark's TCP shows those bytes as "TCP
                    # segment data" (desegment_tcp: from the desegment offset to the end)
                    d.segment_data = len(h.data) - cutter.kept_from
                    d.segment_data_at = h.seg_offset + cutter.kept_from
        if own and state.stream.head_kept:
            d.segment_head = state.stream.head_kept     # "TCP segment data" for them, then a second round
        if self.reassembled_learnt and (not d.reassembled or d.segment_data):
            # tshark -2: a segment whose PDU a later frame completes names it; one that completes a PDU itself only
            # when its tail starts another (desegment_tcp names the frame that completes the tail's)
            d.reassembled_in = self.reassembled_learnt.get(stack.frame.number)
        if flags & RST or (flags & FIN and len(conn.directions) == 2
                           and all(s.stream.fin for s in conn.directions.values())):
            stack.ended = True           # the connection is over: engine.lifetime frees it shortly after
        if state.stream.repeats_start and own:
            # (tshark's own reassembly: the first segment of one of its multi-segment PDUs, again)
            d.repeats_pdu_start = True
            d.dropped = True
        elif fill and state.stream.filled:
            d.segment_data = len(d.payload)     # stored in the pending PDU it falls in: "TCP segment data"
        elif fill and state.stream.late:
            d.dropped = True                    # old bytes outside any pending PDU: tshark shows nothing of them
            if state.stream.overlaps_done:      # ... but bytes of a PDU reassembled before: reassemble.c throws
                d.reassembly_error("New fragment overlaps old data (retransmission?)")
        elif proto is not None and d.payload and not made and (not _resent(d) or d.cut and not own
                                                                and "spurious_retransmission" in t.flags):
            # (a segment the snap length cut is not desegmented: dissect_tcp_payload hands a spurious
            # retransmission to its subdissector, the Lua one, which shows nothing of it)
            if not own:
                stack.called.append(proto.name)     # the Lua dissector ran (and kept the bytes): in frame.protocols
                stack.tries.append((len(stack.layers), d.payload_offset, [proto.name], None))   # its call (-T pdml)
            elif not d.segment_data:
                d.segment_data = len(d.payload)     # tshark's TCP kept the segment for a PDU: "TCP segment data"

    def _record_pieces(self, pieces, frame: int) -> None:
        record = self.reassembled_in
        if len(record) < RECORD_LIMIT:
            record.update((n, frame) for n, _, _ in pieces if n != frame)

    # --- SCTP -----------------------------------------------------------------------------------------------
    def sctp(self, stack, d) -> None:
        """Each DATA chunk's user data continues the byte stream of its (association, direction, stream id)."""
        conn = self.connection(stack)
        sender = stack.endpoints[0]
        assoc = conn.sctp.get(sender)
        if assoc is None:
            assoc = conn.sctp[sender] = SctpDirection()
        data, frame = stack.d.transport_data(), stack.frame.number
        d.chunk_marks = []
        after_data = False
        for i, c in enumerate(d.chunks):
            if after_data or c.kind == 0 and not d.chunk_marks:
                # the first DATA chunk's layers start here; a chunk after a DATA chunk opens a new sctp item after
                # that chunk's layers (see Packet.layers, capture.sctp.sctp_layer)
                d.chunk_marks.append(len(stack.layers))
            after_data = c.kind == 0
            if c.kind != 0:
                continue
            payload = data[c.data_offset:c.offset + c.length]
            message = assoc.data_chunk(c.tsn, c.sid, c.ssn, c.flags, payload, frame, c.data_offset)
            if message is None or self.choose(stack, conn, "sctp.port", d, message.data) is None:
                continue
            state = conn.directions.get((sender, message.sid))
            if state is None:
                state = conn.directions[(sender, message.sid)] = Direction(assoc.stream(message.sid))
            h = state.stream.message(message, frame)
            if h is not None and h.data:
                pieces = (d.sctp_fragments or {}).get(i)
                # a message SCTP reassembled from its DATA chunks, handed over alone: tshark's own data source
                alone = pieces is not None and not isinstance(pieces, int) and len(h.data) == len(message.data)
                cutter = Cutter(self, stack, conn.proto, state, h, message.chunk_offset or 0,
                                "Reassembled SCTP Message" if alone else "Reassembled SCTP")
                cutter.run()
                if alone and cutter.source:
                    pieces.source = cutter.source      # (capture.sctp.Pieces: their items span the message)


def _resent(d, retransmission: bool = False) -> bool:
    """tshark's TCP hands an out-of-order or retransmitted segment to no subdissector, and a keep-alive's byte
    to its data dissector only (decode_tcp_ports). retransmission: only a segment TCP's analysis calls a
    retransmission, spurious or not (the stream's offsets cannot tell all of them, e.g. the data before a FIN
    that arrived first)."""
    t = getattr(d, "tcp", None)
    if retransmission:
        return t is not None and "retransmission" in t.flags
    return t is not None and ("out_of_order" in t.flags or "retransmission" in t.flags or "keep_alive" in t.flags)


class Cutter:
    """One handover cut into PDUs (the twin of stream_cut in lua/rt_stream.lua)."""

    def __init__(self, streams: Streams, stack, proto, state: Direction, h: Handover, start: int, source: str):
        """start: where h's segment (or chunk data) starts in the frame; source: the name of the data source a
        reassembled handover gets."""
        self.stack, self.proto, self.state, self.h = stack, proto, state, h
        self.prefs = streams.prefs
        self.conv = stack.conversation(proto)
        self.direction = stack.direction
        self.note: str | None = None     # "previous segment not captured", for the next layer made
        self.layers = 0                  # layers made for this segment (or chunk) so far
        self.kept_from: int | None = None    # where the bytes kept for a later PDU start in the handover
        if h.seg_offset is None:         # bytes from several segments: their own data source, once a layer uses it
            self.data, self.base, self.source, self.source_name = h.data, 0, None, source
        else:                            # (a segment of an IP datagram reassembled from fragments: that source)
            self.data, self.base = stack.d.transport_data(), start + h.seg_offset
            self.source = 0 if stack.d.defragmented is None else 1

    def where(self) -> int:
        """The data source index of this handover's bytes (a reassembled buffer is added on first use)."""
        if self.source is None:
            self.stack.sources.append(DataSource(self.source_name, self.h.data))
            self.source = len(self.stack.sources) - 1
        return self.source

    def length(self, pos: int) -> int:
        try:
            return int(self.proto.pdu_length(self.h.data, pos, self.conv, self.direction, self.prefs))
        except Exception:  # noqa: BLE001 - a framing bug counts as "cannot frame", never a crash
            return -1

    def run(self) -> None:
        buf, state = self.h.data, self.state
        limit = getattr(self.proto, "max_pdu", MAX_PDU)
        refused = getattr(state.stream, "refused", 0)
        if refused:                  # an oversized PDU tshark reassembles (one of its own dissectors') all came
            state.stream.refused, state.stopped = 0, True
            self.undecoded(0, None, f"Cannot reassemble a PDU of {refused} bytes (over the limit of {limit}): the"
                                    " rest of this direction is not decoded", "malformed")
            return
        if state.stopped:
            self.undecoded(0, None)
            return
        pos = 0
        if (self.h.lost or state.resyncing) and self.tsharks_own():
            state.resyncing = False      # tshark's own dissector frames the new segment from its start, no note
        elif self.h.lost or state.resyncing:
            if self.h.lost:
                self.note = "Previous segment(s) not captured: resynchronising"
            found = self.resync()
            if found is None:
                state.resyncing = True
                self.undecoded(0, None, "Previous segment(s) not captured: no PDU start found in "
                                        f"{len(buf)} bytes, skipped")
                return
            state.resyncing = False
            if found > 0:
                self.undecoded(0, found, f"Previous segment(s) not captured: {found} bytes skipped to "
                                         "resynchronise")
            pos = found
        if limit != MAX_PDU and hasattr(state.stream, "max_pdu"):     # (TCP: the pending PDU it may hold)
            state.stream.max_pdu = limit
        while pos < len(buf):
            n = self.length(pos)
            if n > limit and self.wraps(pos, n):
                self.kept_from = pos         # (TCP segment data, kept for a PDU that never completes)
                return
            if n > limit and self.tsharks_own() and isinstance(state.stream, TcpDirection):
                # tcp_dissect_pdus waits for any length: its segments are framed as such, their bytes not kept
                state.stream.desegment(self.h, pos, n)
                self.kept_from = pos
                return
            if n < 0 or n > limit or (n == 0 and len(buf) - pos > limit):
                state.stopped = True
                why = f"a PDU of {n} bytes exceeds the limit of {limit}" if n > 0 else "no PDU can start here"
                self.undecoded(pos, None, f"Cannot frame the stream ({why}): the rest of this direction is not"
                                          " decoded", "malformed")
                return
            if n == 0 or pos + n > len(buf):
                state.stream.desegment(self.h, pos, n)
                self.kept_from = pos
                return
            self.pdu(pos, n)
            pos += n

    def tsharks_own(self) -> bool:
        """The protocol is one of tshark's own dissectors (websocket), framed by tcp_dissect_pdus, not the plugin's
        stream framing (no resynchronisation, no note of its own)."""
        return getattr(self.proto, "lua", True) is False

    def wraps(self, pos: int, n: int) -> bool:
        """tshark's own dissectors (websocket) frame with tcp_dissect_pdus: a PDU of n bytes becomes a
        multi-segment PDU ending at sequence number start + n, and a later segment joins it only when it starts
        before that end in 32-bit serial arithmetic (LT_SEQ). An end 2^31 or more ahead counts as behind: the
        rest of this segment is left as TCP segment data and the next segment starts a new PDU, so here (the
        generated Lua frames by itself, and stops)."""
        if not self.tsharks_own():
            return False
        ahead = (self.h.offset + pos + n - (self.h.offset + len(self.h.data))) % (1 << 32)
        return ahead == 0 or ahead >= 1 << 31

    def resync(self) -> int | None:
        """The first plausible PDU start in the handover (see the module docstring)."""
        custom = getattr(self.proto, "resync", None)
        if custom is not None:
            try:
                found = custom(self.h.data, 0, self.conv, self.direction)
            except Exception:  # noqa: BLE001
                return None
            return found if found is None or 0 <= found <= len(self.h.data) else None
        return default_resync(self.length, len(self.h.data))

    def pdu(self, pos: int, n: int) -> None:
        start = self.base + pos
        layer = self.stack.dissect(self.proto, self.data, start, start + n, source=self.where(),
                                   direction=self.direction, conv=self.conv)
        self.listed(layer)
        self.flush_note(layer)

    def undecoded(self, pos: int, stop: int | None, message: str | None = None, kind: str = "sequence") -> None:
        """A layer showing h.data[pos:stop] as undecoded data, with an expert (message) if given."""
        stop = len(self.h.data) if stop is None else stop
        start, end = self.base + pos, self.base + stop
        shown = Undecoded(self.proto, message, kind)
        layer = self.stack.dissect(shown, self.data, start, end, source=self.where(), direction=self.direction,
                                   conv=self.conv)
        self.listed(layer)
        if message is None:
            self.flush_note(layer)
        else:
            self.note = None

    def listed(self, layer: Layer) -> None:
        """frame.protocols names the stream's protocol once per segment (or SCTP chunk), as tshark does: the
        generated Lua decodes all of a segment's PDUs in one call, and tshark lists websocket once too."""
        layer.listed = not self.layers
        self.layers += 1

    def flush_note(self, layer: Layer) -> None:
        if self.note is not None:
            add_expert(self.proto, layer.item, "sequence", self.note)
            self.note = None


def default_resync(length, size: int) -> int | None:
    """The first position where a whole PDU (by pdu_length) starts and the PDUs chained from it either end
    exactly at `size` or end with one that runs past it. Each position is asked once (walked from the end),
    so the cost stays linear in the bytes scanned."""
    size = min(size, RESYNC_LIMIT)
    good: list[bool] = [False] * (size + 1)     # a chain of whole PDUs from here ends cleanly
    tail: list[bool] = [False] * (size + 1)     # a PDU starts here that runs past the end
    for pos in range(size - 1, -1, -1):
        n = length(pos)
        if n == 0 or (n > 0 and pos + n > size):
            tail[pos] = n <= MAX_PDU
        elif n > 0:
            after = pos + n
            good[pos] = after == size or good[after] or tail[after]
    return next((pos for pos in range(size) if good[pos]), None)


def add_expert(proto, item: Item, kind: str, message: str) -> None:
    group, severity = proto.experts[kind]
    item.expert(ExpertInfo(f"{proto.name}.{kind}", group, severity, message))


class Undecoded:
    """Stands in for a stream protocol to show bytes it cannot frame: its layer holds `<proto>.data` and an
    expert (Stack.dissect calls `dissect`; every other attribute is the protocol's own)."""

    def __init__(self, proto, message: str | None, kind: str):
        self._proto, self._message, self._kind = proto, message, kind

    def __getattr__(self, name):
        return getattr(self._proto, name)

    def dissect(self, ctx, prefs):
        proto = self._proto
        field = proto.fields.get(f"{proto.name}.data")
        size = ctx.end - ctx.pos
        item = Item(field, ctx.data[ctx.pos:ctx.end], ctx.pos, size, None if field else "Undecoded data",
                    False, ctx.source)
        ctx.tree.add(item)
        if self._message:
            add_expert(proto, ctx.tree, self._kind, self._message)
        return f"[Undecoded: {size} bytes]"


def emit_stream_lua(gen, p, var: str, len_fn: str, pdu_fn: str, resync_fn: str | None = None,
                    heuristic_fn: str | None = None) -> None:
    """The plugin side of a stream protocol, for its `emit_lua(gen, var)`: after emitting the Lua functions
    `len_fn(tvb, pinfo, offset, conv) -> n` (the twin of pdu_length: the bytes from offset to the end of tvb are
    all there is), `pdu_fn(tvb, pinfo, tree, conv, index) -> info, T` (dissects one PDU = the whole tvb, returns
    its Info text and its layer item), optionally `resync_fn(tvb, pinfo, offset, conv) -> absolute pos | nil` and
    `heuristic_fn(tvb, pinfo) -> bool` (the twin of heuristics["tcp"] / ["sctp"]), this writes the dissector
    (rt.stream_dissector in lua/rt_stream.lua) and its registration on the protocol's "tcp.port" and
    "sctp.port" ports and heuristic lists."""
    w = gen.w
    data = f"F[{lua_str(p.name + '.data')}]" if f"{p.name}.data" in p.fields else "nil"
    w(f"{var}.dissector = rt.stream_dissector({var}, {lua_str(p.name)}, {len_fn}, {pdu_fn}, "
      f"{{ data = {data}, E = E, resync = {resync_fn or 'nil'} }})")
    ports = getattr(p, "ports", {})
    tcp = ", ".join(str(port) for port in ports.get("tcp.port", ()))
    sctp = ", ".join(str(port) for port in ports.get("sctp.port", ()))
    w(f"rt.stream_register({var}, {{ {tcp} }}, {{ {sctp} }})")
    if heuristic_fn:
        for table in ("tcp", "sctp"):
            if table in getattr(p, "heuristics", {}):
                w(f"rt.stream_heuristic({var}, {lua_str(table)}, {heuristic_fn}, {var}.dissector)")
