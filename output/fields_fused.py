"""-T fields of a few fields without building the standard layers: the fused machine (analysis/fused_items.py)
makes the line of every frame it models, the full decode the others'.

The fields it makes: frame numbers and lengths, IPv4 addresses and UDP or TCP ports, read from the frame's own
headers (a modelled frame is Ethernet, IPv4 without options, UDP or TCP), and the plain fields of the game
protocols it dissects. A line is FieldsWriter.join's, so -E's options apply alike. Nothing is printed before the
machine's first pass says whether its lines are used (else the caller decodes every frame in full).
"""
from __future__ import annotations

from ..analysis import fused_items
from ..analysis.fused_items import FusedItems
from ..analysis.fused_keys import dotted
from ..engine.dispatch import index_asked
from .fields_out import ALIASES, item_value

# the standard fields the machine reads from a modelled frame's headers
STANDARD = frozenset(("frame.number", "frame.len", "frame.cap_len", "ip.src", "ip.dst", "ip.addr",
                      "udp.srcport", "udp.dstport", "udp.port", "tcp.srcport", "tcp.dstport", "tcp.port"))


def applies(names, demand, protocols) -> bool:
    """Every -e name is a standard field above or a plain table field of a protocol the machine dissects."""
    if demand is None:
        return False
    by_name = {p.name: p for p in protocols}
    for name in names:
        if name in STANDARD:
            continue
        proto = by_name.get(name.split(".")[0])
        if proto is None or not fused_items.plain_fields(proto, demand):
            return False
    return True


class FusedFields(FusedItems):
    """The machine whose record of a frame is its -T fields line."""

    def __init__(self, dispatcher, writer, protocols, spool):
        super().__init__(dispatcher, protocols, spool)
        self.writer = writer
        # per -e name: the standard fields whose values it prints (an alias: both ends), or None: a game field's
        self.columns = [(n, ALIASES.get(n, (n,)) if n in STANDARD else None) for n in writer.names]

    def record(self, key, frame) -> bytes:
        found: dict = {}             # the game items by abbrev, in tree order (as engine.dispatch.Packet.index)
        names = self.demand.names
        for _proto, tree in self.layers:
            index_asked(found, tree, names)
        ends, transport = self.parsed[0], key[0]
        columns = []
        for name, parts in self.columns:
            if parts is None:
                items = found.get(name)
                columns.append([item_value(i) for i in items] if items else [])
            else:
                columns.append([v for part in parts for v in _standard_value(part, transport, ends, frame)])
        return self.writer.join(columns).encode()


def _standard_value(abbrev: str, transport: int, ends, frame) -> list[str]:
    """A standard field's -T fields text in a modelled frame, as output.fields_out.item_value prints the full
    decode's item: a number in decimal, an address dotted."""
    if abbrev == "frame.number":
        return [str(frame.number)]
    if abbrev == "frame.len":
        return [str(frame.length)]
    if abbrev == "frame.cap_len":
        return [str(frame.caplen)]
    if abbrev == "ip.src":          # (analysis.fused_keys: the ends carry an address's 4 bytes)
        return [dotted(ends[0][0])]
    if abbrev == "ip.dst":
        return [dotted(ends[1][0])]
    if abbrev.startswith("tcp." if transport == 6 else "udp."):
        return [str(ends[0][1] if abbrev.endswith("srcport") else ends[1][1])]
    return []


def write_fields(path, dispatcher, writer, protocols, limit: int | None = None, packets_of=None):
    """Print -T fields for a capture file (its first `limit` frames) with the machine: the machine that ran (its
    `resume`: the frame from which the caller decodes in full and prints, having decoded the earlier ones), or
    None, having printed nothing, when the whole capture must be decoded in full."""
    out = writer.out

    def line(text: bytes) -> None:
        out.write(text.decode())
        out.write("\n")

    with fused_items.spool() as spool:
        machine = FusedFields(dispatcher, writer, protocols, spool)
        # (writer.close() writes the BOM and header, when asked, before the first line)
        return fused_items.run(machine, path, limit, line, writer.write, writer.close, packets_of)
