"""-z proto,colinfo,FILTER,FIELD: every occurrence of FIELD in a packet that FILTER takes (an empty FILTER takes
every packet) appended to its Info column as a display filter names it, `  tcp.len == 0`, as tshark's
tap-protocolinfo.c does.

tshark finds a field's occurrences only when something primed the field: a display filter of the run (-Y, -R, a
-z statistic's filter, this one's own), or the plugin, which reads a few fields with Field.new as it loads
(PLUGIN_FIELDS, kept equal to lua/protodump.lua by tests/test_colinfo.py). A field nothing primed appends
nothing, as in tshark; -e does not prime. The Info column must be printed (the summary, -P, -T psml, or a
`_ws.col.` field), else the first packet the tap takes ends the run with tshark's error.
"""
from __future__ import annotations

import re
import time

from ..analysis.filter_fields import is_field
from ..analysis.stats_base import StatsError, Tap, register
from ..analysis.stats_phs import compile_optional
from ..capture.field_types import TSHARK_TYPES
from ..dissectors import PROTOCOLS
from ..engine.demand import combine, of_fields, of_filter
from .fields_out import ALIASES, expert_values, item_value
from ..engine.tree import INTEGER_TYPES
from .tshark_values import float32, mask_bits


def _plugin_fields() -> frozenset[str]:
    """What the generated plugin primes as it loads: its stream runtime's and WebSocket hand-off's fields, and
    each game protocol and its type fields (its -z <proto>,types: engine/lua_backend.py)."""
    names = {"tcp.stream", "tcp.seq", "tcp.analysis.lost_segment", "tcp.len", "tcp.completeness", "sctp.data_sid",
             "sctp.data_ssn", "sctp.data_u_bit", "websocket", "http.request", "http.response.code",
             "http.sec_websocket_extensions"}
    for proto in PROTOCOLS:
        types = getattr(proto, "type_fields", None) or (getattr(proto, "type_field", None),)
        if getattr(proto, "lua", True) and all(types):
            names.update([proto.name, *(f"{proto.name}.{t}" for t in types)])
            if getattr(proto, "sequence", None):
                names.add("_ws.expert.message")
    return frozenset(names)


PLUGIN_FIELDS = _plugin_fields()
_WORD = re.compile(r"[A-Za-z_][\w.-]*")
# ws_escape_string: these by name, other control characters as \xNN
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
            "\v": "\\v"}


def quoted(text: str) -> str:
    """A string as a display filter writes it."""
    return '"' + "".join(_ESCAPES.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x20 or c == "\x7f" else c)
                         for c in text) + '"'


def match_strings(packet, abbrev: str) -> list[str]:
    """Each occurrence of `abbrev` in the packet as a display filter selects it (proto_construct_match_selected_
    string): `abbrev == value`, or the abbrev alone for a protocol or a field without a value."""
    index = packet.index()
    if abbrev.startswith("_ws.expert") or abbrev == "_ws.malformed":
        values = expert_values(abbrev, index)
        if abbrev == "_ws.expert.message":
            return [f"{abbrev} == {quoted(v)}" for v in values]
        if abbrev in ("_ws.expert.severity", "_ws.expert.group"):
            return [f"{abbrev} == {v}" for v in values]
        return [abbrev for _ in values]
    items = index.get(abbrev)
    if not items:
        return [s.replace(part, abbrev, 1) for part in ALIASES.get(abbrev, ()) for s in match_strings(packet, part)]
    out = []
    for item in items:
        f = item.field
        if f is None or f.ftype == "protocol" or (f.ftype == "none" and not item.length):
            out.append(abbrev)
            continue
        if f.ftype == "none":
            continue        # (a text with bytes: tshark's filter would be frame[a:b] == ..., which needs edt)
        out.append(f"{abbrev} == {_value(packet, f, item.value, item)}")
    return out


def _value(packet, f, value, item) -> str:
    """A value as a display filter writes it (fvalue_to_string_repr, FTREPR_DFILTER, in tshark 4.0)."""
    kind = TSHARK_TYPES.get(f.abbrev)
    if kind == "FT_ABSOLUTE_TIME":          # (frame.time: its text is the -V form; the filter's is ISO 8601)
        ts = packet.frame.ts_ns
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts // 1_000_000_000))
        return f'"{when}.{ts % 1_000_000_000:09d}+0000"'
    if f.ftype == "bytes":
        return value.hex(":")
    if f.ftype in ("double", "float"):          # 17 digits, a float's single-precision value widened
        return "%.17g" % (float32(value) if f.ftype == "float" else value)
    if f.ftype in INTEGER_TYPES and f.base in ("HEX", "HEX_DEC"):
        # as many hex digits as the field has bits (tcp.flags, 12 bits: 0x002), not its type's width
        bits = mask_bits(f.mask) if f.mask else 8 * INTEGER_TYPES[f.ftype]
        return "0x%0*x" % ((bits + 3) // 4, value & ((1 << 64) - 1))
    text = item_value(item)
    return quoted(text) if kind in ("FT_STRING",) or (kind is None and f.ftype == "string") else text


class ColumnsNotShown(StatsError):
    """The run prints no Info column: tshark stops at the first packet the tap takes."""


@register
class ColumnInfo(Tap):
    name = kind = "proto,colinfo"
    usage = "proto,colinfo,FILTER,FIELD"

    def __init__(self, args):
        text = ",".join(args)
        if "," not in text:
            raise StatsError("-z proto,colinfo: expected proto,colinfo,FILTER,FIELD",
                             report=('protodump: invalid "-z proto,colinfo,<filter>,<field>" argument', False))
        self.filter, self.field = text.split(",", 1)     # (the filter ends at the first comma, as tshark's)
        if not is_field(self.field):
            raise StatsError(f"-z proto,colinfo: no field {self.field!r}",
                             report=(f'protodump: Field "{self.field}" doesn\'t exist.', False))
        self.match = compile_optional(self.filter, self.name)
        self.primed = self.field in PLUGIN_FIELDS
        self.columns_shown = True        # (cli/read_cmd.py: whether the run prints the Info column)

    def prime_from(self, display_filter, read_filter, taps) -> None:
        """The filters of the run (-Y, -R, every statistic's own): tshark finds the field only if one names it,
        or the plugin primed it."""
        filters = [display_filter, read_filter]
        for tap in taps:
            filters.append(getattr(tap, "filter", None))
            filters.extend(getattr(tap, "filters", None) or ())
        self.primed = self.field in PLUGIN_FIELDS or any(self.field in _WORD.findall(f or "") for f in filters
                                                         if isinstance(f, str))

    def demand(self):
        return combine([of_fields([self.field]), of_filter(self.filter or None)])

    def add(self, packet):
        if self.match is not None and not self.match(packet):
            return
        if not self.columns_shown:
            raise ColumnsNotShown("protodump: the proto,colinfo tap doesn't work if the INFO column isn't being "
                                  "printed.")
        if self.primed:
            found = match_strings(packet, self.field)
            if found:
                packet.append_info("".join(f"  {s}" for s in found))

    def result(self):
        return {"kind": self.kind, "layout": "colinfo"}      # nothing printed at the end: its work is the column

