"""-z io,phs: the protocol hierarchy, frames and bytes per protocol path, as tshark counts them.

The path is frame.protocols without the pseudo-protocols tshark keeps out of the tree ("ethertype"), plus
"data" for a transport payload no dissector claimed (tshark's data dissector takes it).
"""
from __future__ import annotations

from .stats_base import Tap, register

HIDDEN = {"frame", "ethertype"}


def protocol_path(packet) -> list[str]:
    d = packet.decoded
    path = [p for p in d.protocols if p not in HIDDEN]
    if packet.game is None and d.transport in ("udp", "tcp") and d.payload:
        path.append("data")
    return path


@register
class ProtocolHierarchy(Tap):
    name = "io,phs"
    kind = "phs"
    usage = "io,phs[,FILTER]"

    def __init__(self, args):
        self.filter = ",".join(args)
        self.match = compile_optional(self.filter)
        self.root: dict = {}          # name -> [frames, bytes, children]; dicts keep first-seen order

    def add(self, packet):
        if self.match is not None and not self.match(packet):
            return
        level, size = self.root, packet.frame.length
        for proto in protocol_path(packet):
            node = level.setdefault(proto, [0, 0, {}])
            node[0] += 1
            node[1] += size
            level = node[2]

    def result(self):
        def tree(level):
            return [{"protocol": name, "frames": n[0], "bytes": n[1], "children": tree(n[2])}
                    for name, n in level.items()]
        return {"kind": self.kind, "filter": self.filter, "protocols": tree(self.root)}


def compile_optional(text: str):
    """A display filter for a statistic, or None. Uses analysis.filter when it is there."""
    if not text:
        return None
    from .stats_filter import compile_filter
    return compile_filter(text)
