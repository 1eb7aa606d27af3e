"""The fused machine (analysis/stats_fused.py) for runs that read a few game fields per frame: `-T fields -e ...`
(output/fields_fused.py) and `-q -z <proto>,types` (analysis/types_fused.py). Besides the state it follows, it
dissects each PDU whose protocol is asked of as the full decode does with a demand (engine.demand: items for the
asked fields only), and keeps the frame's such layers for the run to record.

A run asks only what the machine reads from a modelled frame's headers and the plain fields of the protocols whose
PDUs it dissects itself: those it frames (a table protocol over UDP, a stream or channel protocol over TCP) and those
ENet and WebSocket hand their messages to (its stand-in stacks dissect them when asked: AskingHands,
AskingWsStack). Two passes over the file, as for io,phs:
  1. the machine; each frame it models gets a record (the run's: a -T fields line, a statistic's contribution),
     spooled to a temporary file with its conversation, not kept in memory;
  2. every frame in order: the spooled record of a conversation the machine kept to its end, or the full decode's
     packet for the frames of a conversation it gave up (engine.dispatch, from the conversation's first frame).
When a bound of the whole capture could matter (analysis.stats_fused.Fused.hopeless) or the machine models too
little, the run decodes every frame in full instead: nothing is given out before that is known.
"""
from __future__ import annotations

import struct
import tempfile
from itertools import islice

from ..capture.files import open_capture
from ..engine.channel_protocol import ChannelProtocol
from ..engine.context import Ctx
from ..engine.message_protocol import MessageProtocol
from ..engine.protocol import Protocol
from ..engine.stream_protocol import StreamProtocol
from ..engine.tree import Item
from ..reassembly.budget import PENDING, STATE
from .fused_keys import dotted
from .fused_ws import Bail, WsStack
from .stats_fused import Fused, Hands

# the game protocols whose plain fields the machine decodes (not ENet's or WebSocket's own: their dissection here
# builds none)
DISSECTED = (Protocol, StreamProtocol, ChannelProtocol, MessageProtocol)
_RECORD = struct.Struct("<IIi")      # frame number, conversation id, record length in bytes


def plain_fields(proto, demand) -> bool:
    """Whether what the run asks of `proto` the machine can decode: plain table fields of a protocol it dissects."""
    return type(proto) in DISSECTED and demand.plain(proto, demand.of(proto.name)) is not None


class FusedItems(Fused):
    """Pass 1 (Fused) that also dissects the asked protocols' PDUs with their items, and spools a record for every
    frame it models (record(): the subclass's)."""

    def __init__(self, dispatcher, protocols, spool):
        super().__init__(dispatcher)
        self.spool = spool
        demand = self.demand = dispatcher.demand
        # the protocols asked of: (Ctx.demand, Ctx.asked) for their dissection
        self.asked = {p.name: (demand.of(p.name), demand.plain(p, demand.of(p.name)))
                      for p in protocols if demand.of(p.name)}
        self.ids: dict = {}          # conversation key (None: frames of no IPv4 conversation) -> its id in the spool
        self.placed = self.parsed = None     # the frame's conversation key and header fields (key_of)
        self.layers: list = []       # the frame's dissected layers: (protocol name, its tree)
        self.resume = None           # run(): the frame from which the full decode takes over, if it must

    def record(self, key, frame) -> bytes:
        """A modelled frame's record, from self.layers and self.parsed."""
        raise NotImplementedError

    def frame(self, frame) -> None:
        before, self.layers, self.placed = self.modelled, [], None
        super().frame(frame)
        if self.placeless:
            return                   # (no fused run at all)
        key = self.placed
        ident = self.ids.get(key)
        if ident is None:
            ident = self.ids[key] = len(self.ids)
        # modelled (a conversation given up counts its frames out), or the full decode's
        text = self.record(key, frame) if self.modelled > before else b""
        self.spool.write(_RECORD.pack(frame.number, ident, len(text)))
        self.spool.write(text)

    def place(self, key, parsed, frame, now: float) -> None:
        self.placed, self.parsed = key, parsed
        super().place(key, parsed, frame, now)

    def leave(self, key) -> None:
        self.placed = key
        super().leave(key)

    # the game layers: asked ones dissected where the machine cuts a PDU or a stand-in stack takes a hand-up
    def udp_path(self, conv, parsed, frame) -> tuple:
        path = super().udp_path(conv, parsed, frame)
        layers = path[3:]            # after eth, ip, udp: the protocol, then what it handed up (ENet's messages)
        if layers and layers[0] in self.asked:
            if len(layers) > 1:
                raise Bail           # (a protocol with hand-ups is not one whose fields are decoded here)
            ends, sport, dport, size = parsed
            direction = f"{dotted(ends[0][0])}:{sport}>{dotted(ends[1][0])}:{dport}"
            self.decode(self.dispatcher.protocols[layers[0]], frame.data, 42, 42 + size, conv.state, direction)
        return path

    def hands(self, conv):
        return AskingHands(self, conv)

    def ws_stack(self, conv, frame):
        return AskingWsStack(self, conv.others, frame)

    def cut(self, conv, me, proto, payload: bytes, lost: bool) -> int:
        before = len(self.layers)
        count = super().cut(conv, me, proto, payload, lost)
        if proto.name in self.asked and count != len(self.layers) - before:
            raise Bail               # an undecoded-data layer (a direction that cannot be framed, bytes skipped to
        return count                 # resynchronise): its items are the full decode's

    def seen(self, proto):
        if proto.name not in self.asked:
            return super().seen(proto)
        return self._seen_asked

    def _seen_asked(self, proto, data, pos, n, me, machine) -> None:
        self.decode(proto, data, pos, pos + n, me.conv, me.name)

    def decode(self, proto, data: bytes, start: int, end: int, conv: dict, direction: str, source: int = 0,
               meta: dict | None = None) -> None:
        """The PDU's dissection as engine.dispatch.Stack.dissect runs it with a demand (items for the asked
        fields only)."""
        tree = Item(proto.info, proto.description, start, end - start, proto.description, False, 0)
        ctx = Ctx(data, start, end, tree, proto, conv, direction, self.number)
        ctx.time, ctx.prefs, ctx.source = self.now, self.prefs, source
        if meta:
            ctx.meta = meta
        ctx.demand, ctx.asked = self.asked[proto.name]
        try:
            proto.dissect(ctx, self.prefs)
        except Exception:  # noqa: BLE001 - the full decode shows it as an expert; not modelled
            raise Bail from None
        self.layers.append((proto.name, tree))

    def ends_text(self) -> tuple[str, str]:
        """The frame's "address:port" of its sender and its receiver (analysis.fused_keys)."""
        (src, sport), (dst, dport) = self.parsed[0]
        return f"{dotted(src)}:{sport}", f"{dotted(dst)}:{dport}"


class AskingHands(Hands):
    """Hands, which names the layers a datagram's dissection hands up (ENet's messages), that also dissects those
    whose fields are asked, in their conversation (engine.dispatch.Stack.handoff with a demand)."""

    __slots__ = ("machine", "others")

    def __init__(self, machine: FusedItems, conv):
        super().__init__(machine.dispatcher)
        self.machine, self.others = machine, conv.others

    def taken(self, proto, data, start, end, source, direction, meta) -> None:
        _ask(self.machine, self.others, proto, data, start, end, source, direction, meta)


class AskingWsStack(WsStack):
    """WsStack, which names the layers WebSocket hands its messages to, that also dissects those whose fields are
    asked, there and in the postdissector's hand-ups at the end of the frame."""

    __slots__ = ()

    def taken(self, proto, data, start, end, source, direction, meta) -> None:
        _ask(self.machine, self.others, proto, data, start, end, source, direction, meta)


def _ask(machine: FusedItems, others: dict, proto, data, start, end, source, direction, meta) -> None:
    """A hand-up's dissection when its fields are asked, in its protocol's conversation dict (one a protocol,
    both ways: engine.dispatch.Stack.conversation)."""
    if proto.name in machine.asked:
        state = others.get(proto.name)
        if state is None:
            state = others[proto.name] = {}
        machine.decode(proto, data, start, end, state, direction, source, meta)


def run(machine: FusedItems, path, limit, kept_record, full_packet, begin=None, packets_of=None):
    """Both passes: `machine` over the capture file (its first `limit` frames), then in frame order
    kept_record(bytes) for each frame it modelled and full_packet(packet) for each one the full decode takes.
    `begin()` runs once it is known that the machine's records are used, before the first of them. Returns None
    (nothing given out) when the whole capture must be decoded in full, else the machine, whose `resume` is None
    when every frame was given out, or the number of the frame from which the full decode must take over: the
    full decode's pending reassembly or heavy state with the machine's highest came near a bound of the decoder
    (as analysis.stats_fused.protocol_tree checks), so what one pass does from there may differ."""
    if packets_of is None:
        from ..session import packets_from_frames as packets_of
    dispatcher = machine.dispatcher
    useful = machine.run(path, limit)
    machine.convs.clear()
    if not useful:
        return None
    spool = machine.spool
    spool.seek(0)
    kept = {ident for key, ident in machine.ids.items() if key not in machine.full}
    if begin is not None:
        begin()
    records = _records(spool)
    if len(kept) == len(machine.ids):
        for _number, _ident, text in records:     # every frame modelled: the capture is not read again
            kept_record(text)
        return machine
    capture = open_capture(path)
    lifetimes = dispatcher.lifetimes
    pending, charged = PENDING.limit // 2 - machine.peak, STATE.limit - machine.charge_peak
    try:
        for packet in packets_of(_full_frames(capture, limit, kept, records, kept_record), dispatcher=dispatcher):
            if PENDING.used > pending or lifetimes.used > charged:
                machine.resume = packet.frame.number
                break
            full_packet(packet)
    finally:
        capture.close()
    return machine


def spool():
    """The temporary file a machine spools its records to."""
    return tempfile.TemporaryFile()


def _full_frames(capture, limit, kept, records, kept_record):
    """The frames the full decode takes, in order; the machine's records of the others given out between them."""
    for frame in islice(capture, limit):
        number, ident, text = next(records)
        if number != frame.number:
            raise RuntimeError(f"fused spool out of step at frame {frame.number} (a record of frame {number})")
        if ident in kept:
            kept_record(text)
        else:
            yield frame


def _records(spool):
    """Each frame's record, in frame order: (frame number, conversation id, bytes)."""
    read, size = spool.read, _RECORD.size
    while True:
        head = read(size)
        if len(head) < size:
            return
        number, ident, length = _RECORD.unpack(head)
        yield number, ident, read(length)
