"""Statistics of a game layer, per conversation and direction, for every protocol a field table defines:

-z <proto>,types  message-type counts and bytes (the game layer's bytes, once per layer) by direction, from the
                  protocol's type field and its value names
-z <proto>,seq    packets, lost, duplicated and out-of-order messages per direction, from the <proto>.sequence
                  expert infos (only for protocols that declare sequence analysis): what tshark shows through
                  the plugin

A conversation's client is the source of its first packet (a session starts with the client's login), so "c2s"
is client to server.
"""
from __future__ import annotations

from ..dissectors import PROTOCOLS
from ..engine.protocol import classify_sequence_note
from .stats_base import Tap, register


def _conversation(table: dict, packet):
    """The conversation record of a packet and the packet's direction ("c2s" / "s2c")."""
    d = packet.decoded
    return _conversation_of(table, f"{d.src}:{d.sport}", f"{d.dst}:{d.dport}")


def _conversation_of(table: dict, a: str, b: str):
    """The conversation record of a packet from `a` to `b` ("address:port") and its direction."""
    key = (a, b) if a < b else (b, a)
    conv = table.get(key)
    if conv is None:
        conv = table[key] = {"client": a, "server": b, "c2s": {}, "s2c": {}}
    return conv, ("c2s" if a == conv["client"] else "s2c")


class GameTap(Tap):
    """A statistic over one game protocol's layers, per conversation and direction."""
    proto = ""                   # set per protocol by register_game_taps

    def __init__(self, args):
        super().__init__(args)
        self.convs: dict = {}

    def add(self, packet):
        layers = [layer for layer in packet.games if layer.proto == self.proto]
        if layers:
            conv, direction = _conversation(self.convs, packet)
            self.count(conv[direction], layers)

    def count(self, stats: dict, layers: list) -> None:
        raise NotImplementedError


class MessageTypes(GameTap):
    type_abbrevs: tuple = ()

    def demand(self):
        return frozenset(self.type_abbrevs)

    def count(self, counts, layers):
        self.count_types(counts, [(self.layer_types(layer), layer.item.length) for layer in layers])

    def add_types(self, a: str, b: str, found: list) -> None:
        """A packet from `a` to `b` ("address:port") whose layers of the protocol have these (types, length)
        (analysis/types_fused.py: the fused machine's)."""
        conv, direction = _conversation_of(self.convs, a, b)
        self.count_types(conv[direction], found)

    @staticmethod
    def count_types(counts, found) -> None:
        for types, length in found:
            for n, key in enumerate(types):
                c = counts.setdefault(key, [0, 0])
                c[0] += 1
                c[1] += length if n == 0 else 0     # a layer's bytes count once

    def layer_types(self, layer) -> list[str]:
        """The message types of one layer: every item of the most specific type field present (the last of
        `type_abbrevs` found: an Iceball Lua packet framed inside a system id counts as its Lua id; ENet's
        several commands each count)."""
        found: dict[str, list] = {}
        for node in layer.item.walk():
            f = node.field
            if f is not None and f.abbrev in self.type_abbrevs:
                found.setdefault(f.abbrev, []).append(node)
        for abbrev in reversed(self.type_abbrevs):
            if abbrev in found:
                return [f"{(n.field.values or {}).get(n.value, 'Unknown')} ({n.value})" for n in found[abbrev]]
        return ["[no type: malformed]"]

    def result(self):
        out = []
        for conv in self.convs.values():
            types = {}
            for direction in ("c2s", "s2c"):
                for key, (n, size) in conv[direction].items():
                    t = types.setdefault(key, {"type": key, "c2s_packets": 0, "c2s_bytes": 0,
                                               "s2c_packets": 0, "s2c_bytes": 0})
                    t[f"{direction}_packets"], t[f"{direction}_bytes"] = n, size
            rows = sorted(types.values(), key=lambda t: -(t["c2s_packets"] + t["s2c_packets"]))
            out.append({"client": conv["client"], "server": conv["server"], "types": rows})
        return {"kind": self.kind, "layout": "game_types", "proto": self.proto, "conversations": out}


class SequenceAnalysis(GameTap):
    expert_abbrev = ""           # set per protocol by register_game_taps

    def count(self, s, layers):
        if not s:
            s.update(packets=0, lost=0, duplicate=0, out_of_order=0)
        s["packets"] += 1
        for layer in layers:
            for item in layer.item.walk():
                info = item.expert_info
                if info is not None and info.abbrev == self.expert_abbrev:
                    note = classify_sequence_note(info.message)
                    if note is not None:
                        s[note[0]] += note[1]

    def result(self):
        rows = []
        for conv in self.convs.values():
            for direction, (src, dst) in (("c2s", (conv["client"], conv["server"])),
                                          ("s2c", (conv["server"], conv["client"]))):
                s = conv[direction]
                if s:
                    rows.append({"source": src, "destination": dst, "direction": direction,
                                 "packets": s["packets"], "lost": s["lost"], "duplicates": s["duplicate"],
                                 "out_of_order": s["out_of_order"]})
        return {"kind": self.kind, "layout": "game_seq", "proto": self.proto, "directions": rows}


def register_game_taps(protocols) -> None:
    """`-z <proto>,types` for every table-defined protocol, `-z <proto>,seq` for those with sequence analysis."""
    for p in protocols:
        register(type(f"{p.name}Types", (MessageTypes,), {
            "name": f"{p.name},types", "kind": f"{p.name}_types", "proto": p.name,
            "type_abbrevs": tuple(f"{p.name}.{t}" for t in getattr(p, "type_fields", None) or (p.type_field,))}))
        if p.sequence:
            register(type(f"{p.name}Sequence", (SequenceAnalysis,), {
                "name": f"{p.name},seq", "kind": f"{p.name}_seq", "proto": p.name,
                "expert_abbrev": f"{p.name}.sequence"}))


register_game_taps(PROTOCOLS)
