"""Statistics of the blank game layer, per conversation and direction.

-z blank,types  message-type counts and bytes (blank message bytes = UDP payload) by direction
-z blank,seq    packets, lost, duplicated and out-of-order messages per direction, from the dissector's
                blank.sequence expert infos (the same analysis tshark shows through the plugin)

A conversation's client is the source of its first packet (a blank session starts with the client's Login),
so "c2s" is client to server.
"""
from __future__ import annotations

import re

from .stats_base import Tap, register

PROTO = "blank"


def _conversation(table: dict, packet):
    """The conversation record of a packet and the packet's direction ("c2s" / "s2c")."""
    d = packet.decoded
    a, b = f"{d.src}:{d.sport}", f"{d.dst}:{d.dport}"
    key = (a, b) if a < b else (b, a)
    conv = table.get(key)
    if conv is None:
        conv = table[key] = {"client": a, "server": b, "c2s": {}, "s2c": {}}
    return conv, ("c2s" if a == conv["client"] else "s2c")


@register
class BlankTypes(Tap):
    name = "blank,types"
    kind = "blank_types"

    def __init__(self, args):
        super().__init__(args)
        self.convs: dict = {}
        self.names = None

    def add(self, packet):
        if packet.protocol != PROTO or packet.game is None:
            return
        conv, direction = _conversation(self.convs, packet)
        items = packet.index().get("blank.type")
        if items:
            field, value = items[0].field, items[0].value
            name = (field.values or {}).get(value, "Unknown")
            key = f"{name} ({value})"
        else:
            key = "[no type: malformed]"
        counts = conv[direction].setdefault(key, [0, 0])
        counts[0] += 1
        counts[1] += len(packet.decoded.payload)

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
        return {"kind": self.kind, "conversations": out}


_LOST = re.compile(r"(\d+) lost before seq")


@register
class BlankSequence(Tap):
    name = "blank,seq"
    kind = "blank_seq"

    def __init__(self, args):
        super().__init__(args)
        self.convs: dict = {}

    def add(self, packet):
        if packet.protocol != PROTO or packet.game is None:
            return
        conv, direction = _conversation(self.convs, packet)
        s = conv[direction]
        if not s:
            s.update(packets=0, lost=0, duplicates=0, out_of_order=0)
        s["packets"] += 1
        for item in packet.game.item.walk():
            info = item.expert_info
            if info is None or info.abbrev != "blank.sequence":
                continue
            m = _LOST.search(info.message)
            if m:
                s["lost"] += int(m.group(1))
            elif info.message.startswith("Duplicate"):
                s["duplicates"] += 1
            elif info.message.startswith("Out of order"):
                s["out_of_order"] += 1

    def result(self):
        rows = []
        for conv in self.convs.values():
            for direction, (src, dst) in (("c2s", (conv["client"], conv["server"])),
                                          ("s2c", (conv["server"], conv["client"]))):
                s = conv[direction]
                if s:
                    rows.append({"source": src, "destination": dst, "direction": direction, **s})
        return {"kind": self.kind, "directions": rows}
