"""-z io,phs without building a single layer: a fused per-conversation machine for the conversations it models,
the full decode for every other frame, and one protocol tree merged from both in first-seen order.

io,phs needs per frame only its protocol path (analysis.stats_phs.protocol_path) and its length. For a clean
conversation that path follows from the headers and the game's own framing function alone:
  - UDP to a port a plain table protocol registers (blank): eth ip udp <proto> (eth ip udp when empty);
  - TCP to a port a generated-plugin stream protocol registers (Rutentoy, Iceball over TCP), both starts seen,
    every payload at exactly the next sequence number and not yet acknowledged: eth ip tcp, then the protocol's
    name once per PDU that ends in the segment, cut with the protocol's own pdu_length (the function
    engine/streams.py cuts with), so no second framing exists.
Anything the machine does not model sends the whole conversation (each of its frames, from its first) to the
full decode in a second pass over the file: another port or a heuristic, IP options or fragments, a cut frame, a
SYN on a live connection, a sequence number out of place (retransmission, gap, overlap, keep-alive), data after
FIN/RST, framing that fails, a stateful message (one that sets what the framing reads: Rutentoy's texture
exchange) that fails to decode, a pause as long as the conversation timeout. Stateful messages are dissected
here, as the full decode does with nothing asked of the layer; every other PDU is only measured. ENet, WebSocket, SCTP, IPv6, non-IP: full
decode. Conversations are independent in the decoder (the -j planner rests on the same), except through the
global bounds, which the fused path respects by falling back to the full decode of every frame: more
conversations than half the live cap, or pending reassembly that could come near its budget (an upper bound
of the machine's conversations plus what the second pass held).
"""
from __future__ import annotations

import struct

from ..capture.files import open_capture
from ..engine.channel_protocol import ChannelProtocol
from ..engine.context import Ctx
from ..engine.protocol import Protocol
from ..engine.stream_protocol import StreamProtocol
from ..engine.tree import Item
from ..reassembly.budget import PENDING
from ..reassembly.tcp import MAX_PDU
from .stats_phs import ProtocolHierarchy, protocol_path

ETH_IP = b"\x08\x00"
FIN, SYN, RST, ACK, URG = 0x01, 0x02, 0x04, 0x10, 0x20
SEQ_MOD = 1 << 32
BASE = ("eth", "ip")
GIVE_UP = 8192           # frames after which a machine that models under a quarter of them stops
_U16 = struct.Struct("!H")
TIMESTAMPS = b"\x01\x01\x08"      # NOP NOP timestamps: the options of most segments


class Bail(Exception):
    """The conversation does something the machine does not model: the full decode takes it."""


def applies(taps) -> bool:
    """Every statistic is an unfiltered io,phs."""
    return bool(taps) and all(type(t) is ProtocolHierarchy and not t.filter for t in taps)


# --- the machine -----------------------------------------------------------------------------------------------------

class Conversation:
    __slots__ = ("counts", "last", "proto", "dirs", "handshake", "ended", "held", "state")

    def __init__(self, now: float):
        self.counts: dict = {}       # path -> [frames, bytes, first frame]
        self.last = now              # capture time of its last frame
        self.proto = None            # the stream protocol (TCP), once chosen
        self.dirs: dict = {}         # TCP: sender (addr, port) -> Direction
        self.handshake = 0           # 1: SYN seen, 2: SYN-ACK seen
        self.ended = False
        self.held = 0                # bytes of a TCP PDU being assembled (its pending stream reassembly)
        self.state: dict = {}        # the stream protocol's conversation dict (both directions: its numbering)


class Direction:
    __slots__ = ("nxt", "buf", "fin", "acked", "conv", "name")

    def __init__(self, nxt: int, name: str):
        self.nxt = nxt               # next expected raw sequence number
        self.buf = b""               # bytes of a PDU not yet complete
        self.fin = False
        self.acked = None            # the highest ack the peer sent (raw)
        self.conv: dict = {}         # the conversation's state dict (Conversation.state)
        self.name = name             # "a:p>b:q" (StreamProtocol reads the ports)


class Fused:
    """Pass 1 over a capture: per conversation, the counts of the frames the machine models, or the key of a
    conversation the full decode must take."""

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher
        self.prefs = dispatcher.settings.prefs
        self.udp = {p: proto for p, proto in dispatcher.tables.get("udp.port", {}).items()
                    if type(proto) is Protocol}
        self.tcp = {p: proto for p, proto in dispatcher.tables.get("tcp.port", {}).items()
                    if isinstance(proto, (StreamProtocol, ChannelProtocol)) and getattr(proto, "lua", True)}
        self.timeout = dispatcher.lifetimes.timeout
        self.convs: dict = {}        # key -> Conversation
        self.full: set = set()       # keys the full decode takes
        self.keys = 0                # distinct keys seen (the live cap)
        self.held = 0                # upper bound of the machine's pending reassembly, now
        self.peak = 0                # ... its highest
        self.paths: dict = {}        # interned path tuples
        self.modelled = 0            # frames counted by the machine (of conversations still modelled)
        self.now, self.number = 0.0, 0   # the frame's capture time and number

    def run(self, path) -> bool:
        """False when the machine models too little of the capture to pay for itself (a quarter of the frames
        after the first GIVE_UP): the caller decodes every frame in full."""
        capture = open_capture(path)
        n = 0
        try:
            for frame in capture:
                self.frame(frame)
                n += 1
                if n == GIVE_UP and self.modelled * 4 < n:
                    return False
        finally:
            capture.close()
        return True

    def frame(self, frame) -> None:
        key, parsed = key_of(frame)
        if key is None or key in self.full:
            self.full.add(key)
            return
        conv = self.convs.get(key)
        ns = frame.ts_ns
        now = ns // 1_000_000_000 + (ns % 1_000_000_000) / 1e9
        if conv is None:
            conv = self.convs[key] = Conversation(now)
            self.keys += 1
        elif now - conv.last >= self.timeout or now < conv.last:
            self.bail(key, conv)
            return
        conv.last = self.now = now
        self.number = frame.number
        try:
            path = self.tcp_path(conv, parsed, frame) if key[0] == 6 else self.udp_path(parsed)
        except Bail:
            self.bail(key, conv)
            return
        self.modelled += 1
        hit = conv.counts.get(path)
        if hit is None:
            conv.counts[path] = [1, frame.length, frame.number]
        else:
            hit[0] += 1
            hit[1] += frame.length

    def bail(self, key, conv) -> None:
        self.full.add(key)
        self.modelled -= sum(c[0] for c in conv.counts.values())
        self.held -= conv.held
        del self.convs[key]

    def udp_path(self, parsed) -> tuple:
        _, sport, dport, payload_len = parsed
        if not payload_len:
            return self.intern(("udp",))
        proto = self.udp.get(sport) or self.udp.get(dport)
        if proto is None:
            raise Bail
        return self.intern(("udp", proto.name))

    def intern(self, tail: tuple) -> tuple:
        path = self.paths.get(tail)
        if path is None:
            path = self.paths[tail] = BASE + tail
        return path

    def tcp_path(self, conv: Conversation, parsed, frame) -> tuple:
        ends, seq, ack, flags, data, start, stop = parsed
        if flags & URG:
            raise Bail
        if conv.ended:                 # the last acknowledgements; nothing after them is modelled
            if stop > start or flags & SYN:
                raise Bail
            return self.intern(("tcp",))
        src, dst = ends
        me = conv.dirs.get(src)
        if flags & SYN:
            if me is not None or stop > start or flags & (FIN | RST):
                raise Bail
            conv.handshake |= 2 if flags & ACK else 1
            conv.dirs[src] = d = Direction((seq + 1) % SEQ_MOD, f"{src[0]}:{src[1]}>{dst[0]}:{dst[1]}")
            d.conv = conv.state
            return self.intern(("tcp",))
        if me is None or conv.handshake != 3:
            raise Bail                 # a start not captured: the decoder resynchronises
        if seq != me.nxt:
            raise Bail
        if flags & ACK:
            peer = conv.dirs.get(dst)
            if peer is not None:
                if peer.acked is not None and (ack - peer.acked) % SEQ_MOD >= SEQ_MOD // 2:
                    raise Bail         # an acknowledgement going back
                peer.acked = ack
        size = stop - start
        count = 0
        if size:
            if me.fin:
                raise Bail
            if me.acked is not None and (me.acked - seq - 1) % SEQ_MOD < SEQ_MOD // 2:
                raise Bail             # acknowledged before it was seen: tshark calls it a retransmission
            me.nxt = (seq + size) % SEQ_MOD
            proto = conv.proto
            if proto is None:
                sport, dport = src[1], dst[1]
                lo, hi = (sport, dport) if sport <= dport else (dport, sport)
                proto = conv.proto = self.tcp.get(lo) or self.tcp.get(hi)
                if proto is None:
                    raise Bail
            count = self.cut(conv, me, proto, data[start:stop])
        if flags & FIN:
            me.fin = True
            me.nxt = (me.nxt + 1) % SEQ_MOD
            peer = conv.dirs.get(dst)
            if peer is not None and peer.fin:
                conv.ended = True
                self.held -= conv.held
                conv.held = 0
        if flags & RST:
            conv.ended = True
            self.held -= conv.held
            conv.held = 0
        if not count:
            return self.intern(("tcp",))
        return self.intern(("tcp",) + (proto.name,) * count)

    def cut(self, conv: Conversation, me: Direction, proto, payload: bytes) -> int:
        """PDUs of the stream that end in this segment (engine.streams.Cutter.run on a clean stream)."""
        data = me.buf + payload if me.buf else payload
        length, seen = self.framer(proto), self.seen(proto)
        pos, count, size = 0, 0, len(data)
        while pos < size:
            n = length(proto, data, pos, me)
            if n < 0 or n > MAX_PDU or (n == 0 and size - pos > MAX_PDU):
                raise Bail             # the decoder stops this direction (undecoded data)
            if n == 0 or pos + n > size:
                break
            seen(proto, data, pos, n, me, self)
            count += 1
            pos += n
        before = len(me.buf)
        me.buf = data[pos:] if pos < size else b""
        grown = len(me.buf) - before
        conv.held += grown
        self.held += grown
        total = self.held + PENDING.used      # (what stateful messages dissected here hold: Rutentoy's chunks)
        if total > self.peak:
            self.peak = total
        return count

    @staticmethod
    def framer(proto):
        return _stream_length if isinstance(proto, StreamProtocol) else _channel_length

    @staticmethod
    def seen(proto):
        return _stream_seen if isinstance(proto, StreamProtocol) else _nothing

    def contributions(self) -> list:
        return [conv.counts for conv in self.convs.values()]


def _channel_length(proto, data, pos, me) -> int:
    return proto.pdu_length(data, pos, me.conv, me.name, {})


def _nothing(proto, data, pos, n, me, machine) -> None:
    pass


def _stream_length(proto, data, pos, me) -> int:
    return proto.pdu_length(data, pos, me.conv, me.name, {})


def _stream_seen(proto, data, pos, n, me, machine) -> None:
    """What StreamProtocol.dissect leaves in the conversation for its framing: the numbering it recognises from
    the PDU's own bytes (the view it gets ends with the PDU), and the flags a stateful message sets (Rutentoy's
    texture exchange: an alternate layout): such a message is dissected here as the full decode does it with
    nothing asked of the layer (no items but what its state needs)."""
    conv, role = me.conv, proto.role(me.name)
    if conv.get("numbering") is None:
        proto.numbering(memoryview(data)[:pos + n], pos, conv, role, {})
    packet = proto.packet_for(conv.get("numbering") or proto.numberings[0], role, data[pos], conv)
    if packet is None or not packet.stateful():
        return
    ctx = Ctx(data, pos, pos + n, Item(proto.info, proto.description, pos, n, proto.description, False, 0), proto,
              conv, me.name, machine.number)
    ctx.time, ctx.demand, ctx.asked = machine.now, frozenset(), frozenset()     # values only (Field.scan)
    try:
        proto.dissect(ctx, {})
    except Exception:  # noqa: BLE001 - the full decode shows it as an expert; its state is not modelled
        raise Bail from None


def key_of(frame):
    """(key, parsed) of an Ethernet/IPv4 UDP or TCP frame the machine can read; (None, None) otherwise. UDP:
    (key, (ends, sport, dport, payload length)); TCP: (key, (ends, seq, ack, flags, data, payload start, stop)).
    The key is the conversation: (transport, lower end, higher end)."""
    data = frame.data
    if frame.caplen != frame.length or frame.linktype != 1 or len(data) < 34 or data[12:14] != ETH_IP:
        return None, None
    if data[14] != 0x45 or data[20] & 0x3F or data[21]:      # IP options, fragments
        return None, None
    total = _U16.unpack_from(data, 16)[0]
    end = 14 + total
    if total < 20 or end > len(data):
        return None, None
    transport = data[23]
    src, dst = data[26:30], data[30:34]
    if transport == 17:
        if total < 28:
            return None, None
        sport, dport, ulen = struct.unpack_from("!HHH", data, 34)
        if ulen < 8 or 34 + ulen > end:
            return None, None
        a, b = (src, sport), (dst, dport)
        key = (17, a, b) if a <= b else (17, b, a)
        return key, ((a, b), sport, dport, ulen - 8)
    if transport == 6:
        if total < 40:
            return None, None
        sport, dport, seq, ack, off, flags = struct.unpack_from("!HHIIBB", data, 34)
        hlen = (off >> 4) * 4
        if hlen < 20 or 34 + hlen > end or off & 0x0F or flags & 0xC0:
            return None, None
        if hlen > 20 and not (hlen == 32 and data[54:57] == TIMESTAMPS) and 30 in _option_kinds(data, 54, 34 + hlen):
            return None, None                                    # MPTCP
        a, b = (_dotted(src), sport), (_dotted(dst), dport)
        key = (6, a, b) if a <= b else (6, b, a)
        return key, ((a, b), seq, ack, flags, data, 34 + hlen, end)
    return None, None


_DOTTED: dict = {}


def _dotted(addr: bytes) -> str:
    text = _DOTTED.get(addr)
    if text is None:
        if len(_DOTTED) > 65536:
            _DOTTED.clear()
        text = _DOTTED[addr] = ".".join(map(str, addr))
    return text


def _option_kinds(data: bytes, pos: int, stop: int) -> list:
    kinds = []
    while pos < stop:
        kind = data[pos]
        kinds.append(kind)
        if kind == 0:
            break
        if kind == 1:
            pos += 1
            continue
        if pos + 1 >= stop or data[pos + 1] < 2:
            kinds.append(-1)
            break
        pos += data[pos + 1]
    return kinds


# --- the whole run ---------------------------------------------------------------------------------------------------

def protocol_tree(path, dispatcher, packets_of=None) -> dict:
    """io,phs's tree ({name: [frames, bytes, children]}) of a capture file: the machine, then the full decode of
    the frames it left (or of all of them when a global bound could be reached), merged in first-seen order.
    `packets_of(frames, dispatcher)`: the decoder (api.session.packets_from_frames)."""
    if packets_of is None:
        from ..session import packets_from_frames as packets_of
    fused = Fused(dispatcher)
    useful = fused.run(path)
    parts = fused.contributions()
    fused.convs.clear()           # the state of the machine's conversations goes (and its reassembly budget)
    if not useful or fused.keys > dispatcher.lifetimes.cap // 2 or fused.peak > PENDING.limit // 4:
        return _tree(_full_counts(path, dispatcher, packets_of, None)[0])
    counts, peak = _full_counts(path, dispatcher, packets_of, fused.full)
    if peak + fused.peak > PENDING.limit // 2:
        from ..engine.dispatch import Dispatcher
        fresh = Dispatcher(dispatcher.protocols.values(), dispatcher.settings)
        return _tree(_full_counts(path, fresh, packets_of, None)[0])
    for part in parts:
        _add(counts, part)
    return _tree(counts)


def _full_counts(path, dispatcher, packets_of, keys) -> tuple[dict, int]:
    """path -> [frames, bytes, first frame] of the frames of `keys` (None: every frame), decoded in full; and
    the highest pending reassembly seen after a frame."""
    counts: dict = {}
    capture = open_capture(path)
    if keys is not None and not keys:
        capture.close()
        return counts, 0
    frames = capture if keys is None else (f for f in capture if key_of(f)[0] in keys)
    peak = 0
    try:
        for packet in packets_of(frames, dispatcher=dispatcher):
            key = tuple(protocol_path(packet))
            hit = counts.get(key)
            if hit is None:
                counts[key] = [1, packet.frame.length, packet.frame.number]
            else:
                hit[0] += 1
                hit[1] += packet.frame.length
            if PENDING.used > peak:
                peak = PENDING.used
    finally:
        capture.close()
    return counts, peak


def _add(into: dict, part: dict) -> None:
    for key, (n, size, first) in part.items():
        hit = into.get(key)
        if hit is None:
            into[key] = [n, size, first]
        else:
            hit[0] += n
            hit[1] += size
            hit[2] = min(hit[2], first)


def _tree(counts: dict) -> dict:
    """The tree of every path's prefixes, each level in the order its nodes were first seen."""
    first: dict = {}
    totals: dict = {}
    for path, (n, size, at) in counts.items():
        for i in range(1, len(path) + 1):
            prefix = path[:i]
            if prefix not in first or at < first[prefix]:
                first[prefix] = at
            t = totals.get(prefix)
            if t is None:
                totals[prefix] = [n, size]
            else:
                t[0] += n
                t[1] += size
    root: dict = {}
    nodes = {(): root}
    for prefix in sorted(first, key=lambda p: (len(p), first[p])):
        frames, size = totals[prefix]
        level = nodes[prefix[:-1]]
        node = level[prefix[-1]] = [frames, size, {}]
        nodes[prefix] = node[2]
    return root


def run_taps(path, dispatcher, taps) -> None:
    """Fill every (unfiltered io,phs) tap of `taps` with the capture's tree."""
    root = protocol_tree(path, dispatcher)
    for tap in taps:
        tap.root = root
