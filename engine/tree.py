"""The packet tree: what every dissector produces and every output form renders.

It mirrors Wireshark's proto_tree closely on purpose, because the generated Lua plugin builds the very same
tree inside tshark and the two are compared byte for byte:

- a `FieldInfo` is a registered field (a Lua ProtoField): abbrev, display name, type, base, value names, mask;
- an `Item` is one node: a field with its value, or a plain text label; a byte range (offset, length) in one
  data source (the frame, or a reassembled/inflated buffer); children; expert infos; "generated" (shown in
  [brackets], no bytes of its own).
"""
from __future__ import annotations

from dataclasses import dataclass, field as dc_field
from functools import lru_cache
from typing import Any

# Expert severities and groups: the numeric values of Wireshark's epan/proto.h, because tshark's JSON prints them.
COMMENT, CHAT, NOTE, WARN, ERROR = 0x00100000, 0x00200000, 0x00400000, 0x00600000, 0x00800000
SEVERITY_NAMES = {COMMENT: "Comment", CHAT: "Chat", NOTE: "Note", WARN: "Warning", ERROR: "Error"}

CHECKSUM, SEQUENCE, RESPONSE_CODE, REQUEST_CODE = 0x01000000, 0x02000000, 0x03000000, 0x04000000
UNDECODED, REASSEMBLE, MALFORMED, DEBUG, PROTOCOL = 0x05000000, 0x06000000, 0x07000000, 0x08000000, 0x09000000
COMMENTS_GROUP = 0x0b000000        # PI_COMMENTS_GROUP: a pcapng packet comment
DEPRECATED = 0x0e000000            # PI_DEPRECATED
GROUP_NAMES = {
    CHECKSUM: "Checksum", SEQUENCE: "Sequence", RESPONSE_CODE: "Response", REQUEST_CODE: "Request",
    UNDECODED: "Undecoded", REASSEMBLE: "Reassemble", MALFORMED: "Malformed", DEBUG: "Debug",
    PROTOCOL: "Protocol", COMMENTS_GROUP: "Comment", DEPRECATED: "Deprecated",
}

@lru_cache(maxsize=4096)   # the same few (value, mask) pairs recur in every packet
def bit_picture(value: int, mask: int, width: int) -> str:
    """Wireshark's dotted bit line ("0100 ....", ".... ...1"): MSB first, the mask's bits shown, the others as
    dots, a space every four bits. One implementation for every layer and output."""
    out = []
    for i in range(width - 1, -1, -1):
        b = 1 << i
        out.append(("1" if value & b else "0") if mask & b else ".")
        if i and i % 4 == 0:
            out.append(" ")
    return "".join(out)


# Field types, named as Wireshark's Lua ProtoField constructors are.
INTEGER_TYPES = {"uint8": 1, "uint16": 2, "uint24": 3, "uint32": 4, "uint64": 8,
                 "int8": 1, "int16": 2, "int24": 3, "int32": 4, "int64": 8}
FIELD_TYPES = set(INTEGER_TYPES) | {"float", "double", "string", "bytes", "bool", "none", "protocol"}

# Display bases, named as Wireshark's `base.*`.
BASES = {"DEC", "HEX", "DEC_HEX", "HEX_DEC", "NONE"}


@dataclass(eq=False)
class FieldInfo:
    """One registered field, like a Lua ProtoField / a C hf_register_info entry."""

    abbrev: str
    name: str
    ftype: str
    base: str = "NONE"
    values: dict[int, str] | None = None
    mask: int = 0
    bits: int = 0            # for bool fields with a mask: the width of the parent value in bits
    description: str = ""
    json_format: tuple | None = dc_field(default=None, repr=False, compare=False)   # cached by output/json_out
    # Makes the -V label of an item of this field when the item has none: labels only -V reads are not
    # formatted during decoding (JSON and summaries never need them).
    labeler: Any = dc_field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.ftype not in FIELD_TYPES:
            raise ValueError(f"{self.abbrev}: unknown field type {self.ftype!r}")
        if self.base not in BASES:
            raise ValueError(f"{self.abbrev}: unknown base {self.base!r}")
        if self.ftype in INTEGER_TYPES and self.base == "NONE":
            self.base = "DEC"


@dataclass(eq=False)
class ExpertInfo:
    """An expert item: registered like a Lua ProtoExpert (abbrev, group, severity), with this packet's text."""

    abbrev: str
    group: int
    severity: int
    message: str


class Item:
    """One node of the packet tree (a slots class, not a dataclass: dissectors make many of these per packet)."""

    __slots__ = ("field", "value", "offset", "length", "label", "generated", "source", "children", "expert_info")

    def __init__(self, field: FieldInfo | None, value: Any = None, offset: int = 0, length: int = 0,
                 label: str | None = None, generated: bool = False, source: int = 0):
        self.field = field              # None: a plain text item
        self.value = value
        self.offset = offset
        self.length = length
        self.label = label              # the -V line; None: made from the field, its value and its value names
        self.generated = generated      # shown in [brackets]: computed, not read from bytes
        self.source = source            # index of the data source (0 = the frame)
        self.children: list[Item] | tuple[Item, ...] | None = None   # a tuple: frozen, shared between packets
        self.expert_info: ExpertInfo | None = None   # set on the expert item itself

    def add(self, item: Item) -> Item:
        kids = self.children
        if kids is None:
            self.children = [item]
        elif kids.__class__ is list:
            kids.append(item)
        else:                           # a frozen (tuple) subtree shared between packets: copy, never mutate
            self.children = [*kids, item]
        return item

    def expert(self, info: ExpertInfo) -> Item:
        """Hang an expert item under this one, after the children added so far (as Wireshark does)."""
        node = Item(None, None, self.offset, 0,
                    f"Expert Info ({SEVERITY_NAMES[info.severity]}/{GROUP_NAMES[info.group]}): {info.message}")
        node.expert_info = info
        return self.add(node)

    def walk(self):
        """This item and every item under it, in tree order (pre-order). A loop, not nested generators: trees
        are deep enough that one generator per level made this a statistic's main cost."""
        todo = [self]
        pop, push = todo.pop, todo.extend
        while todo:
            node = pop()
            yield node
            kids = node.children
            if kids:
                push(kids[::-1])

    def find(self, abbrev: str) -> Item | None:
        for node in self.walk():
            if node.field is not None and node.field.abbrev == abbrev:
                return node
        return None


class TextItem(Item):
    """A C dissector's text item with children (tshark's "[Timestamps]" under tcp): JSON keys it by its label,
    where a Lua text item is keyed "_ws.lua.text"."""

    __slots__ = ()


class HiddenItem(Item):
    """A hidden item (Wireshark's PROTO_ITEM_SET_HIDDEN): in JSON and -T fields, never in -V."""

    __slots__ = ()


class SubtreeMemo:
    """Frozen subtrees (tuples of Items, or any value holding them) built once per key and shared between
    packets, bounded in bytes: when the next one would pass `limit` bytes, the memo starts over. Each entry
    also knows the field abbrevs in it, so a run that reads none of them (engine.demand) can leave it out."""

    __slots__ = ("table", "nbytes", "limit")

    def __init__(self, limit: int):
        self.table: dict = {}
        self.nbytes = 0
        self.limit = limit

    def get(self, key, build, *args):
        hit = self.table.get(key)
        if hit is None:
            hit = self.add(key, build(*args))
        return hit[0]

    def get_for(self, demand, key, build, *args):
        """As get, or () when `demand` (a set of abbrevs, None: everything) asks for nothing in the subtree."""
        hit = self.table.get(key)
        if hit is None:
            hit = self.add(key, build(*args))
        return hit[0] if demand is None or not demand.isdisjoint(hit[1]) else ()

    def add(self, key, value) -> tuple:
        if not isinstance(value, tuple):
            value = tuple(value)
        size, names = _footprint(value)
        if self.nbytes + size > self.limit:
            self.table.clear()
            self.nbytes = 0
        self.nbytes += size
        hit = self.table[key] = (value, frozenset(names))
        return hit

    def __len__(self) -> int:
        return len(self.table)

    def clear(self) -> None:
        self.table.clear()
        self.nbytes = 0



BLOCK_MEMO_BYTES = 4 << 20       # bytes of shared subtrees one building block keeps


def frozen(memo: SubtreeMemo, ctx, key, build, *args) -> tuple:
    """The children a building block makes for `key`, built once and shared between packets as a frozen tuple
    (see Item): many values repeat across a session (an idle entity's velocity, the acks of one direction), and
    outputs memoise the text of a frozen subtree too. Bounded in bytes; none when the run reads nothing in it
    (ctx.demand, engine.demand)."""
    return memo.get_for(ctx.demand, key, build, *args)

def _footprint(value) -> tuple[int, set]:
    """Bytes a memo entry keeps alive (its items, their labels and values, the tuples; not the shared FieldInfos)
    and the field abbrevs in it."""
    from sys import getsizeof
    size, names, todo = 0, set(), [value]
    while todo:
        obj = todo.pop()
        size += getsizeof(obj)
        if isinstance(obj, Item):
            if obj.field is not None:
                names.add(obj.field.abbrev)
            for part in (obj.label, obj.value):
                if part is not None and not isinstance(part, (bool, int)):
                    size += getsizeof(part)
            if obj.children:
                todo.append(obj.children)
        elif isinstance(obj, (tuple, list)):
            todo.extend(obj)
        elif isinstance(obj, str) or obj is None:
            pass
    return size, names


@dataclass(eq=False)
class DataSource:
    """A named byte buffer the tree points into: the frame, or one made by reassembly or decompression."""

    name: str
    data: bytes


@dataclass(eq=False)
class Layer:
    """A protocol layer of one packet: its name (the JSON layer key) and its top (protocol) item."""

    proto: str
    item: Item
    # False for a PDU after the first that one dissector call decodes (the generated Lua cuts a whole TCP segment
    # or SCTP chunk in one call): tshark lists a protocol in frame.protocols once per call
    listed: bool = True
    # items tshark shows on the top level of the tree right after this layer, each as a layer of its own (a
    # WebSocket continuation frame's websocket.payload.continue): engine.context.Ctx.top_level
    after: list | None = None
    # protocols inside this layer's tree, listed after it in frame.protocols (an HTTP continuation's data; io,phs
    # counts no such protocol)
    nested: tuple = ()
