"""-q -z <proto>,types without building the standard layers: the fused machine (analysis/fused_items.py) finds
the message types of each frame it models, the full decode those of the others, and the taps get them in frame
order (a tap lists its conversations in the order it first sees them)."""
from __future__ import annotations

import marshal

from ..engine.tree import Layer
from . import fused_items
from .fused_items import FusedItems
from .stats_game import MessageTypes


def applies(taps, demand, protocols) -> bool:
    """Every statistic is a <proto>,types of a protocol the machine dissects (with its type fields asked)."""
    by_name = {p.name: p for p in protocols}
    return bool(taps) and demand is not None and all(
        isinstance(t, MessageTypes) and t.proto in by_name and fused_items.plain_fields(by_name[t.proto], demand)
        for t in taps)


class FusedTypes(FusedItems):
    """The machine whose record of a frame is its sender, its receiver and each asked layer's (protocol, length,
    types), marshalled (the fastest of the standard library's encodings of plain tuples); empty for a frame with
    none."""

    def __init__(self, dispatcher, taps, protocols, spool):
        super().__init__(dispatcher, protocols, spool)
        self.tap_of = {t.proto: t for t in taps}      # (the same statistic twice finds the same types)

    def record(self, key, frame) -> bytes:
        found = []
        for name, tree in self.layers:
            tap = self.tap_of.get(name)
            if tap is not None:
                found.append((name, tree.length, tap.layer_types(Layer(name, tree))))
        return marshal.dumps((*self.ends_text(), found)) if found else b""


def count_types(path, dispatcher, taps, protocols, limit: int | None = None, packets_of=None):
    """Fill the taps from a capture file (its first `limit` frames) with the machine: the machine that ran, or
    None, the taps untouched, when the whole capture must be decoded in full (the caller does it)."""

    counting = [type(tap)([]) for tap in taps]      # (filled apart: a run the full decode must redo leaves none)

    def kept(text: bytes) -> None:
        if text:
            a, b, found = marshal.loads(text)
            for tap in counting:
                mine = [(types, length) for name, length, types in found if name == tap.proto]
                if mine:
                    tap.add_types(a, b, mine)

    def full(packet) -> None:
        for tap in counting:
            tap.add(packet)

    with fused_items.spool() as spool:
        machine = fused_items.run(FusedTypes(dispatcher, counting, protocols, spool), path, limit, kept, full,
                                  packets_of=packets_of)
    if machine is None or machine.resume is not None:
        return None
    for tap, counted in zip(taps, counting):
        tap.convs = counted.convs
    return machine
