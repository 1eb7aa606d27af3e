"""What a run reads of the game layers: decode only that (Wireshark's dissection with a NULL tree).

A run that prints no packet tree (statistics, a few `-T fields -e`, a filter with -q or -w) reads only some
fields. `Demand` says which, from every reader's list (taps, the display filter, -e): an abbrev ("blank.seq"), a
protocol's name (its layer must be there: io,phs, `_ws.col.Protocol`), or EVERYTHING (a reader that walks whole
trees: the Info column, expert infos, -V, JSON). The dispatcher (engine.dispatch.Stack.dissect) then:

- skips the dissection of a layer whose protocol declares `own_state_only` (its dissection keeps state that
  nothing but its own items read: no hand-off, no framing or heuristic state) when nothing asks for any of its
  fields: the layer is there (its protocol item, its bytes), nothing else is built;
- gives the others `Ctx.demand`, the abbrevs asked of that protocol: a table protocol (engine.protocol) whose
  asked fields all lie in its header decodes the header and its state (revision, sequence) and stops there;
  and `Ctx.asked` when they are plain fields (empty when nothing but the layer's presence is read): the table
  words build items for those alone, and scan the rest (a stateful message keeps its state, builds no item).

Over-asking is always safe (more is decoded); tests/test_demand.py compares every such run with the full decode.
"""
from __future__ import annotations

import re

EVERYTHING = None

# -e / column names that need only the standard layers and the layers' presence (output/columns.py)
PLAIN_COLUMNS = {"_ws.col.No.", "_ws.col.Time", "_ws.col.Source", "_ws.col.Destination", "_ws.col.Protocol",
                 "_ws.col.Length"}
# fields another protocol's layer adds too (packet-ipv6.c's hidden ip.version): the layers they are also in
ALSO_IN = {"ip.version": ("ipv6",)}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


class Demand:
    """The abbrevs a run reads. `of(protocol)`: what it asks of one protocol (a frozenset, empty: its layer's
    presence only), or EVERYTHING."""

    def __init__(self, names=()):
        self.names = frozenset(names)
        self._of: dict[str, frozenset] = {}
        self._plain: dict[str, frozenset | None] = {}
        # the protocols the names belong to ("ip.src" -> "ip", aliases' parts too): the layers index() builds
        self.roots = frozenset(n.split(".")[0] for n in self.names).union(
            *(ALSO_IN.get(n, ()) for n in self.names))

    def of(self, proto: str):
        hit = self._of.get(proto)
        if hit is None:
            prefix = proto + "."
            hit = self._of[proto] = frozenset(n for n in self.names if n.startswith(prefix))
        return hit

    def plain(self, proto, asked: frozenset):
        """`asked` (what is read of `proto`) when every name in it is a field `proto`'s tables register, so its
        table words may build items for those alone (Ctx.asked); None when some name is an expert's, a
        protocol's or a wildcard (those read items that only the full tree has)."""
        hit = self._plain.get(proto.name, False)
        if hit is False:
            fields = getattr(proto, "fields", None) or {}
            experts = {f"{proto.name}.{kind}" for kind in getattr(proto, "experts", ())}
            hit = self._plain[proto.name] = asked if asked <= fields.keys() and asked.isdisjoint(experts) else None
        return hit


def combine(parts) -> frozenset | None:
    """The names every reader reads (each an iterable of names, or EVERYTHING, which wins)."""
    names: set[str] = set()
    for part in parts:
        if part is EVERYTHING:
            return EVERYTHING
        names.update(part)
    return frozenset(names)


def of_fields(names) -> frozenset | None:
    """-T fields -e NAME...: the abbrevs they read; the Info column or expert pseudo-fields read whole trees."""
    out = set()
    for name in names:
        if name.startswith("_ws.") and name not in PLAIN_COLUMNS:
            return EVERYTHING
        out.add(name)
        if "." not in name:     # -e rutentoy prints the layer's label ("Rutentoy Protocol, World Chunk"): all of it
            out.add(name + ".*")
    return frozenset(out)


def of_filter(text: str | None) -> frozenset | None:
    """The names a display filter mentions (over-approximated: every dotted word of its text, string literals
    too, which only decodes more); one with expert pseudo-fields or functions over whole layers reads every
    tree."""
    if text is None:
        return frozenset()
    names = set(_NAME.findall(text))
    if any(n.startswith("_ws.") for n in names):
        return EVERYTHING
    return frozenset(names)


__all__ = ["Demand", "EVERYTHING", "combine", "of_fields", "of_filter"]
