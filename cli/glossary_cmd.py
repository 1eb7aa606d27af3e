"""`protodump -G REPORT` (tshark's glossaries: fields, protocols, defaultprefs, currentprefs, decodes) and
`protodump prefs` (every preference, its choices and its default, in tshark's -G defaultprefs form).

Lines are tshark 4.0's; the standard layers' lines are protodump's own (their fields, not all of Wireshark's), and
a glossary lists what protodump dissects: the game protocols as the generated plugin registers them.
"""
from __future__ import annotations

import click

from ..capture.field_types import TSHARK_TYPES
from ..dissectors import PROTOCOLS
from ..engine.dispatch import Dispatcher, Settings
from ..engine.tree import INTEGER_TYPES, FieldInfo
from ..output.fields_out import EXPERT_FIELDS, standard_fields

FT_NAMES = {"none": "FT_NONE", "protocol": "FT_PROTOCOL", "bool": "FT_BOOLEAN", "uint8": "FT_UINT8",
            "uint16": "FT_UINT16", "uint24": "FT_UINT24", "uint32": "FT_UINT32", "uint64": "FT_UINT64",
            "int8": "FT_INT8", "int16": "FT_INT16", "int24": "FT_INT24", "int32": "FT_INT32", "int64": "FT_INT64",
            "float": "FT_FLOAT", "double": "FT_DOUBLE", "string": "FT_STRING", "stringz": "FT_STRINGZ",
            "bytes": "FT_BYTES"}
BOOLEAN_CHOICES = {"TRUE", "FALSE"}
# Wireshark's registered (name, short name) of the standard protocols (-G protocols); a game's short name is its
# abbrev in capitals, as the plugin's Proto() registers it
STANDARD_PROTOCOLS = {"frame": ("Frame", "Frame"), "eth": ("Ethernet", "Ethernet"),
                      "vlan": ("802.1Q Virtual LAN", "VLAN"), "ieee8021ad": ("IEEE 802.1ad", "IEEE 802.1AD"),
                      "sll": ("Linux cooked-mode capture", "SLL"), "null": ("Null/Loopback", "Null"),
                      "raw": ("Raw packet data", "Raw"), "ip": ("Internet Protocol Version 4", "IPv4"),
                      "ipv6": ("Internet Protocol Version 6", "IPv6"), "ah": ("Authentication Header", "AH"),
                      "udp": ("User Datagram Protocol", "UDP"), "tcp": ("Transmission Control Protocol", "TCP"),
                      "icmp": ("Internet Control Message Protocol", "ICMP"),
                      "icmpv6": ("Internet Control Message Protocol v6", "ICMPv6"), "data": ("Data", "Data"),
                      "sctp": ("Stream Control Transmission Protocol", "SCTP"),
                      "websocket": ("WebSocket", "WebSocket"), "_ws.expert": ("Expert Info", "Expert"),
                      "_ws.malformed": ("Malformed Packet", "Malformed packet"),
                      "pkt_comment": ("Packet comments", "Pkt_Comment"),
                      "arp": ("Address Resolution Protocol", "ARP/RARP")}


def protocol_names() -> list[tuple[str, str, str]]:
    """(abbrev, name, short name) of every protocol protodump dissects: standard layers first, then the games."""
    out = {f.abbrev: (f.name, f.abbrev.upper()) for f in standard_fields()
           if f.ftype == "protocol" and "." not in f.abbrev}
    out.update((k, v) for k, v in STANDARD_PROTOCOLS.items() if k in out or k.startswith("_ws"))
    for p in PROTOCOLS:
        out[p.name] = STANDARD_PROTOCOLS.get(p.name, (p.description, p.name.upper()))
    return [(abbrev, name, short) for abbrev, (name, short) in out.items()]


def field_lines() -> list[str]:
    """-G fields: `P\\tName\\tabbrev` for a protocol, `F\\tName\\tabbrev\\tFT_TYPE\\tprotocol\\tBASE\\tmask\\tblurb`."""
    lines = []
    groups: dict[str, list] = {}
    for f in [*standard_fields(), *EXPERT_FIELDS.values()]:
        groups.setdefault(f.abbrev.split(".")[0], []).append(f)
    for p in PROTOCOLS:
        groups[p.name] = list(p.fields.values()) + [   # a Lua ProtoExpert: FT_NONE, named after its kind
            FieldInfo(f"{p.name}.{kind}", kind.capitalize(), "none") for kind in p.experts
            if f"{p.name}.{kind}" not in p.fields]
    names = {abbrev: name for abbrev, name, _ in protocol_names()}
    for proto, fields in groups.items():
        if proto in names:
            lines.append(f"P\t{names[proto]}\t{proto}")
        for f in fields:
            if f.ftype == "protocol" and f.abbrev == proto:
                continue
            if f.ftype == "bool":
                base = str(f.bits)              # a boolean's "base" is its parent's width in bits
            else:
                base = f"BASE_{f.base}" if f.ftype in INTEGER_TYPES and f.base != "NONE" else ""
            ftype = TSHARK_TYPES.get(f.abbrev) or FT_NAMES.get(f.ftype, "FT_" + f.ftype.upper())
            lines.append(f"F\t{f.name}\t{f.abbrev}\t{ftype}\t{proto}\t"
                         f"{base}\t0x{f.mask:x}\t{f.description}")
    return lines


def preferences() -> list[tuple[str, str, str, list[str]]]:
    """(name, description, default, choices) of every preference, in protocol order."""
    return [(f"{p.name}.{name}", desc, default, choices)
            for p in PROTOCOLS for name, (desc, default, choices) in p.preferences().items()]


def pref_block(name, desc, value, choices, current: bool = False) -> str:
    """One preference as tshark -G defaultprefs prints it (the value commented out unless `current`)."""
    if set(c.upper() for c in choices) == BOOLEAN_CHOICES:
        kind = "# TRUE or FALSE (case-insensitive)\n"
    elif choices:
        kind = f"# One of: {', '.join(choices)}\n# (case-insensitive).\n"
    elif value.isdigit():
        kind = "# A decimal number\n"
    else:
        kind = "# A string\n"
    return f"# {desc}\n{kind}{'' if current else '#'}{name}: {value}\n"


def decode_lines() -> list[str]:
    """-G decodes: `table\\tvalue\\tprotocol` for every registration of the game protocols."""
    tables = Dispatcher(PROTOCOLS, Settings()).tables
    return [f"{table}\t{key}\t{proto.name}" for table, keys in tables.items() for key, proto in keys.items()]


REPORTS = ("fields", "protocols", "defaultprefs", "currentprefs", "decodes")


@click.command(name="glossary", context_settings={"help_option_names": ["-h", "--help"]}, hidden=True)
@click.argument("report", type=click.Choice(REPORTS), default="fields")
@click.option("-o", "prefs", multiple=True, metavar="NAME:VALUE", help="With currentprefs: a preference's value.")
def glossary(report, prefs):
    """tshark -G REPORT: fields, protocols, defaultprefs, currentprefs, decodes."""
    if report == "fields":
        lines = field_lines()
    elif report == "protocols":
        # tshark lists the protocols registered last first: the plugin's (in reverse order), then its own
        plugin = [p.name for p in reversed(PROTOCOLS) if getattr(p, "lua", True) is not False]
        rows = sorted(protocol_names(), key=lambda row: plugin.index(row[0]) if row[0] in plugin else len(plugin))
        lines = [f"{name}\t{short}\t{abbrev}" for abbrev, name, short in rows]
    elif report == "decodes":
        lines = decode_lines()
    else:
        values = dict(p.split(":", 1) for p in prefs if ":" in p)
        current = report == "currentprefs"
        # currentprefs: a value set (-o) and not the default is written uncommented, as tshark does
        lines = [pref_block(n, d, values.get(n, v), c, current and values.get(n, v) != v)
                 for n, d, v, c in preferences()]
    click.echo("\n".join(lines))


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
def prefs():
    """List every preference (-o NAME:VALUE): its description, its values and its default, as tshark -G
    defaultprefs prints them.

    \b
    Example:
      protodump prefs
      protodump -o blank.revision:2015 captures/blank-2015.pcap
    """
    click.echo("\n".join(pref_block(*p) for p in preferences()))
