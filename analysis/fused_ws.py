"""The fused io,phs machine's model of a WebSocket connection (analysis/stats_fused.py): each PDU the machine cuts
is dissected by the real WebSocket dissector (dissectors/websocket.py: handshake, frames, fragments, inflation,
the same state) under a stand-in stack (WsStack) that only names the layers the full decode's stack would make:
the `http` or `websocket` layer, the messages' hand-ups (their protocol's own dissection skipped, as the full
decode skips it when nothing is asked of it: own_state_only), the `data` layer of a message nobody takes, and the
hand-ups the plugin's postdissector makes at the end of the frame. Anything the stand-in does not model raises
Bail (the conversation goes to the full decode)."""
from __future__ import annotations

from ..dissectors.websocket import Inflater
from ..engine.context import Ctx
from ..engine.tree import Item, Layer



class Bail(Exception):
    """The conversation does something the machine does not model: the full decode takes it."""


class WsStack:
    """Stands in for engine.dispatch.Stack under the WebSocket dissector: the layers it would make, by name."""

    __slots__ = ("machine", "others", "layers", "late", "ended", "frame", "d", "depth", "fragmented")

    def __init__(self, machine, others: dict, frame):
        self.machine, self.others, self.frame = machine, others, frame
        self.layers: list[Layer] = []
        self.late: list[tuple] = []
        self.ended = False
        self.d = None                 # no standard decode: websocket's pdu_size notes nothing
        self.depth = 1
        self.fragmented = False       # (Stack.fragmented)

    @property
    def dispatcher(self):
        """Ctx.charge_state calls stack.dispatcher.charge(stack, n) (a property: no reference cycle, which would
        keep the machine, and the dispatcher's reassembly budget, alive until a collection)."""
        return self

    def charge(self, stack, n: int) -> None:
        self.machine.charge(n)

    def lookup(self, table: str, keys, payload: bytes):
        """Dispatcher.lookup, the heuristics given this connection's dicts (the machine models WebSocket only
        without decode-as and with at most one protocol on the "ws" list: the lookups it makes here change no
        order the full decode's lookups see)."""
        others = self.others
        return self.machine.dispatcher.lookup(table, keys, payload, lambda p: others.setdefault(p.name, {}))

    def named(self, proto) -> str:
        if not getattr(proto, "own_state_only", False):
            raise Bail                 # it would be dissected: its own hand-ups, its own state
        return proto.name

    def handoff(self, table, keys, data, start, end, source, direction, meta):
        if start >= end:
            return None
        proto = self.lookup(table, keys, data[start:end])
        if proto is None:
            return None
        self.layers.append(Layer(self.named(proto), None))
        self.taken(proto, data, start, end, source, direction, meta)
        return proto.name

    def taken(self, proto, data, start, end, source, direction, meta) -> None:
        """A hand-up the stand-in names: nothing more here (analysis.fused_items dissects the asked ones)."""

    def call_silently(self, table, keys, data, start, end):
        if start >= end:
            return None
        proto = self.lookup(table, keys, data[start:end])
        return None if proto is None else self.named(proto)

    def dissect(self, proto, data, start, end, source=0, direction=None, meta=None, conv=None):
        if proto.name != "data":
            raise Bail
        layer = Layer("data", None)
        self.layers.append(layer)
        return layer

    def late_names(self) -> list[str]:
        """The hand-offs kept for the end of the frame (Stack.run_late): the names of those taken."""
        names = []
        for table, keys, data, start, end, source, direction, meta in self.late:
            proto = self.lookup(table, keys, data[start:end]) if start < end else None
            if proto is not None:
                names.append(self.named(proto))
                self.taken(proto, data, start, end, source, direction, meta)
        self.late = []
        return names


class LeanInflater(Inflater):
    """dissectors.websocket.Inflater's decisions (Inflater._inflate: what a message inflates to, or why not; where
    the stream then stands) without what only the output shows: the plugin's two buffers (`last`), tshark's own
    out-of-step context (`wireshark_out`), and the window's bytes (only its length, which the deflate walk reads).
    The connection's WebSocket state is the full decode's otherwise: the layers follow from the same decisions."""

    def __init__(self, fresh: bool):
        super().__init__(fresh)
        self.window_len = self.carry_out_len = 0

    def inflate(self, data: bytes, single: bool = True) -> tuple[bytes | None, str | None]:
        return self._inflate(data, single)

    def _restart(self) -> None:
        self.window_len = self.carry_out_len = 0

    def _shown(self, data: bytes, out: bytes, single: bool) -> None:
        pass

    def _carried_out(self) -> int:
        return self.carry_out_len

    def _window_len(self) -> int:
        return self.window_len

    def _advance(self, out: bytes) -> None:
        self.window_len = min(self.WINDOW, self.window_len + self.carry_out_len + len(out))
        self.carry_out_len = 0

    def _carry(self, out: bytes) -> None:
        self.carry_out_len += len(out)


def pdu_layers(machine, conv, me, proto, data: bytes, pos: int, n: int, stack: WsStack) -> None:
    """Dissect one WebSocket PDU (data[pos:pos + n]) as the full decode does, its layers named in `stack`."""
    tree = Item(proto.info, proto.description, pos, n, proto.description, False, 0)
    first = len(stack.layers)
    stack.layers.append(Layer(proto.name, tree))
    ctx = Ctx(data, pos, pos + n, tree, proto, me.conv, me.name, machine.number)
    ctx.stack, ctx.time, ctx.prefs = stack, machine.now, machine.prefs
    try:
        proto.dissect(ctx, machine.prefs)
    except Bail:
        raise
    except Exception:  # noqa: BLE001 - the full decode shows it as an expert; not modelled
        raise Bail from None
    layer = stack.layers[first]
    if layer.proto == "websocket" and layer.after:
        # the items it put on the top level, which io,phs counts (analysis.stats_phs.protocol_path): a
        # continuation frame's payload, a fragmented message's reassembly
        stack.layers[first + 1:first + 1] = [Layer(item.field.abbrev, None) for item in layer.after
                                             if item.field is not None]


def frame_names(stack: WsStack) -> list[str]:
    """The frame's game layer names in protocol_path's order: its layers, then the postdissector's."""
    return [layer.proto for layer in stack.layers] + stack.late_names()
