"""`-T json`: packets in the shape of `tshark -T json`; a game layer renders exactly as tshark renders the same
tree built by the generated Lua plugin (the rules are in output/tshark_values.py)."""
from __future__ import annotations

import time

from ..engine.tree import Item
from . import tshark_values as tv


def item_pairs(item: Item) -> list:
    """The (key, value) members of an item's children object, in tshark's order and with its keys."""
    pairs = []
    for child in item.children or ():
        info = child.expert_info
        if info is not None:
            pairs.extend(tv.expert_pairs(info))
            continue
        f = child.field
        if f is None:
            pairs.append((tv.LUA_TEXT_KEY, item_pairs(child) if child.children else ""))
        elif child.children:
            if f.ftype in ("none", "protocol"):
                pairs.append((f.abbrev, item_pairs(child)))
            else:
                pairs.append((f.abbrev, tv.json_value(f, child.value)))
                pairs.append((f.abbrev + "_tree", item_pairs(child)))
        elif f.ftype == "protocol":
            pairs.append((f.abbrev, child.label or f.name))
        else:
            pairs.append((f.abbrev, tv.json_value(f, child.value)))
    return pairs


def layer_pairs(packet) -> list:
    pairs = []
    for layer in packet.layers():
        top = layer.item
        pairs.append((layer.proto, item_pairs(top) if top.children else (top.label or "")))
    return pairs


def packet_text(packet) -> str:
    date = time.strftime("%Y-%m-%d", time.gmtime(packet.frame.ts_ns // 1_000_000_000))
    body = ",\n".join(tv.json_kv(tv.LAYER_DEPTH, key, value) for key, value in layer_pairs(packet))
    return tv.packet_head(date) + body + tv.PACKET_TAIL


class JsonWriter:
    """Streams packets as one JSON array, one packet at a time (constant memory)."""

    def __init__(self, out):
        self.out, self.first = out, True

    def write(self, packet) -> None:
        self.out.write("[\n" if self.first else ",\n")
        self.first = False
        self.out.write(packet_text(packet))

    def close(self) -> None:
        self.out.write("[\n\n]\n" if self.first else "\n]\n")
