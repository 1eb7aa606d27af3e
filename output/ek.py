"""`-T ek`: one Elasticsearch bulk pair per packet, as tshark 4.0 writes it (epan/print.c, write_ek_proto_tree).

The shape differs from `-T json` in ways that matter to anyone indexing it, so it is written from the tree, not
converted from the JSON text:
- each protocol is one flat object: every field under it, at any depth, is a member named
  `<protocol>_<abbrev>` with dots turned into underscores (`blank_blank_login_name`); repeated names become arrays;
  the members come in tree order (a field, then its subtree, then its next sibling);
- a text item is `"text": label`; booleans are `true`/`false`; a field without a value (FT_NONE) is `null`;
  a protocol inside a layer (`_ws.expert`, `_ws.malformed`) is a nested object of its own;
- `-j`/`-J`: a layer (or a nested protocol) not listed becomes `{"filtered": abbrev}`; in a listed one, with -j,
  every field not listed is `{"filtered": abbrev}` too (-J lists all the children of what it names).
Values are the `-T json` strings (output/json_out.py's formatters), so both forms always agree.
"""
from __future__ import annotations

import json
import time

from ..engine.tree import MALFORMED, TextItem
from . import json_forms, json_out
from .lua_fakes import lua_calls
from . import tshark_values as tv

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _key(name: str) -> str:
    return _dumps(name.replace(".", "_"))


BOOLEAN = 2             # FT_BOOLEAN in the _raw type codes (json_forms.RAW_FTENUM)

# tshark 4.0's TCP options are protocols in name only (proto_register_protocol_in_name_only, FT_BYTES): no parent,
# so their EK key is the abbrev alone ("tcp_options_mss"; their fields keep the prefix: "tcp_tcp_options_mss_val")
NAME_ONLY_PROTOCOLS = frozenset([*(f"tcp.options.{name}" for name in (
    "nop", "eol", "timestamp", "mss", "wscale", "sack_perm", "sack", "echo", "echoreply", "cc", "md5", "qs",
    "user_to", "tfo", "experimental", "unknown")),
    # and IPv4's (packet-ip.c, "IP Option - ...")
    *(f"ip.options.{name}" for name in (
        "eol", "nop", "security", "route", "timestamp", "ext_security", "cipso", "record_route", "sid",
        "source_route", "mtu_probe", "mtu_reply", "traceroute", "routeralert", "sdb", "qs"))])


IPV6_EXTENSIONS = ("ipv6.hopopts.", "ipv6.dstopts.", "ipv6.routing.", "ipv6.fraghdr.")


def parent_protocol(abbrev: str, layer: str) -> str | None:
    """The protocol a field is registered under (hfinfo->parent): the layer's for its own fields, `_ws.expert`,
    `_ws.lua` ... for Wireshark's, else the abbrev's first part. None for a protocol or a text item."""
    if abbrev in NAME_ONLY_PROTOCOLS:
        return None
    if abbrev == "ip.version" and layer in ("ipv6", "icmpv6"):
        return "ipv6"       # packet-ipv6.c registers its own hidden ip.version (ICMPv6 quotes IPv6 headers only)
    if abbrev.startswith(IPV6_EXTENSIONS):              # each extension header is a protocol of its own
        return abbrev[:abbrev.index(".", 5)]
    if abbrev.startswith(layer + "."):
        return layer
    if abbrev.startswith("_ws."):
        return abbrev.rsplit(".", 1)[0]
    head, dot, _ = abbrev.partition(".")
    return head if dot else None


class _Node:
    """One tree node as EK sees it: abbrev, kind ("field", "none", "bool", "protocol", "text"), value text."""

    __slots__ = ("abbrev", "kind", "value", "children", "name", "raw")

    def __init__(self, abbrev, kind, value, children, name, raw=None):
        self.abbrev, self.kind, self.value, self.children, self.name = abbrev, kind, value, children, name
        self.raw = raw          # -x: the hex of the item's bytes (items with a length only)


def _expert_nodes(info, layer: str) -> list:
    pairs = [(info.abbrev, "none", None), ("_ws.expert.message", "field", info.message),
             ("_ws.expert.severity", "field", str(info.severity)), ("_ws.expert.group", "field", str(info.group))]
    kids = [_Node(a, k, v, (), _name(a, layer)) for a, k, v in pairs]
    out = [_Node(tv.EXPERT_KEY, "protocol", None, kids, tv.EXPERT_KEY)]
    if info.group == MALFORMED:
        out.append(_Node(tv.MALFORMED_KEY, "protocol", None, [], tv.MALFORMED_KEY))
    return out


def _name(abbrev: str, layer: str) -> str:
    parent = parent_protocol(abbrev, layer)
    return f"{parent}_{abbrev}" if parent else abbrev


def _nodes(kids, layer: str, packet, source: int = 0) -> list:
    """The EK view of an item list (a frozen tuple or a list) in data source `source`."""
    out = []
    for item in kids or ():
        f = item.field
        if f is None:
            if item.expert_info is not None:
                out.extend(_expert_nodes(item.expert_info, layer))
                continue
            if item.__class__ is TextItem:
                node = _Node("text", "text", item.label or "", None, "text")
            else:
                node = _Node(tv.LUA_TEXT_KEY, "none", None, None, _name(tv.LUA_TEXT_KEY, layer))
        elif f.ftype == "protocol":
            node = _Node(f.abbrev, "protocol", None, None, f.abbrev)
        elif f.ftype == "none":
            node = _Node(f.abbrev, "none", None, None, _name(f.abbrev, layer))
        elif f.ftype == "bool" or json_forms.RAW_FTENUM.get(f.abbrev) == BOOLEAN:     # Wireshark's FT_BOOLEAN
            conv = (f.json_format or json_out._format_of(f))[1]
            node = _Node(f.abbrev, "bool", conv(item.value) == "1", None, _name(f.abbrev, layer))
        elif f.abbrev == "frame.time":
            node = _Node(f.abbrev, "field", iso_time(packet.frame.ts_ns), None, _name(f.abbrev, layer))
        else:
            conv = (f.json_format or json_out._format_of(f))[1]
            value = conv(item.value)
            if f.ftype == "string":          # the JSON formatter escapes strings for JSON text: undo it
                value = json.loads('"' + value + '"')
            node = _Node(f.abbrev, "field", value, None, _name(f.abbrev, layer))
        node.children = _nodes(item.children, layer, packet, item.source or source) if item.children else []
        if json_forms.item_length(item) > 0 and node.kind != "text":
            node.raw = (item, packet, source)
        out.append(node)
    return out


def iso_time(ts_ns: int) -> str:
    """FT_ABSOLUTE_TIME in EK: strftime("%FT%T") in UTC, then "." and the nine digits of the nanoseconds
    (measured: 1 ms is ".001000000Z")."""
    secs, ns = divmod(ts_ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{ns:09d}Z"


class ProtocolFilter:
    """-j/-J: the listed names (abbrevs; '.' and '_' alike, as tshark's ek_check_protocolfilter)."""

    def __init__(self, names: str, include_children: bool):
        self.names = set(names.split())
        self.include_children = include_children

    def matches(self, abbrev: str) -> bool:
        return abbrev in self.names or abbrev.replace(".", "_") in self.names


def _fill(nodes, groups: dict, order: list, parent_key: str, flt) -> None:
    """ek_fill_attr: flatten a protocol's fields in tree order, grouped by (parent abbrev, abbrev)."""
    for node in nodes:
        key = (parent_key, node.abbrev)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(node)
        if node.kind != "protocol" and node.children:
            if flt is None:
                _fill(node.children, groups, order, node.abbrev, None)
            elif flt.matches(node.abbrev):
                _fill(node.children, groups, order, node.abbrev, None if flt.include_children else flt)


def _object(nodes, parent_key: str, flt, out: list) -> None:
    """proto_tree_write_node_ek: the members of one object."""
    groups: dict = {}
    order: list = []
    _fill(nodes, groups, order, parent_key, flt)
    first = True
    for key in order:
        instances = groups[key]
        out.append("" if first else ",")
        first = False
        if _HEX and instances[0].raw is not None:       # ek_write_attr_hex
            hexes = [_dumps(json_forms.raw_hex(*n.raw)) if n.raw else '""' for n in instances]
            out.append(_key(instances[0].name + "_raw") + ":")
            out.append("[" + ",".join(hexes) + "]," if len(hexes) > 1 else hexes[0] + ",")
        out.append(_key(instances[0].name) + ":")
        many = len(instances) > 1
        if many:
            out.append("[")
        for i, node in enumerate(instances):
            if i:
                out.append(",")
            _value(node, flt, out)
        if many:
            out.append("]")


def _value(node, flt, out: list) -> None:
    if node.kind == "protocol":
        out.append("{")
        if flt is not None and not flt.matches(node.abbrev):
            out.append('"filtered":' + _dumps(node.abbrev))
        else:
            _object(node.children, node.abbrev, None if flt is not None and flt.include_children else flt, out)
        out.append("}")
    elif flt is not None and not flt.matches(node.abbrev):
        out.append('{"filtered":' + _dumps(node.abbrev) + "}")
    elif node.kind == "text":
        out.append(_dumps(node.value))
    elif node.kind == "none":
        out.append("null")
    elif node.kind == "bool":
        out.append("true" if node.value else "false")
    else:
        out.append(_dumps(node.value))


def layer_nodes(packet) -> list:
    """The packet's layers as EK nodes (a layer is a protocol node; `_ws.lua.fake`, wslua's item for each plugin
    call, a value-less field: ek_fill_attr gathers them all, `[null,null]`, where the first one is)."""
    out = []
    fake = tv.LUA_FAKE_KEY
    for layer, fakes in lua_calls(packet):
        out.extend(_Node(fake, "none", None, [], _name(fake, fake)) for _ in fakes)
        if layer is None:
            break
        kids = _nodes(layer.item.children, layer.proto, packet, layer.item.source)
        if layer.proto == tv.LUA_FAKE_KEY:
            out.append(_Node(layer.proto, "none", None, [], _name(layer.proto, layer.proto)))
        elif layer.item.field is None or layer.item.field.ftype != "protocol":
            # a field or text item on the top level (tcp.segments; websocket's "Decompression failed" expert)
            out.extend(_nodes([layer.item], layer.proto, packet, layer.item.source))
        else:
            top = layer.item
            raw = (top, packet, 0) if json_forms.item_length(top) > 0 and top.field is not None else None
            out.append(_Node(layer.proto, "protocol", None, kids, layer.proto, raw))
    return out


def index_line(packet) -> str:
    date = time.strftime("%Y-%m-%d", time.gmtime(packet.frame.ts_ns // 1_000_000_000))
    return '{"index":{"_index":"packets-' + date + '","_type":"doc"}}\n'


def timestamp(packet) -> str:
    secs, ns = divmod(packet.frame.ts_ns, 1_000_000_000)
    return f'"timestamp":"{secs}{ns // 1_000_000:03d}"'


_HEX = False      # set by EkWriter for -x (one writer per run)


def packet_text(packet, flt: ProtocolFilter | None = None) -> str:
    out = [index_line(packet), "{", timestamp(packet), ',"layers":{']
    _object(layer_nodes(packet), "", flt, out)
    out.append("}}\n")
    return "".join(out)


def fields_text(packet, names, values) -> str:
    """-T ek -e: `"layers":{"frame_number":["1"],...}` with only the fields the packet has."""
    members = []
    for name in names:
        found = values(packet, name)
        if found:
            members.append(_key(name) + ":[" + ",".join(_dumps(v) for v in found) + "]")
    return index_line(packet) + "{" + timestamp(packet) + ',"layers":{' + ",".join(members) + "}}\n"


class EkWriter:
    """-T ek [-j/-J] [-e FIELD] [-x]: two lines per packet."""

    def __init__(self, out, protocol_filter: ProtocolFilter | None = None, *, fields=None, values_of=None,
                 hexdump: bool = False):
        global _HEX
        self.out, self.filter, self.fields, self.values_of = out, protocol_filter, fields, values_of
        self.first_ns: int | None = None
        _HEX = hexdump

    def write(self, packet) -> None:
        if self.fields:
            self.out.write(fields_text(packet, self.fields, lambda p, n: self.values_of(p, n, self.first_ns)))
        else:
            self.out.write(packet_text(packet, self.filter))

    def close(self) -> None:
        pass
