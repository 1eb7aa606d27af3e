"""The other JSON forms of tshark 4.0 (epan/print.c, write_json_proto_tree): `-T json` with `-j`/`-J` (protocol
filters), with `-x` (`<key>_raw` arrays), `-T jsonraw` (only the `_raw` arrays), and `-T json|ek -e FIELD`.

Plain `-T json` stays on output/json_out.py's fast path; these forms are rarer and are built here from the same
tree and the same value formatters (so the values always agree), as a small JSON model: an object is a list of
(key, value) pairs (duplicate keys kept, as tshark 4.0 prints them), a value a str (already escaped), a raw array or
an object. The rules, from tshark's write_json_proto_node_list:
- `<key>_raw`: [hex of the field's bytes (or "%X" of a masked integer's value), position, length, bitmask,
  Wireshark's ftenum number]; with text, only for items with a length; never for text items;
- a value when the field has one; its children as `<key>_tree` (or `<key>` for a protocol/FT_NONE item);
- -j NAMES: an object whose key is not listed is `{"filtered": key}` (values are still printed); -J: a listed
  key's whole subtree is printed.
"""
from __future__ import annotations

import time

from ..capture.field_types import TSHARK_FTENUM, TSHARK_TYPES
from ..capture.fields import PICTURE_ONLY_MASK
from ..engine.tree import MALFORMED, TextItem
from . import json_out, lua_fakes
from . import tshark_values as tv
from .lua_fakes import Mark, lua_calls

# Wireshark 4.0's enum ftenum, for the last member of a _raw array
FTENUM = {"none": 0, "protocol": 1, "bool": 2, "uint8": 4, "uint16": 5, "uint24": 6, "uint32": 7, "uint64": 11,
          "int8": 12, "int16": 13, "int24": 14, "int32": 15, "int64": 19, "float": 22, "double": 23,
          "string": 26, "stringz": 27, "bytes": 30, "ipv4": 32, "ipv6": 33, "framenum": 35}


class Raw(list):
    """A _raw array: [hex, pos, len, mask, ftenum]."""


class Options:
    def __init__(self, *, text: bool = True, raw: bool = False, names: str | None = None,
                 include_children: bool = False):
        self.text, self.raw = text, raw
        self.names = set(names.split()) if names is not None else None
        self.include_children = include_children


def item_length(item) -> int:
    """The item's length in bytes (a byte field sized by an earlier field may leave it to its value)."""
    if item.length is not None:
        return item.length
    return len(item.value) if isinstance(item.value, (bytes, bytearray)) else 0


def source_data(packet, index: int) -> bytes:
    """The bytes of data source `index` of the packet (0, or one it does not have: the frame's)."""
    sources = packet.sources or ()
    return sources[index].data if index < len(sources) else packet.frame.data


CLAMPED = frozenset(("none", "protocol"))


def field_length(item, packet, source: int = 0) -> int:
    """fi->length, the length tshark's outputs give (PDML size, `_raw`): proto.c (get_hfi_length) cuts an
    FT_PROTOCOL or FT_NONE item (a text item is one) to the bytes captured from its start (a TCP option running
    past a short segment); other items keep theirs (PDML's "field length invalid!")."""
    n = item_length(item)
    f = item.field
    if n and (f is None or f.ftype in CLAMPED):
        n = max(0, min(n, len(source_data(packet, item.source or source)) - item.offset))
    return n




def masked(item) -> bool:
    """Whether tshark prints the item's value ("%X") where it would print its bytes (a field with a bitmask)."""
    f = item.field
    return f is not None and bool(f.mask) and isinstance(item.value, (int, bool)) \
        and f not in PICTURE_ONLY_MASK


def raw_hex(item, packet, source: int = 0) -> str:
    """The hex of the item's bytes in its data source (an item with source 0 is in its parent's, `source`)."""
    f = item.field
    if masked(item):
        if f.ftype == "bool":          # a boolean's value is 0 or 1, whatever the bit
            return "1" if tv._bool(f, item.value) else "0"
        return "%X" % (int(item.value) & 0xFFFFFFFFFFFFFFFF)
    data = source_data(packet, item.source or source)
    length = field_length(item, packet, source)
    if length and item.offset + length > len(data):   # print.c: an item past its buffer's end (never one of 0
        return "field length invalid!"                  # bytes: tvb_captured_length_remaining gives 0 past it)
    return data[item.offset:item.offset + length].hex()


# the type tshark 4.0 registers where protodump's field table keeps a simpler one (capture/field_types.py): the
# last member of their _raw
RAW_FTENUM = {**{abbrev: TSHARK_FTENUM[ft] for abbrev, ft in TSHARK_TYPES.items()}, "frame.time_utc": 24,
              # packet-icmpv6.c registers these twice, as bytes (what -G fields names) and as a MAC address (what an
              # Ethernet link-layer address option's item is)
              **dict.fromkeys(("icmpv6.opt.linkaddr", "icmpv6.opt.src_linkaddr", "icmpv6.opt.target_linkaddr"),
                              TSHARK_FTENUM["FT_ETHER"])}


# fields Wireshark 4.0 adds with no tvb (tcp.c: proto_tree_add_uint(tree, hf_tcp_completeness, NULL, ...)): no hex,
# position 0, as an expert item's
NO_TVB = frozenset(("tcp.completeness",))


def _raw(item, packet, source: int = 0) -> Raw:
    f = item.field
    if f is None:
        return Raw([raw_hex(item, packet, source), item.offset, field_length(item, packet, source), 0, 1])
    if f.abbrev in NO_TVB:
        return Raw([None, 0, 0, f.mask, RAW_FTENUM.get(f.abbrev) or FTENUM.get(f.ftype, 0)])
    mask = 0 if f in PICTURE_ONLY_MASK else f.mask
    return Raw([raw_hex(item, packet, source), item.offset, field_length(item, packet, source), mask,
                RAW_FTENUM.get(f.abbrev) or FTENUM.get(f.ftype, 0)])


def _expert_members(info) -> list:
    members = []
    for key, value in tv.expert_pairs(info):
        if isinstance(value, str):
            members.append((key, tv.json_escape(value)))
        else:
            members.append((key, [(k, tv.json_escape(v)) for k, v in value]))
    return members


def _expert_raw(info) -> list:
    """jsonraw: an expert item has no data source, so its _raw arrays have no hex: [pos, len, mask, ftenum]."""
    out = [(tv.EXPERT_KEY + "_raw", Raw([None, 0, 0, 0, 1])),
           (tv.EXPERT_KEY, [(info.abbrev + "_raw", Raw([None, 0, 0, 0, 0])),
                            ("_ws.expert.message_raw", Raw([None, 0, 0, 0, 26])),
                            ("_ws.expert.severity_raw", Raw([None, 0, 0, 0, 7])),
                            ("_ws.expert.group_raw", Raw([None, 0, 0, 0, 7]))])]
    if info.group == MALFORMED:
        out.append((tv.MALFORMED_KEY + "_raw", Raw([None, 0, 0, 0, 1])))
    return out


def _members(kids, packet, opts: Options, names, source: int = 0) -> list:
    """The pairs of one object (the children `kids`, in data source `source`), under the filter `names` (None: no
    filter)."""
    out: list = []
    for item in kids or ():
        f = item.field
        if f is None and item.expert_info is not None:
            for key, value in (_expert_members if opts.text else _expert_raw)(item.expert_info):
                filtered = names is not None and isinstance(value, list) and not isinstance(value, Raw) \
                    and key not in names
                out.append((key, [("filtered", key)] if filtered else value))
            continue
        text_item = f is None
        if text_item:
            key = tv.json_escape(item.label) if item.__class__ is TextItem else tv.LUA_TEXT_KEY
            has_value = False
        else:
            key = f.abbrev
            has_value = f.ftype not in ("none", "protocol")
        if opts.raw and (not opts.text or item_length(item) > 0) and not text_item:
            out.append((key + "_raw", _raw(item, packet, source)))
        if opts.text and has_value:
            conv = (f.json_format or json_out._format_of(f))[1]
            out.append((key, conv(item.value)))
        if item.children:
            child_key = key + "_tree" if has_value else key
            if names is not None and key not in names:
                out.append((child_key, [("filtered", key)]))
            else:
                inner = None if opts.include_children else names
                out.append((child_key, _members(item.children, packet, opts, inner, item.source or source)))
        elif not has_value and (opts.text or (opts.raw and text_item)):
            if f is not None and f.ftype == "protocol":
                out.append((key, tv.json_escape(item.label or f.name)))
            else:
                out.append((key, ""))
    return out


def _fake(at: int, opts: Options) -> tuple:
    """wslua's `_ws.lua.fake` item at `at` (FT_NONE, no length: no `_raw` beside its text)."""
    return (tv.LUA_FAKE_KEY, "") if opts.text else (tv.LUA_FAKE_KEY + "_raw", Raw(["", at, 0, 0, 0]))


def layers(packet, opts: Options) -> list:
    """The `layers` object of one packet: its layers and wslua's fake items (output/lua_fakes.py; a -j worker's
    marks as they come)."""
    out: list = []
    for layer, calls in lua_calls(packet, lua_fakes.MARKING):
        out.extend(_fake(at, opts) if at.__class__ is int else (at, opts) for at in calls)
        if layer is None:
            break
        top = layer.item
        key = layer.proto
        if top.field is not None and top.field.ftype not in ("none", "protocol") and not top.children:
            out.extend(_members([top], packet, opts, None, top.source))     # a field item on the top level
            continue
        if opts.raw and (not opts.text or item_length(top) > 0) and top.field is not None:
            out.append((key + "_raw", _raw(top, packet)))
        if top.children:
            if opts.names is not None and key not in opts.names:
                out.append((key, [("filtered", key)]))
            else:
                inner = None if opts.include_children else opts.names
                out.append((key, _members(top.children, packet, opts, inner, top.source)))
        elif opts.text:
            out.append((key, tv.json_escape(top.label or "")))
    return out


def dump(value, depth: int) -> str:
    """tshark's pretty printer (json_dumper): two spaces a level, `"key": value`, `{}` for an empty object."""
    if isinstance(value, str):
        return '"' + value + '"'
    inner = tv.indent(depth + 1)
    if isinstance(value, Raw):
        hexed, *numbers = value
        items = ([] if hexed is None else ['"' + hexed + '"']) + [str(n) for n in numbers]
        return "[\n" + ",\n".join(inner + i for i in items) + "\n" + tv.indent(depth) + "]"
    if not value:
        return "{}"
    parts = [inner + '"' + key + '": ' + dump(v, depth + 1) for key, v in value]
    return "{\n" + ",\n".join(parts) + "\n" + tv.indent(depth) + "}"


def _date(packet) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(packet.frame.ts_ns // 1_000_000_000))


def packet_text(packet, opts: Options) -> str:
    ind = ",\n" + tv.indent(tv.LAYER_DEPTH)
    parts = []
    for k, v in layers(packet, opts):
        if k.__class__ is Mark:
            k, v = _fake(k.at, opts), k
            parts.append(v.text(ind + '"' + k[0] + '": ' + dump(k[1], tv.LAYER_DEPTH)))
        else:
            parts.append(ind + '"' + k + '": ' + dump(v, tv.LAYER_DEPTH))
    return tv.packet_head(_date(packet)) + "".join(parts)[2:] + tv.PACKET_TAIL


def fields_text(packet, names, values_of) -> str:
    """-T json -e: `"layers": {"abbrev": ["v", ...]}` with only the fields the packet has."""
    parts = []
    ind, ind2 = tv.indent(tv.LAYER_DEPTH), tv.indent(tv.LAYER_DEPTH + 1)
    for name in names:
        values = values_of(packet, name)
        if values:
            inner = ",\n".join(ind2 + tv.json_string(v) for v in values)
            parts.append(ind + tv.json_string(name) + ": [\n" + inner + "\n" + ind + "]")
    if not parts:
        return ('  {\n    "_index": "packets-' + _date(packet) + '",\n    "_type": "doc",\n    "_score": null,\n'
                '    "_source": {\n      "layers": {}\n    }\n  }')
    return tv.packet_head(_date(packet)) + ",\n".join(parts) + tv.PACKET_TAIL


class JsonFormWriter:
    """A JSON array of packets, each rendered by `render(packet, first_ns)` (first_ns: the capture's first frame
    time, for the _ws.col.Time column)."""

    lua_fakes = True       # shows wslua's fake items (a -j worker marks them: output/lua_fakes.py)

    def __init__(self, out, render):
        self.out, self.render, self.first = out, render, True
        self.first_ns: int | None = None

    def write(self, packet) -> None:
        self.out.write("[\n" if self.first else ",\n")
        self.first = False
        self.out.write(self.render(packet, self.first_ns))

    def close(self) -> None:
        self.out.write("[\n\n]\n" if self.first else "\n]\n")

    def interrupted(self) -> None:
        """The run stops before its end (tshark's exit mid-run): tshark has written its "[" preamble by then."""
        if self.first:
            self.out.write("[")
