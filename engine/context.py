"""The state one dissection carries: the bytes, the position, the values read so far, the tree being built."""
from __future__ import annotations

from functools import lru_cache

from .strings import c_string
from .tree import DataSource, ExpertInfo, Item


def bounded_put(table: dict, key, value, limit: int) -> None:
    """Per-conversation tables stay bounded: a new key beyond `limit` evicts the oldest one (insertion order).
    Its Lua twin is rt.bput; both evict at the same points, so both decode the same."""
    if key not in table and len(table) >= limit:
        del table[next(iter(table))]
    table[key] = value


@lru_cache(maxsize=4096)
def reverse_direction(direction: str) -> str:
    """The other way of a conversation's direction ("a:port>b:port" -> "b:port>a:port"); remembered, as the
    analyses that ask (acknowledgements, learned roles) ask on every packet with the few directions there are."""
    a, _, b = direction.partition(">")
    return f"{b}>{a}"


NO_PREFS: dict = {}     # never written: a Ctx made outside a dispatcher decodes with every default


class Truncated(Exception):
    """Raised inside a table decode when a field runs past the end of its data: the packet decode stops there."""


class Ctx:
    """One protocol layer's decode of one packet.

    `data` is the whole frame (or a reassembled buffer) so that every item's offset is the real byte offset;
    `end` bounds this layer. `scopes` is the chain of value dicts (innermost last) that references look up.
    """

    __slots__ = ("data", "pos", "end", "tree", "scopes", "proto", "conv", "direction", "frame", "sources",
                 "source", "notes", "stack", "meta", "time", "demand", "prefs", "asked")

    def __init__(self, data: bytes, pos: int, end: int, tree: Item | None, proto, conv=None, direction=0,
                 frame: int = 0, sources: list[DataSource] | None = None):
        self.data = data
        self.pos = pos
        self.end = end
        self.tree = tree
        self.scopes: list[dict] = [{}]
        self.proto = proto
        self.conv = conv
        self.direction = direction
        self.frame = frame
        self.sources = sources if sources is not None else []
        self.source = 0
        self.notes: list[str] = []     # extra Info column text (e.g. "[Chunk 3 reassembled]")
        self.stack = None              # the frame's layer stack (engine.dispatch.Stack): handoff() goes through it
        self.meta: dict = {}           # facts a lower layer passes up with a handoff (ENet's channel, ...)
        self.time: float | None = None # the frame's capture time, as wslua's pinfo.abs_ts (secs + nsecs / 1e9)
        self.demand = None             # the abbrevs a run reads of this protocol (engine.demand); None: all
        self.asked = None              # the same when they are all plain fields of its tables: the table words
                                       # make items only for those (engine.fields), the others' values only
        self.prefs: dict = NO_PREFS    # -o values ("blank.block_map" -> "TRUE"): fields a preference guards read it

    def new_source(self, name: str, data: bytes) -> int:
        """Add a data source (a decompressed or reassembled buffer) to the packet; its index for Item.source."""
        self.sources.append(DataSource(name, data))
        return len(self.sources) - 1

    def unranged(self, item: Item) -> tuple[int, int]:
        """(offset, source) where wslua puts an item added with no byte range (TreeItem:add(field, value)): offset
        0 of the tvb the dissector was called with, the layer's start (what -T pdml and jsonraw show)."""
        stack = self.stack
        d = stack.d if stack is not None else None
        if d is not None and d.transport == "tcp" and getattr(self.proto, "name", "") in ("rutentoy", "iceball"):
            return d.payload_offset, 0       # TCP: the plugin is called once on the segment's payload
        top = self.tree
        return (top.offset, top.source) if top is not None else (item.offset, item.source)

    def handoff(self, table: str, keys, start: int, end: int, data: bytes | None = None, source: int | None = None,
                meta: dict | None = None, late: bool = False) -> str | None:
        """Decode bytes [start, end) of `data` (default: this layer's data) as a new layer, with the protocol
        chosen by decode-as, then registration ports[table] for one of `keys`, then the heuristics of list
        `table` (Wireshark's dissector table then heuristic list). `source`: the data source index the bytes
        belong to (default this layer's). `meta`: facts for the new layer (ctx.meta). Returns the name of the
        protocol that took it, or None. `late`: decoded at the end of the frame, after every other layer and
        unlisted in frame.protocols (the plugin's postdissector: engine.dispatch.Stack.run_late), its `source`
        the index of one, or the name of a data source of its own holding `data`, made when it is shown; returns
        None."""
        if self.stack is None:
            return None
        if late:
            self.stack.late.append((table, keys, self.data if data is None else data, start, end,
                                    self.source if source is None else source, self.direction, meta or {}))
            return None
        return self.stack.handoff(table, keys, self.data if data is None else data, start, end,
                                  self.source if source is None else source, self.direction, meta or {})

    def top_level(self, item: Item) -> Item:
        """Show `item` on the top level of the packet tree, after this layer (Wireshark's dissector adding to the
        tree it was given rather than to its own subtree); outside a frame's stack, under this layer."""
        layer = None if self.stack is None else next(
            (layer for layer in reversed(self.stack.layers) if layer.item is self.tree), None)
        if layer is None:
            return self.tree.add(item)
        if layer.after is None:
            layer.after = []
        layer.after.append(item)
        return item

    def charge_state(self, n: int) -> None:
        """This conversation now holds n more bytes of heavy state (an inflate window): counted against
        protodump.state_budget (engine.dispatch.Dispatcher.charge; outside a frame's stack, nothing counts)."""
        if self.stack is not None:
            self.stack.dispatcher.charge(self.stack, n)

    def end_conversation(self) -> None:
        """The conversation ends with this packet (ENet DISCONNECT, ...): its state is freed shortly after
        (engine.lifetime)."""
        if self.stack is not None:
            self.stack.ended = True

    @property
    def values(self) -> dict:
        return self.scopes[-1]

    def lookup(self, name: str):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def need(self, size: int, what: str, parent: Item | None) -> None:
        """Stop the decode with a Malformed expert when `size` bytes are not there."""
        left = self.end - self.pos
        if size > left:
            self.expert(parent, "malformed",
                        f"Truncated: {what} needs {size} byte{'s' if size != 1 else ''}, {max(left, 0)} left")
            raise Truncated()

    def expert(self, item: Item | None, kind: str, message: str) -> None:
        """Add expert info of one of the protocol's registered kinds (see engine.protocol.EXPERTS)."""
        group, severity = self.proto.experts[kind]
        message = c_string(message)        # (a wire string in it: Wireshark's message is a C string)
        info = ExpertInfo(f"{self.proto.name}.{kind}", group, severity, message)
        (item if item is not None else self.tree).expert(info)
