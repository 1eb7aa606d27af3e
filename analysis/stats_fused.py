"""-z io,phs without building a single layer: a fused per-conversation machine for the conversations it models,
the full decode for every other frame, and one protocol tree merged from both in first-seen order.

io,phs needs per frame only its protocol path (analysis.stats_phs.protocol_path) and its length. For a clean
conversation that path follows from the headers, the game's own framing function and the little state it reads:
  - UDP, by registration or by the one heuristic that takes it: a plain table protocol (blank) is one layer;
    ENet is dissected here as the full decode does when nothing is asked of it (scan_datagram: its state, no
    items) under a stand-in stack (Hands) that names the layers its hand-ups make (Iceball, not dissected);
  - TCP to a port a generated-plugin stream protocol registers (Rutentoy, Iceball over TCP), both starts seen,
    every payload at exactly the next sequence number and not yet acknowledged: tcp, then the protocol's name
    once per PDU that ends in the segment, cut with the protocol's own pdu_length (no second framing). Messages
    that keep state its framing reads (Rutentoy's numbering and texture-exchange flags) are dissected here,
    values only; every other PDU is only measured;
  - TCP that no port registers and whose first payload only WebSocket's heuristic takes (the HTTP upgrade):
    each PDU is dissected by the real WebSocket dissector under a stand-in stack (analysis.fused_ws) that names
    the layers (http, websocket, its continuation item, the messages' protocol, data, the postdissector's
    hand-ups), then tcp.segments when a PDU came from several segments; its inflate windows are charged to a
    state budget bound, as engine.lifetime charges and frees them.
Anything else sends its whole conversation (every frame, from its first) to the full decode, in a second pass
over the file: an unknown port, IP options, a cut frame, a SYN on a live connection, a sequence number out of
place (retransmission, a gap inside a PDU, overlap, keep-alive; after a gap between PDUs the stream protocols
resynchronise and WebSocket frames the next segment from its start, as in the full decode), data after FIN/RST,
framing that fails, a dissection that raises, a frame after the conversation's state was freed (idle timeout,
end and linger), and every SCTP and MPTCP conversation. IPv6 and non-IP frames go to the full decode too (their
own conversations). Conversations are independent in the decoder (the -j planner rests on the same) except
through its global bounds and tables; the fused path gives way to the full decode of every frame when any could
matter: a frame that cannot be placed in its conversation (IP fragments, another link type, VLAN tags), a payload
two UDP heuristics would take (their order is global; TCP's too), live conversations or TCP connections reaching
the caps (counted as an upper bound with engine.lifetime's rules), pending reassembly near its budget, inflate
windows of both passes together over the state budget.
"""
from __future__ import annotations

from itertools import islice

from ..capture.files import open_capture
from ..capture.tcp_analysis import MAX_CONNECTIONS
from ..engine.channel_protocol import ChannelProtocol
from ..engine.context import NO_PREFS, Ctx
from ..engine.lifetime import Lifetimes
from ..engine.protocol import Protocol
from ..engine.stream_protocol import StreamProtocol
from ..engine.tree import Item
from ..reassembly.budget import PENDING, STATE
from ..engine.streams import default_resync
from ..reassembly.tcp import MAX_PDU
from .fused_keys import ABORT, ETH_IPV6, dotted, key_of
from .fused_ws import Bail, LeanInflater, WsStack, frame_names, pdu_layers
from .stats_phs import ProtocolHierarchy, protocol_path

FIN, SYN, RST, ACK, URG = 0x01, 0x02, 0x04, 0x10, 0x20
SEQ_MOD = 1 << 32
BASE = ("eth", "ip")
GIVE_UP = 8192           # frames after which a machine that models under a quarter of them stops
# conversations the machine keeps (their counts, under a KB each once their state is swept; freed only with the
# machine), beyond which it gives the capture to the full decode, which frees them
MAX_TRACKED = 50_000
SWEEP = 16384            # frames between two sweeps of the state the full decode would have freed


def applies(taps) -> bool:
    """Every statistic is an unfiltered io,phs."""
    return bool(taps) and all(type(t) is ProtocolHierarchy and not t.filter for t in taps)


# --- the machine -----------------------------------------------------------------------------------------------------

class Conversation:
    __slots__ = ("counts", "last", "proto", "dirs", "handshake", "ended", "held", "state", "others", "closed")

    def __init__(self, now: float):
        self.counts: dict = {}       # path -> [frames, bytes, first frame]
        self.last = now              # capture time of its last frame
        self.proto = None            # the stream protocol (TCP), once chosen
        self.dirs: dict = {}         # TCP: sender (addr, port) -> Direction; UDP: sender -> its direction's name
        self.handshake = 0           # 1: SYN seen, 2: SYN-ACK seen
        self.ended = False           # TCP: True after FIN both ways or RST; UDP: the capture time it ended
        self.held = 0                # bytes of a TCP PDU being assembled (its pending stream reassembly)
        self.state: dict = {}        # the stream protocol's conversation dict (both directions: its numbering)
        self.others: dict = {}       # WebSocket: the conversation dicts of the protocols it hands up to, by name
        self.closed = None           # WebSocket: the capture time its closing handshake ended it


class Direction:
    __slots__ = ("nxt", "buf", "fin", "acked", "conv", "name", "skewed", "stopped", "resyncing", "parts", "extra",
                 "need")

    def __init__(self, nxt: int, name: str):
        self.nxt = nxt               # next expected raw sequence number
        self.buf = b""               # bytes of a PDU not yet complete
        self.fin = False
        self.acked = None            # the highest ack the peer sent (raw)
        self.conv: dict = {}         # the conversation's state dict (Conversation.state)
        self.name = name             # "a:p>b:q" (StreamProtocol reads the ports)
        self.skewed = False          # a segment without payload came ahead of the stream
        self.stopped = False         # the framing failed: the rest is undecoded data (Direction.stopped)
        self.resyncing = False       # after a gap, no PDU start found yet
        self.parts: list = []        # WebSocket: segments after buf, not yet joined to it (a PDU of known length,
        self.extra = 0               #   `need` bytes from buf's start, still incomplete), and their bytes
        self.need = 0


# Datagram protocols the machine dissects itself with a counting stand-in stack (Hands), as the full decode does
# when nothing is asked of them: their hand-ups are the layers above (ENet: its messages, to Iceball).
HANDS_UP = {"enet"}


class Hands:
    """Stands in for a frame's layer stack (engine.dispatch.Stack) under a dissection the machine runs: each
    hand-up becomes a layer name, as Stack.handoff would make it when nothing is asked of the protocol above
    (its dissection skipped: own_state_only); anything else the stack would do is not modelled."""

    __slots__ = ("dispatcher", "made", "ended", "depth")

    def __init__(self, dispatcher):
        self.dispatcher, self.made, self.ended, self.depth = dispatcher, [], False, 1

    def handoff(self, table, keys, data, start, end, source, direction, meta):
        if start >= end:
            return None
        registered = self.dispatcher.tables.get(table) or {}
        proto = None
        for key in keys:
            proto = registered.get(key)
            if proto is not None:
                break
        if proto is None:
            if self.dispatcher.heuristic_lists.get(table.split(".")[0]):
                raise Bail             # a heuristic would be asked (and reorders its list)
            return None
        if not getattr(proto, "own_state_only", False):
            raise Bail                 # it would be dissected: its own hand-ups
        self.made.append(proto.name)
        self.taken(proto, data, start, end, source, direction, meta)
        return proto.name

    def taken(self, proto, data, start, end, source, direction, meta) -> None:
        """A hand-up the stand-in names: nothing more here (analysis.fused_items dissects the asked ones)."""

    def dissect(self, *args, **kw):
        raise Bail                     # enet.payload (a preference: never on the fused path)


class Fused:
    """Pass 1 over a capture: per conversation, the counts of the frames the machine models, or the key of a
    conversation the full decode must take."""

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher
        self.prefs = dispatcher.settings.prefs
        self.tcp = {p: proto for p, proto in dispatcher.tables.get("tcp.port", {}).items()
                    if isinstance(proto, (StreamProtocol, ChannelProtocol)) and getattr(proto, "lua", True)}
        self.registered = dispatcher.tables.get("udp.port", {})
        self.heuristics = list(dispatcher.heuristic_lists.get("udp", ()))
        if any(getattr(p, "heuristic_wants_conv", False) for p, _ in self.heuristics):
            self.heuristics = None
        # TCP heuristics (WebSocket's upgrade): a connection no port registers is modelled when exactly one of
        # them takes its first payload and it is WebSocket, whose messages go to a "ws" list of one protocol at
        # most (its order then never matters), without decode-as
        self.tcp_heuristics = list(dispatcher.heuristic_lists.get("tcp", ()))
        self.tcp_ports = dispatcher.tables.get("tcp.port", {})
        self.ws = not dispatcher.settings.decode_as and len(dispatcher.heuristic_lists.get("ws", ())) <= 1
        if any(getattr(p, "heuristic_wants_conv", False) for p, _ in self.tcp_heuristics):
            self.ws, self.tcp_heuristics = False, []    # (no lookup of the machine's then reorders the list)
        self.charge_peak = 0         # the highest heavy state (inflate windows) of the machine's conversations
        self.key = None              # the conversation being placed (charge())
        self.ambiguous = False       # a payload several UDP heuristics take: their order matters, no fused path
        self.placeless = False       # a frame of no known conversation (key_of's ABORT): no fused path
        self.timeout, self.linger = dispatcher.lifetimes.timeout, dispatcher.lifetimes.linger
        self.lives = Lifetimes(self.timeout, 1 << 62, self.linger)   # for track(): never a cap of its own
        self.live_peak = self.tcp_peak = self.unplaced = self.tracked = 0
        self.tcp_open: set = set()
        self.ended_now = False       # the frame placed now ended its conversation
        self.convs: dict = {}        # key -> Conversation
        self.full: set = set()       # keys the full decode takes
        self.held = 0                # upper bound of the machine's pending reassembly, now
        self.peak = 0                # ... its highest
        self.paths: dict = {}        # interned path tuples
        self.modelled = 0            # frames counted by the machine (of conversations still modelled)
        self.now, self.number = 0.0, 0   # the frame's capture time and number

    def run(self, path, limit: int | None = None) -> bool:
        """False when the machine models too little of the capture to pay for itself (a quarter of the frames
        after the first GIVE_UP) or its counts cannot be used (hopeless(): checked as it goes, so a flood of
        conversations stops it early): the caller decodes every frame in full. `limit`: the first frames only
        (-c)."""
        capture = open_capture(path)
        n = 0
        try:
            for frame in islice(capture, limit):
                self.frame(frame)
                n += 1
                if not n & 1023:
                    if not n % SWEEP:
                        self.sweep(self.now)
                    if self.hopeless():
                        return False
                if n == GIVE_UP and self.modelled * 4 < n:
                    return False
        finally:
            capture.close()
        return not self.hopeless()

    def hopeless(self) -> bool:
        """Whether the full decode must take every frame: a global bound or order could matter (each of these only
        grows: a payload several heuristics take, a frame of no conversation, the highest pending reassembly,
        heavy state, live conversations or TCP connections near the decoder's caps), or the machine keeps too many
        conversations (MAX_TRACKED)."""
        return bool(self.ambiguous or self.placeless or self.peak > PENDING.limit // 4
                    or self.charge_peak > STATE.limit
                    or self.live_peak + self.unplaced >= self.dispatcher.lifetimes.cap
                    or self.tcp_peak + self.unplaced >= MAX_CONNECTIONS
                    or len(self.convs) + len(self.full) > MAX_TRACKED)

    def frame(self, frame) -> None:
        key, parsed = key_of(frame)
        if key is ABORT:
            self.placeless = True
            return
        ns = frame.ts_ns
        now = ns // 1_000_000_000 + (ns % 1_000_000_000) / 1e9
        if key is None:
            if frame.data[12:14] == ETH_IPV6:
                self.unplaced += 1     # a conversation of its own, perhaps: counted against the bounds
            return self.leave(key)
        self.ended_now = False
        self.place(key, parsed, frame, now)
        self.track(key, now)

    def leave(self, key) -> None:
        """The full decode takes the conversation (or the frames of no IPv4 conversation: key None)."""
        conv = self.convs.get(key)
        if conv is not None:
            self.bail(key, conv)
        self.full.add(key)

    def track(self, key, now: float) -> None:
        """An upper bound of what the full decode keeps at once across all conversations (engine.lifetime's live
        and ending ones; capture.tcp_analysis's connections, freed only when they end), its highest so far."""
        lives = self.lives
        self.tracked += 1
        if not self.tracked & 63 and lives.due(now):       # expiring late only counts more: still a bound
            for pair in lives.expired(now):
                lives.release(pair)
                if lives.ended_last:
                    self.tcp_open.discard(pair)
        lives.touch(key, now)
        if self.ended_now:
            lives.end(key, now)
        live = len(lives.live) + len(lives.ending)
        if live > self.live_peak:
            self.live_peak = live
        if key[0] == 6 and key not in self.tcp_open:
            self.tcp_open.add(key)
            if len(self.tcp_open) > self.tcp_peak:
                self.tcp_peak = len(self.tcp_open)

    def place(self, key, parsed, frame, now: float) -> None:
        """Count the frame in its conversation, or give the conversation to the full decode."""
        if key in self.full or parsed is None:
            if parsed is not None:
                if key[0] == 17:
                    self.check_heuristics(parsed, frame)
                else:
                    self.check_tcp_heuristics(parsed)
            return self.leave(key)
        conv = self.convs.get(key)
        if conv is None:
            conv = self.convs[key] = Conversation(now)
        elif now - conv.last >= self.timeout or now < conv.last:
            self.bail(key, conv)
            return
        conv.last = self.now = now
        self.number, self.key = frame.number, key
        try:
            path = self.tcp_path(conv, parsed, frame) if key[0] == 6 else self.udp_path(conv, parsed, frame)
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
        self.lives.release(key)        # (its heavy state is counted again by the full decode)
        del self.convs[key]

    def udp_path(self, conv: Conversation, parsed, frame) -> tuple:
        """As Dispatcher.udp_protocol: the conversation's claimed protocol, the ports' registration, then the
        heuristics (only where exactly one would take the payload: then their order does not matter)."""
        ends, sport, dport, payload_len = parsed
        if not payload_len:
            return self.intern(("udp",))
        registered = self.registered
        proto = conv.proto or registered.get(sport) or registered.get(dport)
        if proto is None:
            proto = self.heuristic(frame.data[42:42 + payload_len])
            if proto is None:
                return self.intern(("udp", "data"))        # tshark's data dissector takes it
            if getattr(proto, "heuristic_claims", False):
                conv.proto = proto
        if type(proto) is Protocol:
            return self.intern(("udp", proto.name))
        if proto.name not in HANDS_UP:
            raise Bail
        return self.intern(("udp", proto.name, *self.hand_ups(conv, proto, ends, frame, payload_len)))

    def check_heuristics(self, parsed, frame) -> None:
        """A datagram the full decode takes: whether several UDP heuristics would take it (their order, which
        the machine's own look-ups change, would then decide)."""
        _, sport, dport, size = parsed
        if size and self.heuristics and not (self.registered.get(sport) or self.registered.get(dport)):
            try:
                self.heuristic(frame.data[42:42 + size])
            except Bail:
                pass

    def check_tcp_heuristics(self, parsed) -> None:
        """A segment the full decode takes, of ports no table registers: whether several TCP heuristics would
        take its payload (their order, which the machine's WebSocket choices do not change, would then decide)."""
        ends, _, _, _, data, start, stop = parsed
        if stop > start and len(self.tcp_heuristics) > 1 and not (
                self.tcp_ports.get(ends[0][1]) or self.tcp_ports.get(ends[1][1])):
            if sum(1 for _, match in self.tcp_heuristics if match(data[start:stop])) > 1:
                self.ambiguous = True

    def tcp_choice(self, sport: int, dport: int, payload: bytes):
        """The stream protocol of a connection at its first payload (Streams.choose): its port's, else the one
        TCP heuristic that takes it when that is WebSocket; Bail for anything else."""
        lo, hi = (sport, dport) if sport <= dport else (dport, sport)
        proto = self.tcp.get(lo) or self.tcp.get(hi)
        if proto is not None or not self.ws or self.tcp_ports.get(lo) or self.tcp_ports.get(hi):
            if proto is None:
                raise Bail
            return proto
        taken = [p for p, match in self.tcp_heuristics if match(payload)]
        if len(taken) > 1:
            self.ambiguous = True
        if len(taken) != 1 or taken[0].name != "websocket":
            raise Bail
        return taken[0]

    def charge(self, n: int) -> None:
        """A dissection here charged n bytes of heavy state to its conversation (Ctx.charge_state): held until
        the conversation is freed (track(): engine.lifetime's rules, applied late, so an upper bound)."""
        lives = self.lives
        lives.charge(self.key, n)
        if lives.used > self.charge_peak:
            self.charge_peak = lives.used

    def heuristic(self, payload: bytes):
        """The one UDP heuristic that takes the payload, or None; Bail when several would (their order decides)."""
        if self.heuristics is None:
            raise Bail
        taken = [p for p, match in self.heuristics if match(payload)]
        if len(taken) > 1:
            self.ambiguous = True
            raise Bail
        return taken[0] if taken else None

    def hand_ups(self, conv: Conversation, proto, ends, frame, size: int) -> tuple:
        """The layers a datagram protocol's dissection hands up (ENet's messages): its dissection with nothing
        asked (scan_datagram: its state, no items), under a stand-in stack that counts the hand-ups."""
        if conv.ended is not False and self.now - conv.ended > self.linger:
            raise Bail                 # its state was freed: not modelled
        direction = conv.dirs.get(ends[0])
        if direction is None:
            (src, sport), (dst, dport) = ends
            direction = conv.dirs[ends[0]] = f"{dotted(src)}:{sport}>{dotted(dst)}:{dport}"
        stack = self.hands(conv)
        start = 42                     # Ethernet, IPv4 without options, UDP
        ctx = Ctx(frame.data, start, start + size, Item(proto.info, proto.description, start, size,
                                                        proto.description, False, 0),
                  proto, conv.state, direction, frame.number)
        ctx.stack, ctx.time, ctx.demand = stack, self.now, frozenset()
        stack.depth = 1
        try:
            proto.dissect(ctx, NO_PREFS)
        except Exception:  # noqa: BLE001 - the full decode shows it as an expert; not modelled
            raise Bail from None
        if stack.ended:
            self.ended_now = True
            if conv.ended is False:
                conv.ended = self.now
        return tuple(stack.made)

    def hands(self, conv: Conversation) -> Hands:
        """The stand-in stack of a datagram's dissection in `conv`."""
        return Hands(self.dispatcher)

    def ws_stack(self, conv: Conversation, frame) -> WsStack:
        """The stand-in stack of a WebSocket segment's dissection in `conv`."""
        return WsStack(self, conv.others, frame)

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
            conv.dirs[src] = d = Direction((seq + 1) % SEQ_MOD,
                                           f"{dotted(src[0])}:{src[1]}>{dotted(dst[0])}:{dst[1]}")
            d.conv = conv.state
            return self.intern(("tcp",))
        if me is None or conv.handshake != 3:
            raise Bail                 # a start not captured: the decoder resynchronises
        size = stop - start
        lost = False
        if seq != me.nxt:
            if not 0 < (seq - me.nxt) % SEQ_MOD < SEQ_MOD // 2 or me.skewed:
                raise Bail             # behind (retransmission, overlap, keep-alive), or ahead twice
            if size:
                if me.buf:
                    raise Bail         # a hole in a PDU being assembled
                lost = True            # "previous segment not captured": the decoder resynchronises
            else:
                me.skewed = True       # TCP's analysis moves on, the byte stream does not: no more payload
                me.nxt = seq
        if flags & ACK:
            peer = conv.dirs.get(dst)
            if peer is not None:
                if peer.acked is not None and (ack - peer.acked) % SEQ_MOD >= SEQ_MOD // 2:
                    raise Bail         # an acknowledgement going back
                peer.acked = ack
        count, names = 0, ()
        if size:
            if me.fin or me.skewed:
                raise Bail
            if me.acked is not None and (me.acked - seq - 1) % SEQ_MOD < SEQ_MOD // 2:
                raise Bail             # acknowledged before it was seen: tshark calls it a retransmission
            me.nxt = (seq + size) % SEQ_MOD
            proto = conv.proto
            if proto is None:
                proto = conv.proto = self.tcp_choice(src[1], dst[1], data[start:stop])
                if proto.name == "websocket":
                    conv.state["inflater"] = LeanInflater
            if proto.name == "websocket":     # after a gap (no PDU pending), tshark frames from the segment's start
                names = self.ws_cut(conv, me, proto, data[start:stop], frame)
            else:
                count = self.cut(conv, me, proto, data[start:stop], lost)
        if flags & FIN:
            me.fin = True
            me.nxt = (me.nxt + 1) % SEQ_MOD
            peer = conv.dirs.get(dst)
            if peer is not None and peer.fin:
                self.end_tcp(conv)
        if flags & RST:
            self.end_tcp(conv)
        if names:
            return self.intern(("tcp", *names))
        if not count:
            return self.intern(("tcp",))
        return self.intern(("tcp",) + (proto.name,) * count)

    def ws_cut(self, conv: Conversation, me: Direction, proto, payload: bytes, frame) -> tuple:
        """The layers of a WebSocket segment: each PDU that ends in it dissected (analysis.fused_ws), then the
        postdissector's hand-ups, then "tcp.segments" when a PDU came from several segments (tshark's TCP
        reassembled it). Only clean framing is modelled: a length that cannot frame is Bail."""
        if conv.closed is not None and self.now - conv.closed > self.linger:
            raise Bail                 # its state was freed: not modelled
        if me.need and len(me.buf) + me.extra + len(payload) < me.need:
            me.parts.append(payload)   # the PDU is still incomplete: no copy of what came before
            me.extra += len(payload)
            self.hold(conv, len(payload))
            return ()
        if me.parts:
            me.buf, me.parts, me.extra = b"".join((me.buf, *me.parts)), [], 0
        joined = bool(me.buf)
        data = me.buf + payload if joined else payload
        stack = self.ws_stack(conv, frame)
        pos, size, pdus, n = 0, len(data), 0, 0
        limit = getattr(proto, "max_pdu", MAX_PDU)
        first_round = None             # the layers of the PDU this segment completes (desegment_tcp's first round)
        while pos < size:
            try:
                n = int(proto.pdu_length(data, pos, me.conv, me.name, self.prefs))
            except Exception:  # noqa: BLE001 - as Cutter.length: cannot frame (not modelled)
                raise Bail from None
            if n < 0 or n > limit or (n == 0 and size - pos > limit):
                raise Bail
            if n == 0 or pos + n > size:
                break
            pdu_layers(self, conv, me, proto, data, pos, n, stack)
            if joined and not pdus:
                first_round = len(stack.layers)
            pdus += 1
            pos += n
        me.need = n if pos < size and n > 0 else 0
        self.keep(conv, me, data, pos)
        if stack.ended and conv.closed is None:
            conv.closed = self.now
        if stack.ended:
            self.ended_now = True
        names = frame_names(stack)
        if joined and pdus:     # TCP's reassembled segments: after the first round when a second one follows
            names.insert(first_round if pdus > 1 else len(names), "tcp.segments")
        return tuple(names)

    def keep(self, conv: Conversation, me: Direction, data: bytes, pos: int) -> None:
        """The bytes from `pos` on wait for the next segment: counted as the conversation's pending reassembly."""
        before = len(me.buf)
        me.buf = data[pos:] if pos < len(data) else b""
        self.hold(conv, len(me.buf) - before)

    def hold(self, conv: Conversation, grown: int) -> None:
        conv.held += grown
        self.held += grown
        total = self.held + PENDING.used
        if total > self.peak:
            self.peak = total

    def end_tcp(self, conv: Conversation) -> None:
        """The connection is over: only its last acknowledgements are modelled (no state)."""
        conv.ended = self.ended_now = True
        self.held -= conv.held
        conv.held = 0
        conv.dirs, conv.state = {}, {}

    def sweep(self, now: float) -> None:
        """Free the state of conversations the full decode has freed by now (ended and lingered, or idle past
        the timeout): any later frame of theirs is not modelled (frame() and hand_ups() give them up)."""
        for conv in self.convs.values():
            ended = conv.ended is not False and conv.ended is not True and now - conv.ended > self.linger
            closed = conv.closed is not None and now - conv.closed > self.linger
            if (ended or closed or now - conv.last >= self.timeout) and (conv.state or conv.dirs):
                self.held -= conv.held
                conv.held = 0
                conv.dirs, conv.state, conv.others = {}, {}, {}

    def cut(self, conv: Conversation, me: Direction, proto, payload: bytes, lost: bool) -> int:
        """The layers of the stream that this segment completes (engine.streams.Cutter.run on a stream whose
        only trouble is a gap): each PDU that ends in it, and an undecoded-data layer for bytes skipped to
        resynchronise or for a direction that can no longer be framed."""
        if me.stopped:
            return 1
        data = me.buf + payload if me.buf else payload
        seen = self.seen(proto)

        def measured(at: int) -> int:
            try:
                return int(proto.pdu_length(data, at, me.conv, me.name, {}))
            except Bail:
                raise
            except Exception:  # noqa: BLE001 - as Cutter.length: a framing error cannot frame
                return -1
        pos, count, size = 0, 0, len(data)
        if lost or me.resyncing:
            found = self.resync(proto, data, me, measured)
            if found is None:
                me.resyncing, me.buf = True, b""
                return 1
            me.resyncing = False
            count, pos = (1 if found else 0), found
        while pos < size:
            n = measured(pos)
            if n < 0 or n > MAX_PDU or (n == 0 and size - pos > MAX_PDU):
                me.stopped, me.buf = True, b""
                return count + 1
            if n == 0 or pos + n > size:
                break
            seen(proto, data, pos, n, me, self)
            count += 1
            pos += n
        self.keep(conv, me, data, pos)       # (PENDING: what stateful messages dissected here hold, Rutentoy's chunks)
        return count

    @staticmethod
    def resync(proto, data: bytes, me: Direction, measured):
        """Cutter.resync: the protocol's own, else engine.streams.default_resync."""
        custom = getattr(proto, "resync", None)
        if custom is None:
            return default_resync(measured, len(data))
        try:
            found = custom(data, 0, me.conv, me.name)
        except Exception:  # noqa: BLE001
            return None
        return found if found is None or 0 <= found <= len(data) else None

    @staticmethod
    def seen(proto):
        return _stream_seen if isinstance(proto, StreamProtocol) else _nothing

    def contributions(self) -> list:
        return [conv.counts for conv in self.convs.values()]


def _nothing(proto, data, pos, n, me, machine) -> None:
    pass


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
        proto.scan_pdu(ctx, packet)
    except Exception:  # noqa: BLE001 - the full decode shows it as an expert; its state is not modelled
        raise Bail from None


# --- the whole run ---------------------------------------------------------------------------------------------------

def protocol_tree(path, dispatcher, packets_of=None, limit: int | None = None) -> dict:
    """io,phs's tree ({name: [frames, bytes, children]}) of a capture file, or of its first `limit` frames (-c):
    the machine, then the full decode of the frames it left (or of all of them when a global bound could be
    reached), merged in first-seen order. `packets_of(frames, dispatcher)`: the decoder
    (api.session.packets_from_frames)."""
    if packets_of is None:
        from ..session import packets_from_frames as packets_of
    fused = Fused(dispatcher)
    useful = fused.run(path, limit)
    parts = fused.contributions()
    fused.convs.clear()           # the state of the machine's conversations goes (and its reassembly budget)
    if not useful:
        return _tree(_full_counts(path, dispatcher, packets_of, None, limit)[0])
    counts, peak, charged = _full_counts(path, dispatcher, packets_of, fused.full, limit)
    if peak + fused.peak > PENDING.limit // 2 or charged + fused.charge_peak > STATE.limit:
        from ..engine.dispatch import Dispatcher
        fresh = Dispatcher(dispatcher.protocols.values(), dispatcher.settings)
        return _tree(_full_counts(path, fresh, packets_of, None, limit)[0])
    for part in parts:
        _add(counts, part)
    return _tree(counts)


def _full_counts(path, dispatcher, packets_of, keys, limit=None) -> tuple[dict, int, int]:
    """path -> [frames, bytes, first frame] of the frames of `keys` (None: every frame) among the first `limit`
    (None: all), decoded in full; and the highest pending reassembly and heavy state (engine.lifetime's charges)
    seen after a frame."""
    counts: dict = {}
    capture = open_capture(path)
    if keys is not None and not keys:
        capture.close()
        return counts, 0, 0
    first = islice(capture, limit)
    frames = first if keys is None else (f for f in first if key_of(f)[0] in keys)
    peak = charged = 0
    lifetimes = dispatcher.lifetimes
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
            if lifetimes.used > charged:
                charged = lifetimes.used
    finally:
        capture.close()
    return counts, peak, charged


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


def run_taps(path, dispatcher, taps, limit: int | None = None) -> None:
    """Fill every (unfiltered io,phs) tap of `taps` with the tree of the capture (of its first `limit` frames)."""
    root = protocol_tree(path, dispatcher, limit=limit)
    for tap in taps:
        tap.root = root
