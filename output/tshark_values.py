"""How tshark 4.0.17 prints field values: the `-T json` value strings, the `-V` labels, JSON escaping and layout.

Every rule here was measured on Debian's tshark 4.0.17 with Lua plugins; docs/tshark-formats.md has the verbatim
evidence.  Everything is table- or format-based (no regexes) because it runs once per field.

Strings: tshark writes some strings to its output as raw, possibly invalid UTF-8 (Lua string values, text labels).
We carry such bytes in `str` as surrogate escapes (`bytes.decode("utf-8", "surrogateescape")`); the final writer
must encode with `errors="surrogateescape"` to get tshark's exact bytes.
"""
from __future__ import annotations

import json.encoder
import math
import struct
import unicodedata

from ..engine.strings import wire_string
from ..engine.tree import bit_picture, GROUP_NAMES, INTEGER_TYPES, MALFORMED, SEVERITY_NAMES, ExpertInfo, FieldInfo

# ---------------------------------------------------------------------------------------------------------------
# JSON text

# tshark's json_dumper: '"' and '\\' escaped, \b \t \n \f \r short forms, other C0 controls as \u00xx (lower-case
# hex); DEL, '/', non-ASCII and even invalid UTF-8 bytes are written raw.
_JSON_ESC = {c: "\\u%04x" % c for c in range(0x20)}
_JSON_ESC.update({0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"})
JSON_ESCAPES = _JSON_ESC
# the json module's C escaper escapes exactly these (lower-case \u00xx), twenty times faster than str.translate
_encode_basestring = json.encoder.encode_basestring


def json_escape(s: str) -> str:
    """The inside of a tshark JSON string (without the quotes). Most strings need no escape: checking that is
    ten times faster than str.translate with a table."""
    if s.isprintable() and '"' not in s and "\\" not in s:
        return s
    return _encode_basestring(s)[1:-1]


def json_string(s: str) -> str:
    return '"' + json_escape(s) + '"'


_INDENTS = ["  " * d for d in range(64)]


def indent(depth: int) -> str:
    """Two spaces per nesting level.  A packet's layers are at depth 4, a layer's own keys at depth 5."""
    return _INDENTS[depth] if depth < 64 else "  " * depth


LAYER_DEPTH = 4  # `[` / `  {` packet / `    "_source": {` / `      "layers": {` / `        "eth": {`


def json_object(pairs, depth: int) -> str:
    """Render an object as tshark does.  `pairs` is a sequence of (key, value) where value is a str (already the
    tshark value string; it is escaped and quoted here) or a nested sequence of pairs (an object).  Duplicate keys are
    kept as repeated keys, in order (tshark 4.0 default, no arrays).  Returns text starting with "{" and ending
    with "}" at `depth`'s indentation; no trailing newline.  The caller writes `indent(depth) + json_string(key) + ": "`
    before it, like json_kv does."""
    inner = indent(depth + 1)
    parts = []
    for key, value in pairs:
        if isinstance(value, str):
            parts.append(inner + '"' + key.translate(_JSON_ESC) + '": "' + value.translate(_JSON_ESC) + '"')
        else:
            parts.append(inner + '"' + key.translate(_JSON_ESC) + '": ' + json_object(value, depth + 1))
    if not parts:
        return "{}"
    return "{\n" + ",\n".join(parts) + "\n" + indent(depth) + "}"


def json_kv(depth: int, key: str, value) -> str:
    """One member line (no trailing comma/newline): `<indent>"key": "value"` or `<indent>"key": {...}`."""
    if isinstance(value, str):
        return indent(depth) + json_string(key) + ": " + json_string(value)
    return indent(depth) + json_string(key) + ": " + json_object(value, depth)


def packet_head(index_date: str) -> str:
    """Text of one packet up to (not including) its first layer line.  index_date is the frame's UTC date,
    "YYYY-MM-DD".  Packets are separated by ",\n"; the file is "[\n" + packets + "\n]\n"."""
    return ('  {\n    "_index": "packets-' + index_date + '",\n    "_type": "doc",\n    "_score": null,\n'
            '    "_source": {\n      "layers": {\n')


PACKET_TAIL = "\n      }\n    }\n  }"

# Keys tshark uses for things that are not fields.
LUA_TEXT_KEY = "_ws.lua.text"       # tree:add(tvbrange, "text") from Lua: key is this, NOT the label
LUA_FAKE_KEY = "_ws.lua.fake"       # `"_ws.lua.fake": ""` layer line written just before each Lua protocol layer
EXPERT_KEY = "_ws.expert"
MALFORMED_KEY, MALFORMED_VALUE = "_ws.malformed", "Malformed Packet"  # follows every PI_MALFORMED expert (hidden)
LUA_ERROR_ABBREV = "_ws.lua.error"
# item:add_expert_info(group, severity[, text]) (old API): abbrev and default message per severity.
OLD_EXPERT = {0x00100000: ("_ws.lua.proto.comment", "Protocol Comment"),
              0x00200000: ("_ws.lua.proto.chat", "Protocol Chat"),
              0x00400000: ("_ws.lua.proto.note", "Protocol Note"),
              0x00600000: ("_ws.lua.proto.warning", "Protocol Warning"),
              0x00800000: ("_ws.lua.proto.error", "Protocol Error")}


def expert_pairs(info: ExpertInfo) -> list:
    """The members that one expert adds to its parent object: `"_ws.expert": {abbrev: "", message, severity,
    group}` and, for group PI_MALFORMED (any severity), a following `"_ws.malformed": "Malformed Packet"`."""
    out = [(EXPERT_KEY, [(info.abbrev, ""), ("_ws.expert.message", info.message),
                         ("_ws.expert.severity", str(info.severity)), ("_ws.expert.group", str(info.group))])]
    if info.group == MALFORMED:
        out.append((MALFORMED_KEY, MALFORMED_VALUE))
    return out


def lua_error_layer(message: str) -> tuple:
    """The extra layer a Lua dissector error adds (after the partial tree): key = "Lua Error: <file>:<line>: msg"."""
    text = "Lua Error: " + message
    return (text, [(EXPERT_KEY, [(LUA_ERROR_ABBREV, ""), ("_ws.expert.message", text),
                                 ("_ws.expert.severity", "8388608"), ("_ws.expert.group", "83886080")])])


def children_key(field: FieldInfo) -> str:
    """Key of a field item's children object: FT_NONE / FT_PROTOCOL items print only `abbrev: {...}` (no value);
    every other field prints `abbrev: value` and then `abbrev_tree: {...}`."""
    return field.abbrev if field.ftype in ("none", "protocol") else field.abbrev + "_tree"


# ---------------------------------------------------------------------------------------------------------------
# Values

_HEX_BASES = frozenset(("HEX", "HEX_DEC"))


def _int_norm(field: FieldInfo, value: int) -> int:
    size = INTEGER_TYPES[field.ftype]
    if field.ftype[0] == "u":
        # tshark stores <=32-bit values in 32 bits (uint16 given 70000 prints "70000")
        return value & (0xFFFFFFFF if size <= 4 else 0xFFFFFFFFFFFFFFFF)
    bits = 32 if size <= 4 else 64
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _hex(value: int, digits: int) -> str:
    # tshark's hex is exactly `digits` nibbles wide: it pads, and also drops higher nibbles
    return "0x%0*x" % (digits, value & ((1 << (4 * digits)) - 1))


def _lhex(value: int, digits: int) -> str:
    # -V labels use printf "0x%0*x": padded, never truncated (uint16 given 70000 -> "0x11170", JSON "0x1170")
    return "0x%0*x" % (digits, value)


def float32(x: float) -> float:
    """Round a Python float to IEEE single precision, as a Lua number stored in a ProtoField.float is."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def format_float(x: float, single: bool) -> str:
    """C printf "%.6g" (FLT_DIG) for float, "%.15g" (DBL_DIG) for double; glibc spells NaN "nan"/"-nan" by sign
    bit (Lua's 0/0 is -nan on x86), infinities "inf"/"-inf"."""
    if single:
        x = float32(x)
    if x != x:
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    return ("%.6g" if single else "%.15g") % x


def json_value(field: FieldInfo, value) -> str:
    """The value string tshark -T json prints for `field` (unescaped; pass through json_string).

    value: ints are the field's value (already masked and shifted, like tshark shows it); bool takes a bool, or an
    int which is ANDed with the mask when there is one (as tshark does with an explicit Lua value); float/double a
    float; string a str (truncated at the first NUL, as tshark's C strings are); bytes a bytes; protocol the item's
    full label (tshark prints the label of a leaf FT_PROTOCOL item); none: ""."""
    t = field.ftype
    if t in INTEGER_TYPES:
        v = _int_norm(field, value)
        if field.base in _HEX_BASES:
            # JSON hex is padded to the field type's width even for masked fields (mask 0x0ff0 -> "0x00ef")
            return _hex(v, 2 * INTEGER_TYPES[t])
        return str(v)   # DEC and DEC_HEX: decimal only; value names never appear in JSON
    if t == "bool":
        return "1" if _bool(field, value) else "0"
    if t == "float":
        return format_float(value, True)
    if t == "double":
        return format_float(value, False)
    if t == "string":
        i = value.find("\0")
        return value if i < 0 else value[:i]
    if t == "bytes":
        return value.hex(":")   # always colon-separated lower-case hex, whatever the base; b"" -> ""
    if t == "protocol":
        return value if isinstance(value, str) else field.name
    return ""                    # none


def _bool(field: FieldInfo, value) -> bool:
    if value is True or value is False:
        return value
    return bool(value & field.mask) if field.mask else bool(value)


# ---------------------------------------------------------------------------------------------------------------
# -V labels

def mask_bits(mask: int) -> int:
    # Wireshark's hfinfo_mask_bitwidth: highest set bit - lowest set bit + 1
    return mask.bit_length() - ((mask & -mask).bit_length() - 1)


def bitline(mask: int, raw: int, width: int) -> str:
    """Wireshark's dotted bit string (engine.tree.bit_picture, with tshark_values' argument order)."""
    return bit_picture(raw, mask, width)


def _shift(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


def label(field: FieldInfo, value, *, length_bits: int | None = None) -> str:
    """The default -V line for a field item (without indentation or generated-brackets).

    length_bits overrides the width of the dotted bit line (default: the type's width for integers, field.bits for
    bools).  For a string value the text is escaped as Wireshark's format_text does."""
    t = field.ftype
    name = field.name
    if t in INTEGER_TYPES:
        v = _int_norm(field, value)
        mask = field.mask
        digits = (mask_bits(mask) + 3) // 4 if mask else 2 * INTEGER_TYPES[t]
        base = field.base
        if field.values is not None:
            vs = field.values.get(v, "Unknown")
            num = _lhex(v, digits) if base in _HEX_BASES else str(v)
            text = vs + " (" + num + ")"
        elif base == "HEX":
            text = _lhex(v, digits)
        elif base == "DEC_HEX":
            text = str(v) + " (" + _lhex(v, digits) + ")"
        elif base == "HEX_DEC":
            text = _lhex(v, digits) + " (" + str(v) + ")"
        else:
            text = str(v)
        if mask:
            width = length_bits or 8 * INTEGER_TYPES[t]
            return bitline(mask, v << _shift(mask), width) + " = " + name + ": " + text
        return name + ": " + text
    if t == "bool":
        b = _bool(field, value)
        vals = field.values
        text = (vals.get(1 if b else 0) if vals else None) or ("True" if b else "False")
        if field.mask:
            width = length_bits or field.bits or 8
            return bitline(field.mask, field.mask if b else 0, width) + " = " + name + ": " + text
        return name + ": " + text
    if t == "float":
        return name + ": " + format_float(value, True)
    if t == "double":
        return name + ": " + format_float(value, False)
    if t == "string":
        return name + ": " + format_text(json_value(field, value))
    if t == "bytes":
        if not value:
            return name + ": <MISSING>"
        # tshark's label shows at most 36 bytes, then an ellipsis (measured: 108,278 bytes -> 72 hex digits + …)
        return name + ": " + (value.hex() if len(value) <= 36 else value[:36].hex() + "\u2026")
    if t == "protocol":
        return value if isinstance(value, str) else name
    return name                  # none


# format_text (epan/strutil.c): C escapes for \a\b\f\n\r\t\v, octal for other C0 controls and DEL, \uXXXX
# (upper-case) for non-printable code points (Unicode categories Cc/Cf/Cn/Cs, e.g. U+0080, U+200B, U+FEFF),
# U+FFFD for invalid UTF-8.  Backslash and quotes are NOT escaped.
_FT_ESC = {c: "\\%03o" % c for c in range(0x20)}
_FT_ESC.update({7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r", 0x7F: "\\177"})


def format_text(s: str) -> str:
    if s.isprintable():         # no control, format, unassigned or surrogate code point: nothing to escape
        return s
    if s.isascii():
        return s.translate(_FT_ESC)
    out = []
    for ch in s:
        c = ord(ch)
        if c < 0x80:
            out.append(_FT_ESC.get(c, ch))
        elif 0xDC80 <= c <= 0xDCFF:     # a surrogate-escaped invalid byte
            # Approximation: Wireshark's decoder makes one U+FFFD per bad *sequence* (and decodes the overlong
            # C0 80 as "\u0000"); here each stray byte gives one U+FFFD.
            out.append("\ufffd")
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cn", "Cs"):
            out.append("\\u%04X" % c if c <= 0xFFFF else "\\U%08X" % c)
        else:
            out.append(ch)
    return "".join(out)


def bracket(text: str) -> str:
    """A generated item's -V line: the label in [brackets]."""
    return "[" + text + "]"


def expert_lines(info: ExpertInfo) -> list:
    """The -V lines of an expert item: the header, then its three children one level deeper."""
    return ["[Expert Info (%s/%s): %s]" % (SEVERITY_NAMES[info.severity], GROUP_NAMES[info.group], info.message),
            "[" + info.message + "]",
            "[Severity level: " + SEVERITY_NAMES[info.severity] + "]",
            "[Group: " + GROUP_NAMES[info.group] + "]"]


V_INDENT = "    "  # -V: four spaces per tree level


# ---------------------------------------------------------------------------------------------------------------
# Strings from packet bytes



def decode_ascii(b: bytes) -> str:
    """tree:add(ProtoField.string, tvbrange) in Lua uses ENC_ASCII: every byte >= 0x80 becomes U+FFFD; the value
    ends at the first NUL."""
    i = b.find(b"\0")
    if i >= 0:
        b = b[:i]
    return b.decode("ascii", "replace")   # the ascii codec replaces byte by byte


def decode_utf8(b: bytes) -> str:
    """ENC_UTF_8: every byte that is not part of a complete valid sequence becomes one U+FFFD (so ED A0 80 ->
    3 x U+FFFD, unlike Python's 'replace'); the value ends at the first NUL."""
    i = b.find(b"\0")
    return wire_string(b if i < 0 else b[:i])


def lua_string(b: bytes) -> str:
    """A Lua string passed as a value (tree:add(f, range, "...")): tshark keeps the raw bytes (JSON output may be
    invalid UTF-8), cut at the first NUL."""
    i = b.find(b"\0")
    return (b if i < 0 else b[:i]).decode("utf-8", "surrogateescape")
