"""`-T pdml`: whole packets as tshark 4.0's PDML (epan/print.c, write_pdml_proto_tree and
proto_tree_write_node_pdml), from the same tree and value formatters as the other output forms.

The rules, from print.c:
- a `geninfo` protocol first (number, lengths, capture time), then every item of the tree in order;
- a protocol item is `<proto name showname size pos>`; any other item `<field name showname [hide] size pos show
  [value [unmaskedvalue]]>`; a text item `<field name="" show=LABEL size pos [value]>`; an item on the top level that
  is not a protocol is wrapped in `<proto name="fake-field-wrapper">` (the Lua `_ws.lua.fake` item that Wireshark
  adds at the start of each Lua dissector call, and once more for the plugin's postdissector at the end of every
  frame);
- `showname` is the item's -V label without the brackets of a generated item; `show` the value as Wireshark's
  display filters write it; `value` the hex of the item's bytes in its own data source (the frame, or a reassembled
  or inflated buffer), only when it has bytes; a masked integer's `value` is "%X" of its value and `unmaskedvalue`
  the hex of the bytes;
- `pos` is the offset in the item's data source, except that an item whose offset is before its parent's shows
  the parent's offset plus its own (print.c does that sum; zero-length items at offset 0 under a layer therefore
  print the layer's offset).
"""
from __future__ import annotations

import time

from ..engine.tree import MALFORMED, SEVERITY_NAMES, GROUP_NAMES, HiddenItem
from . import json_out
from . import tshark_values as tv
from .json_forms import field_length, masked, raw_hex, source_data
from .lua_fakes import lua_calls
from .psml import xml_escape
from .text import LABEL_LENGTH, fit_label

_INDENT = ["  " * d for d in range(128)]


def _ind(level: int) -> str:
    return _INDENT[level] if level < 128 else "  " * level


def showname(item) -> str:
    """The item's label as Wireshark's fi->rep holds it: the -V label, without a generated item's brackets."""
    text, f = item.label, item.field
    if text is None:
        if f is None:
            return ""
        text = f.labeler(item) if f.labeler else tv.label(f, item.value)
    elif item.generated and text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
        if len(text) >= LABEL_LENGTH:      # a formatted label (a reassembly's): cut to the buffer, no mark
            return text.encode()[:LABEL_LENGTH - 1].decode("utf-8", "ignore")
    if f is not None and len(text) >= LABEL_LENGTH // 4:
        text = fit_label(text, f.name)
    return text


def show_value(f, value) -> str:
    """fvalue_to_string_repr(FTREPR_DISPLAY): the JSON value string, unescaped."""
    if f.ftype == "string":
        return tv.json_value(f, value)
    return (f.json_format or json_out._format_of(f))[1](value)


class _Writer:
    def __init__(self, packet, names: frozenset | None = None, include_children: bool = False):
        self.packet = packet
        self.out: list[str] = []
        # -j / -J (print.c check_protocolfilter): a node with children not named here shows a "filtered" field in
        # their place; -J shows everything under a named node
        self.names, self.include_children = names, include_children

    def pos(self, item, parent_pos: int | None) -> int:
        if parent_pos is not None and item.offset < parent_pos:
            return parent_pos + item.offset
        return item.offset

    def hex_of(self, item, source: int) -> str:
        data = source_data(self.packet, item.source or source)
        length = field_length(item, self.packet, source)
        if length and item.offset + length > len(data):     # (as json_forms.raw_hex)
            return "field length invalid!"
        return data[item.offset:item.offset + length].hex()

    def node(self, item, level: int, parent_pos: int | None, source: int) -> None:
        add = self.out.append
        f = item.field
        info = item.expert_info
        if info is not None:
            self.expert(item, level, parent_pos)
            return
        data = f is not None and f.abbrev == "data"     # print.c writes the data protocol as a field
        top_field = level == 0 and (f is None or f.ftype != "protocol" or data)
        if top_field:
            add(_ind(1) + '<proto name="fake-field-wrapper">\n')
            level += 1
        pos = self.pos(item, parent_pos)
        length = field_length(item, self.packet, source)
        ind = _ind(level + 1)
        kids = item.children
        src = item.source or source
        if data:
            parts = [ind, '<field name="data" value="', self.hex_of(item, source)]
        elif f is None:
            parts = [ind, '<field name="" show="', xml_escape(showname(item)), '" size="', str(length),
                     '" pos="', str(pos)]
            if length > 0:
                parts += ['" value="', self.hex_of(item, source)]
        else:
            proto = f.ftype == "protocol"
            parts = [ind, "<proto" if proto else "<field", ' name="', xml_escape(f.abbrev), '" showname="',
                     xml_escape(showname(item))]
            if item.__class__ is HiddenItem:
                parts.append('" hide="yes')
            parts += ['" size="', str(length), '" pos="', str(pos)]
            if f.ftype == "none":
                parts.append('" show="" value="')
            elif not proto:
                parts += ['" show="', xml_escape(show_value(f, item.value))]
                if length > 0:
                    if masked(item):
                        parts += ['" value="', raw_hex(item, self.packet, source), '" unmaskedvalue="',
                                  self.hex_of(item, source)]
                    else:
                        parts += ['" value="', self.hex_of(item, source)]
        parts.append('">\n' if kids else '"/>\n')
        add("".join(parts))
        if kids:
            names = self.names
            abbrev = "text" if f is None else f.abbrev
            if names is not None and abbrev not in names:
                add(f'{_ind(level + 2)}<field name="filtered" value="{xml_escape(abbrev)}" />\n')
            else:
                if names is not None and self.include_children:
                    self.names = None
                for child in kids:
                    self.node(child, level + 1, item.offset, src)
                self.names = names
            # print.c takes back the wrapper's level before closing: a wrapped field closes one level out
            add((_ind(level) if top_field else ind) +
                ("</proto>\n" if f is not None and f.ftype == "protocol" and not data else "</field>\n"))
        if top_field:
            add(_ind(level) + "</proto>\n")

    def expert(self, item, level: int, parent_pos: int | None) -> None:
        """An expert item: `_ws.expert` with the expert's own field, message (hidden), severity and group; a
        malformed one is followed by the hidden `_ws.malformed` protocol item."""
        info = item.expert_info
        add = self.out.append
        ind, inner = _ind(level + 1), _ind(level + 2)
        pos = parent_pos or 0        # wslua and expert.c add it at offset 0 with no tvb: the parent's start
        add(f'{ind}<field name="_ws.expert" showname="{xml_escape(item.label)}" size="0" pos="{pos}">\n')
        if self.names is not None and "_ws.expert" not in self.names:       # -j without it
            add(f'{inner}<field name="filtered" value="_ws.expert" />\n{ind}</field>\n')
            if info.group == MALFORMED:
                add(f'{ind}<proto name="_ws.malformed" showname="Malformed Packet" hide="yes" size="0" '
                    f'pos="{pos}"/>\n')
            return
        msg = xml_escape(info.message)
        add(f'{inner}<field name="{xml_escape(info.abbrev)}" showname="{msg}" size="0" pos="0" show="" value=""/>\n')
        add(f'{inner}<field name="_ws.expert.message" showname="Message: {msg}" hide="yes" size="0" pos="0" '
            f'show="{msg}"/>\n')
        add(f'{inner}<field name="_ws.expert.severity" showname="Severity level: {SEVERITY_NAMES[info.severity]}" '
            f'size="0" pos="0" show="{info.severity}"/>\n')
        add(f'{inner}<field name="_ws.expert.group" showname="Group: {GROUP_NAMES[info.group]}" size="0" pos="0" '
            f'show="{info.group}"/>\n')
        add(ind + "</field>\n")
        if info.group == MALFORMED:
            add(f'{ind}<proto name="_ws.malformed" showname="Malformed Packet" hide="yes" size="0" pos="{pos}"/>\n')

    def fake(self, pos: int) -> None:
        self.out.append(f'  <proto name="fake-field-wrapper">\n    <field name="_ws.lua.fake" showname="Wireshark '
                        f'Lua fake item" hide="yes" size="0" pos="{pos}" show="" value=""/>\n  </proto>\n')

    def geninfo(self) -> None:
        frame = self.packet.frame
        size = len(frame.data)
        ts = frame.ts_ns
        shown = _frame_time(self.packet)
        self.out.append(
            f'  <proto name="geninfo" pos="0" showname="General information" size="{size}">\n'
            f'    <field name="num" pos="0" show="{frame.number}" showname="Number" value="{frame.number:x}" '
            f'size="{size}"/>\n'
            f'    <field name="len" pos="0" show="{frame.length}" showname="Frame Length" value="{frame.length:x}" '
            f'size="{size}"/>\n'
            f'    <field name="caplen" pos="0" show="{size}" showname="Captured Length" value="{size:x}" '
            f'size="{size}"/>\n'
            f'    <field name="timestamp" pos="0" show="{xml_escape(shown)}" showname="Captured Time" '
            f'value="{ts // 1_000_000_000}.{ts % 1_000_000_000:09d}" size="{size}"/>\n'
            "  </proto>\n")


def _frame_time(packet) -> str:
    for layer in packet.decoded.layers():
        if layer.proto == "frame":
            found = layer.item.find("frame.time")
            if found is not None:
                return show_value(found.field, found.value)
    ts = packet.frame.ts_ns
    return time.strftime("%b %d, %Y %H:%M:%S", time.gmtime(ts // 1_000_000_000)) + f".{ts % 1_000_000_000:09d} UTC"


def packet_text(packet, names: frozenset | None = None, include_children: bool = False) -> str:
    w = _Writer(packet, names, include_children)
    w.out.append("<packet>\n")
    w.geninfo()
    for layer, fakes in lua_calls(packet):
        for at in fakes:
            w.fake(at)
        if layer is not None:
            w.node(layer.item, 0, None, layer.item.source)
    w.out.append("</packet>\n\n\n")     # print.c's "</packet>\n\n", then tshark's own "\n"
    return "".join(w.out)


class PdmlWriter:
    """The PDML document: preamble (on the first packet, or at the end when there is none), packets, end."""

    def __init__(self, out, creator: str, capture_file: str | None, *, fields=None, values_of=None, names=None,
                 include_children: bool = False):
        self.out, self.creator, self.capture_file = out, creator, capture_file
        self.names, self.include_children = names, include_children        # -j / -J
        self.fields, self.values_of = fields, values_of      # -e: only these fields (print.c, FORMAT_XML)
        self.started = False
        self.first_ns: int | None = None

    def _start(self) -> None:
        self.started = True
        stamp = time.asctime(time.localtime())
        self.out.write('<?xml version="1.0" encoding="utf-8"?>\n'
                       '<?xml-stylesheet type="text/xsl" href="pdml2html.xsl"?>\n'
                       "<!-- You can find pdml2html.xsl in /usr/share/wireshark or at "
                       "https://gitlab.com/wireshark/wireshark/-/raw/master/pdml2html.xsl. -->\n"
                       f'<pdml version="0" creator="{self.creator}" time="{stamp}" capture_file="'
                       f'{xml_escape(self.capture_file or "")}">\n')

    def write(self, packet) -> None:
        if not self.started:
            self._start()
        if self.fields:
            self.out.write(self.fields_text(packet))
        else:
            self.out.write(packet_text(packet, self.names, self.include_children))

    def fields_text(self, packet) -> str:
        """-T pdml -e: the geninfo block, then `<field name value/>` for each value of each field asked for."""
        w = _Writer(packet)
        w.out.append("<packet>\n")
        w.geninfo()
        for name in self.fields:
            for value in self.values_of(packet, name, self.first_ns):
                w.out.append(f'  <field name="{xml_escape(name)}" value="{xml_escape(value)}"/>\n')
        w.out.append("</packet>\n\n\n")
        return "".join(w.out)

    def close(self) -> None:
        if not self.started:
            self._start()
        self.out.write("</pdml>\n")
