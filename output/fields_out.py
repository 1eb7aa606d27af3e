"""`-T fields -e FIELD ... -E OPTION=VALUE`: one line of field values per packet, as tshark 4.0.17 prints them.

Measured on tshark 4.0.17 (docs in tests/test_fields_out.py): a value is the JSON value string (tshark's
FTREPR_DISPLAY) except that bytes print as plain hex ("000000", no colons), FT_NONE prints "1", and a protocol
prints its label when the dissector set one (the standard layers) and else its abbrev (a Lua protocol: "blank").
Occurrences are joined by the aggregator; a field a packet lacks prints nothing; the header is never quoted;
separator and aggregator keep only the first character of their value. In values (only), backspace, tab, newline,
form feed and carriage return print as \\b \\t \\n \\f \\r; nothing else is escaped (not quotes, backslashes, \\v,
other controls).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..capture import fields as std_fields
from ..engine.tree import GROUP_NAMES, MALFORMED, SEVERITY_NAMES, FieldInfo
from . import columns
from . import tshark_values as tv

# The expert pseudo-fields tshark registers (abbrev -> type); values come from the expert items themselves.
EXPERT_FIELDS = {"_ws.expert": FieldInfo("_ws.expert", "Expert Info", "protocol"),
                 "_ws.expert.message": FieldInfo("_ws.expert.message", "Message", "string"),
                 "_ws.expert.severity": FieldInfo("_ws.expert.severity", "Severity level", "uint32"),
                 "_ws.expert.group": FieldInfo("_ws.expert.group", "Group", "uint32"),
                 tv.MALFORMED_KEY: FieldInfo(tv.MALFORMED_KEY, "Malformed Packet", "protocol")}


def standard_fields() -> list[FieldInfo]:
    """Every FieldInfo of the standard layers (capture/fields.py), first registration of an abbrev wins."""
    found: dict[str, FieldInfo] = {}

    def take(obj) -> None:
        if isinstance(obj, FieldInfo):
            found.setdefault(obj.abbrev, obj)
        elif isinstance(obj, dict):
            for v in obj.values():
                take(v)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                take(v)

    for name, obj in vars(std_fields).items():
        if not name.startswith("_"):
            take(obj)
    for abbrev, description in std_fields.EXPERTS.items():
        if abbrev not in EXPERT_FIELDS:          # _ws.malformed is the protocol item tshark adds, listed there
            found.setdefault(abbrev, FieldInfo(abbrev, description, "none"))
    return list(found.values())


def game_fields(protocol) -> list[FieldInfo]:
    """A game protocol's fields, then its expert infos (<proto>.<kind>, type none, like a Lua ProtoExpert)."""
    out = list(protocol.fields.values())
    have = set(protocol.fields)
    for kind, (group, severity) in protocol.experts.items():
        abbrev = f"{protocol.name}.{kind}"
        if abbrev not in have:
            out.append(FieldInfo(abbrev, f"Expert info ({SEVERITY_NAMES[severity]}/{GROUP_NAMES[group]})", "none"))
    return out


def known_fields(protocols) -> dict[str, FieldInfo]:
    """abbrev -> FieldInfo for everything `-e` accepts: standard layers, expert pseudo-fields, game protocols."""
    known = {f.abbrev: f for f in standard_fields()}
    for f in EXPERT_FIELDS.values():
        known.setdefault(f.abbrev, f)
    for p in protocols:
        for f in game_fields(p):
            known.setdefault(f.abbrev, f)
    for sub in payload_layers(protocols):
        for f in sub.fields.values():
            known.setdefault(f.abbrev, f)
    return known


def payload_layers(protocols) -> list:
    """The layers protocols hand what no game took to (WebSocket's data, data-text-lines), once each, in order:
    their fields are -e fields too."""
    out: list = []
    for p in protocols:
        out += [sub for sub in getattr(p, "hands_to", ()) if sub not in out]
    return out


# ---------------------------------------------------------------------------------------------------------------
# -E options

@dataclass
class FieldsOptions:
    header: bool = False
    separator: str = "\t"
    quote: str = ""
    occurrence: str = "a"
    aggregator: str = ","
    bom: bool = False


_CHARS = {"/t": "\t", "/s": " "}


def parse_options(values) -> FieldsOptions:
    """-E header=y,... : one -E each, as tshark takes them. ValueError with a one-line message when bad."""
    opts = FieldsOptions()
    for value in values:
        name, sep, setting = value.partition("=")
        ok = bool(sep) and bool(setting)
        if ok and name in ("header", "bom"):
            ok = setting in ("y", "n")
            setattr(opts, name, setting == "y")
        elif ok and name in ("separator", "aggregator"):
            setattr(opts, name, _CHARS.get(setting, setting[0]))   # tshark keeps the first character only
        elif ok and name == "quote":
            ok = setting in ("d", "s", "n")
            opts.quote = {"d": '"', "s": "'", "n": ""}.get(setting, "")
        elif ok and name == "occurrence":
            ok = setting in ("f", "l", "a")
            opts.occurrence = setting
        else:
            ok = False
        if not ok:
            raise ValueError(f"{value!r} is not a valid field option (header=y|n, separator=/t|/s|C, quote=d|s|n, "
                             "occurrence=f|l|a, aggregator=,|/s|C, bom=y|n)")
    return opts


def check_fields(names, known) -> None:
    """ValueError naming every -e field protodump does not know (tshark: "Some fields aren't valid")."""
    bad = [n for n in names if n not in known and n not in ALIASES and not columns.is_column(n)]
    if bad:
        raise ValueError("Some fields aren't valid: " + ", ".join(bad))


# ---------------------------------------------------------------------------------------------------------------
# Values

NAME_AS_TEXT = frozenset(("sll",))      # protocols whose top item tshark gives their name as its text


def item_value(item) -> str:
    """The -T fields text of one occurrence."""
    f = item.field
    if f is None:                                   # an expert item under its own abbrev: a Lua ProtoExpert, FT_NONE
        return "1"
    t = f.ftype
    if t == "bytes":                                # an empty byte field prints as its -V label does (measured)
        return item.value.hex() if item.value else "<MISSING>"
    if t == "none":
        return "1"
    if t == "protocol":
        if f.abbrev == "data" and item.children:      # the data protocol's value is its bytes (print.c)
            return item.children[0].value.hex()
        # tshark prints the item's representation if the dissector set one, else the abbrev: an item added with
        # proto_tree_add_item has none (its -V line is made from the name only when displayed: a Lua protocol's
        # top, ICMP's, an IP header quoted too short for its addresses) unless a text was set (set_text: a label
        # other than the name); SLL's has its name as a text (proto_tree_add_protocol_format)
        if not item.label or (item.label == f.name and f.abbrev not in NAME_AS_TEXT):
            return f.abbrev
        return item.label
    return tv.json_value(f, item.value)


def expert_values(abbrev: str, index: dict) -> list[str]:
    items = index.get("_ws.expert", ())
    if abbrev == "_ws.expert":
        return [i.label for i in items]
    infos = [i.expert_info for i in items]
    if abbrev == "_ws.expert.message":
        return [i.message for i in infos]
    if abbrev == "_ws.expert.severity":
        return [str(i.severity) for i in infos]
    if abbrev == "_ws.expert.group":
        return [str(i.group) for i in infos]
    # _ws.malformed: one hidden "Malformed Packet" protocol item (no label: its abbrev) per malformed expert, after
    # the labelled item a reassembly error hangs its expert on
    out = []
    for i in infos:
        if i.group == MALFORMED:
            if i.abbrev == "_ws.malformed.reassembly":
                out.append(std_fields.REASSEMBLY_ERROR.format(i.message))
            out.append(abbrev)
    return out


# tshark's -T fields escapes exactly these five characters in values (measured: bytes 0x01-0x1f, 0x5c, 0x7f, quotes)
_ESCAPES = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r"}


# Fields tshark adds as hidden items for both ends (ip.addr = ip.src, ip.dst): where the layers do not add them
ALIASES = {"ip.addr": ("ip.src", "ip.dst"), "ipv6.addr": ("ipv6.src", "ipv6.dst"),
           "udp.port": ("udp.srcport", "udp.dstport"), "tcp.port": ("tcp.srcport", "tcp.dstport"),
           "sctp.port": ("sctp.srcport", "sctp.dstport"), "eth.addr": ("eth.dst", "eth.src")}


def field_values(packet, abbrev: str, first_ns: int | None = None, time_format: str = "r") -> list[str]:
    """Every occurrence of `abbrev` in the packet, in tree order, as -T fields text. first_ns: the capture's first
    frame time, for the _ws.col.Time column (as -t `time_format` says)."""
    index = packet.index()
    if abbrev in EXPERT_FIELDS:
        return expert_values(abbrev, index)
    items = index.get(abbrev)
    if not items:
        if abbrev in ALIASES:
            return [v for part in ALIASES[abbrev] for v in field_values(packet, part)]
        if columns.is_column(abbrev):
            value = columns.column(packet, abbrev, first_ns, time_format)
            return [] if value is None else [value]
        return []
    return [item_value(i) for i in items]


class FieldsWriter:
    """Writes the BOM and header (-E bom=y, header=y) before the first packet, then one line per packet."""

    def __init__(self, out, names, options: FieldsOptions):
        self.out, self.names, self.opts = out, list(names), options
        self.started = False
        self.first_ns: int | None = None      # the capture's first frame time (the CLI sets it): _ws.col.Time
        self.time_format = "r"                # -t (the CLI sets it): _ws.col.Time

    def _start(self) -> None:
        # lazily, so a capture that fails to open prints nothing at all
        self.started = True
        if self.opts.bom:
            self.out.write("\ufeff")
        if self.opts.header:
            self.out.write(self.opts.separator.join(self.names) + "\n")

    def line(self, packet) -> str:
        first_ns, time_format = self.first_ns, self.time_format
        return self.join([field_values(packet, abbrev, first_ns, time_format) for abbrev in self.names])

    def join(self, columns) -> str:
        """The line of every -e field's values (a list of texts each), as -E says."""
        o = self.opts
        cells = []
        for values in columns:
            if values and o.occurrence == "f":
                values = values[:1]
            elif values and o.occurrence == "l":
                values = values[-1:]
            if values:
                text = o.aggregator.join([v.translate(_ESCAPES) for v in values])
                cells.append(o.quote + text + o.quote)
            else:
                cells.append("")
        return o.separator.join(cells)

    def write(self, packet) -> None:
        if not self.started:
            self._start()
        self.out.write(self.line(packet) + "\n")

    def close(self) -> None:
        if not self.started:
            self._start()


def make_writer(out, names, option_values, protocols) -> FieldsWriter:
    """The writer for -T fields; ValueError (one line) for no -e, an unknown field or a bad -E option."""
    if not names:
        raise ValueError('"-Tfields" was specified, but no fields were specified with "-e".')
    check_fields(names, known_fields(protocols))
    return FieldsWriter(out, names, parse_options(option_values))
