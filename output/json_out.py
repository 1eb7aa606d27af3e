"""`-T json`: packets in the shape of `tshark -T json`; a game layer renders exactly as tshark renders the same
tree built by the generated Lua plugin (the rules are in output/tshark_values.py)."""
from __future__ import annotations

import time
from functools import lru_cache

from . import lua_fakes
from . import tshark_values as tv
from .frozen import FrozenText
from .lua_fakes import lua_calls
from .sink import parts_writer
from ..engine.template import Slot, SlotLayer, positional_runs
from ..engine.tree import TextItem


# Items go straight to text. Keys are field abbrevs (plain ASCII, never escaped); most values are numbers (never
# escaped). So each field gets its key prefix and a value formatter once; only strings go through the escaper.

_INDENT = [tv.indent(d) for d in range(64)]


def _format_of(f):
    fmt = f.json_format
    if fmt is None:
        t, base = f.ftype, f.base
        if t in ("uint8", "uint16", "uint32") and base in ("DEC", "DEC_HEX") and not f.mask:
            conv = str
        elif t in ("uint8", "uint16", "uint32", "uint64") and base in ("HEX", "HEX_DEC") and not f.mask:
            conv = ("0x%0" + str(2 * int(t[4:]) // 8) + "x").__mod__
        elif t in ("int8", "int16", "int32") and not f.mask:
            conv = str
        elif t == "double":
            conv = lambda v: "%.15g" % v if v == v else tv.format_float(v, False)   # noqa: E731
        elif t == "float":      # values read from the wire are already single precision
            conv = lambda v: "%.6g" % v if v == v else tv.format_float(v, True)    # noqa: E731
        # the common rest of tv.json_value, specialised per field (the TCP layer's flags, strings, bytes)
        elif t in ("uint8", "uint16", "uint32") and base in ("DEC", "DEC_HEX"):
            conv = lambda v: str(v & 0xFFFFFFFF)      # noqa: E731 - tv._int_norm of an unsigned <= 32 bits
        elif t in ("uint8", "uint16", "uint32") and base in ("HEX", "HEX_DEC"):
            conv = lambda v, m=(1 << 8 * int(t[4:]) // 8) - 1, p="0x%0" + str(int(t[4:]) // 4) + "x": p % (v & m)  # noqa
        elif t == "bool":
            conv = lambda v, m=f.mask: "1" if (v if v is True or v is False else v & m if m else v) else "0"  # noqa
        elif t == "bytes":
            conv = lambda v: v.hex(":")                # noqa: E731
        elif t == "string":
            conv = _string
        else:
            conv = lambda v, f=f: tv.json_value(f, v)   # noqa: E731
        valued = None if t in ("none", "protocol") else t
        # key, value formatter, children key, value type (None: none/protocol), line prefix per depth
        fmt = f.json_format = ('"' + f.abbrev + '": ', conv, '"' + f.abbrev + '_tree": ', valued, {})
    return fmt


def _string(v: str) -> str:
    """A string field's JSON text (tv.json_value + tv.json_escape in one step): cut at a NUL, escaped (a NUL is
    not printable: a printable string without quote or backslash is its own text)."""
    if v.isprintable() and '"' not in v and "\\" not in v:
        return v
    return tv.json_escape(v if "\0" not in v else v[:v.index("\0")])


def object_text(item, depth: int) -> str:
    """An item's children as a tshark JSON object, at `depth` (the object's closing brace's indentation)."""
    out: list[str] = []
    _object(item.children, depth, out)
    return "".join(out)


def _object(kids, depth: int, out: list) -> None:
    """Append the object's text to `out`. Pieces go to one list joined once per packet: building each level as a
    string and pasting it into its parent would copy the text once per nesting level."""
    if kids.__class__ is tuple:        # a frozen subtree shared between packets: its text is too
        out.append(_FROZEN.text(kids, depth))
        return
    _fresh(kids, depth, out)


def _fresh(kids, depth: int, out: list) -> None:
    out.append("{")
    first = len(out)
    _members(kids, depth, out)
    if len(out) == first:
        out[-1] = "{}"
        return
    out[first] = out[first][1:]       # the first member follows "{" directly: no comma
    out.append("\n" + _INDENT[depth] + "}")


def _members(kids, depth: int, out: list) -> None:
    """Append the members of an object at `depth` (its items), each starting with ",\n"."""
    ind = _INDENT[depth + 1]
    add = out.append
    for child in kids:
        f = child.field
        if f is None:
            info = child.expert_info
            if info is not None:
                for key, value in tv.expert_pairs(info):
                    add(",\n" + tv.json_kv(depth + 1, key, value))
            elif child.children:
                key = tv.json_escape(child.label) if child.__class__ is TextItem else tv.LUA_TEXT_KEY
                add(",\n" + ind + '"' + key + '": ')
                _object(child.children, depth + 1, out)
            else:
                key = tv.json_escape(child.label) if child.__class__ is TextItem else tv.LUA_TEXT_KEY
                add(",\n" + ind + '"' + key + '": ""')
            continue
        key, conv, tree_key, ftype, lines = f.json_format or _format_of(f)
        if ftype is None:             # none / protocol: an object when it has children, else a plain value
            if child.children:
                add(",\n" + ind + key)
                _object(child.children, depth + 1, out)
            else:
                value = "" if f.ftype == "none" else tv.json_escape(child.label or f.name)
                add(",\n" + ind + key + '"' + value + '"')
            continue
        line = lines.get(depth)
        if line is None:
            line = lines[depth] = ",\n" + ind + key + '"'
        value = child.value
        if conv is _string and value.isprintable() and '"' not in value and "\\" not in value:
            add(line + value + '"')      # inline: the common case of the common string conversion
        else:
            add(line + conv(value) + '"')
        if child.children:
            add(",\n" + ind + tree_key)
            _object(child.children, depth + 1, out)


# -- templates (engine.template): compiled once per depth into one %-format text ---------------------------------

def _template_object(layer, depth: int, out: list, parts: list) -> None:
    """Append a SlotLayer's children as an object at `depth`: its compiled text filled with the frame's values.
    Where the text holds non-ASCII lines (engine.template.positional_runs), `out` ends before them: they go to
    `parts` as texts of their own, and `out` goes on with the ASCII rest."""
    tpl, vals = layer.template, layer.vals
    compiled = tpl.compiled.get(("json", depth))
    if compiled is None:
        members: list[str] = []
        derived: list = []
        _compile_members(tpl.nodes, depth, members, derived)
        text = "".join(members)
        text, values = positional_runs("{" + text[1:] + "\n" + _INDENT[depth] + "}" if text else "{}")
        compiled = tpl.compiled[("json", depth)] = (text, values, tuple(derived))
    text, values, derived = compiled
    for dkey, key, conv in derived:
        vals[dkey] = conv(vals[key])
    if text is not None:
        out.append(text % values(vals))
        return
    texts = values(vals)
    out.append(texts[0])
    parts.append("".join(out))
    out.clear()
    parts += texts[1:-1]
    out.append(texts[-1])


def _compile_members(nodes, depth: int, out: list, derived: list) -> None:
    ind = _INDENT[depth + 1]
    for n in nodes:
        if n.__class__ is not Slot:   # a static item: its text, as any item's
            part: list[str] = []
            _members((n,), depth, part)
            out.append("".join(part).replace("%", "%%"))
            continue
        f = n.field
        if f is None:                 # a text item: keyed by its (fixed) label
            key = tv.json_escape(n.label) if n.cls is TextItem else tv.LUA_TEXT_KEY
            out.append((",\n" + ind + '"' + key + '": ').replace("%", "%%"))
            _compile_object(n.kids, depth + 1, out, derived)
            continue
        key, conv, tree_key, ftype, _ = f.json_format or _format_of(f)
        if ftype is None:
            if n.kids:
                out.append(",\n" + ind + key)
                _compile_object(n.kids, depth + 1, out, derived)
            else:
                out.append(",\n" + ind + key + '"' + ("" if f.ftype == "none" else tv.json_escape(n.label or f.name)
                                                      .replace("%", "%%")) + '"')
            continue
        out.append(",\n" + ind + key + '"' + _placeholder(n.value, conv, derived, n.plain) + '"')
        if n.kids:
            out.append(",\n" + ind + tree_key)
            _compile_object(n.kids, depth + 1, out, derived)


def _compile_object(nodes, depth: int, out: list, derived: list) -> None:
    members: list[str] = []
    _compile_members(nodes, depth, members, derived)
    text = "".join(members)
    out.append("{" + text[1:] + "\n" + _INDENT[depth] + "}" if text else "{}")


def _placeholder(key: str, conv, derived: list, plain: bool = False) -> str:
    """The %-format of a value: a plain conversion (str of an int, a "0x%04x" pattern, a string slot that needs
    no escaping) formats in place; any other is computed per frame into a derived key."""
    if conv is str:
        return "%(" + key + ")d"
    if conv is _string and plain:
        return "%(" + key + ")s"
    pattern = getattr(conv, "__self__", None)
    if pattern.__class__ is str and pattern.count("%") == 1:     # a str.__mod__: "0x%04x"
        return pattern.replace("%", "%(" + key + ")")
    for dkey, source, made in derived:      # the same value in several items (ip.src, ip.addr, ip.src_host)
        if source == key and made is conv:
            return "%(" + dkey + ")s"
    dkey = f"{key}__{len(derived)}"
    derived.append((dkey, key, conv))
    return "%(" + dkey + ")s"


_FROZEN = FrozenText(_fresh)


_FAKE = ",\n" + _INDENT[tv.LAYER_DEPTH] + '"' + tv.LUA_FAKE_KEY + '": ""'    # wslua's item (output/lua_fakes.py)


def layer_text(packet, fakes: bool = True) -> str:
    """The members of the packet's `layers` object: each layer, and with `fakes` wslua's `_ws.lua.fake` items
    (one per call of the plugin, as tshark + plugin writes them)."""
    return "".join(layer_parts(packet, fakes))


def layer_parts(packet, fakes: bool = True, parts: list | None = None) -> list[str]:
    """layer_text as a text per layer (output/sink.py encodes each on its own), appended to `parts`."""
    if parts is None:
        parts = []
    out: list[str] = []
    ind = _INDENT[tv.LAYER_DEPTH]
    first = True
    for layer, calls in lua_calls(packet, lua_fakes.MARKING) if fakes else ((layer, ()) for layer in packet.layers()):
        for at in calls:           # (never before the first layer, the frame: each item starts with its comma)
            out.append(_FAKE if at.__class__ is int else at.text(_FAKE))
        if layer is None:
            break
        out.append(ind + '"' + layer.proto + '": ' if first else ",\n" + ind + '"' + layer.proto + '": ')
        first = False
        if layer.__class__ is SlotLayer and layer.materialized is None:
            _template_object(layer, tv.LAYER_DEPTH, out, parts)
        else:
            top = layer.item
            if top.children:
                _object(top.children, tv.LAYER_DEPTH, out)
            elif top.field is not None and top.field.ftype not in ("none", "protocol"):
                out.append('"' + (top.field.json_format or _format_of(top.field))[1](top.value) + '"')   # a top item
            else:
                out.append('"' + tv.json_escape(top.label or "") + '"')
        parts.append("".join(out))
        out.clear()
    if out:
        parts.append("".join(out))
    return parts


def packet_text(packet, fakes: bool = True) -> str:
    """The packet as one element of `tshark -T json`'s array (fakes: with wslua's items, as tshark + plugin)."""
    return _head(packet.frame.ts_ns // 86_400_000_000_000) + layer_text(packet, fakes) + tv.PACKET_TAIL


@lru_cache(maxsize=64)            # frames come in time order: one day's head serves them all
def _head(day: int) -> str:
    return tv.packet_head(time.strftime("%Y-%m-%d", time.gmtime(day * 86_400)))


class JsonWriter:
    """Streams packets as one JSON array, one packet at a time (constant memory)."""

    lua_fakes = True       # shows wslua's fake items (a -j worker marks them: output/lua_fakes.py)

    def __init__(self, out):
        self.out, self.first = out, True
        self.write_parts = parts_writer(out)

    def write(self, packet) -> None:
        start = "[\n" if self.first else ",\n"
        self.first = False
        if self.write_parts is None:
            self.out.write(start)
            self.out.write(packet_text(packet))
            return
        parts = layer_parts(packet, True, [start + _head(packet.frame.ts_ns // 86_400_000_000_000)])
        parts.append(tv.PACKET_TAIL)
        self.write_parts(parts)

    def close(self) -> None:
        self.out.write("[\n\n]\n" if self.first else "\n]\n")

    def interrupted(self) -> None:
        """The run stops before its end (tshark's exit mid-run): tshark has written its "[" preamble by then."""
        if self.first:
            self.out.write("[")
