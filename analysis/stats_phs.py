"""-z io,phs: the protocol hierarchy, frames and bytes per protocol path, as tshark counts them.

The path is tshark's nesting of protocol items in the tree: the standard layers (frame.protocols up to the
transport, without the pseudo-protocols tshark keeps out of the tree, "ethertype"), then every game layer in tree
order (several PDUs of one TCP segment nest one under the other, as the plugin's items do), then "tcp.segments"
when a PDU was reassembled from segments by tshark's TCP, and "data" for a UDP payload no dissector claimed
(tshark's data dissector takes it, as it takes the payload of a UDP datagram an ICMP error quotes; TCP and SCTP
payloads belong to their stream, even while it buffers them, but for a TCP payload tshark hands to its data
dissector: a keep-alive's byte, a connection nobody claims).
"""
from __future__ import annotations

from ..engine.demand import of_filter
from .stats_base import Tap, register

# frame.protocols names that are no level of the hierarchy: pseudo-protocols, and IPv6's extension headers (their
# protocol items sit inside the IPv6 one)
HIDDEN = {"frame", "ethertype", "ipv6.hopopts", "ipv6.dstopts", "ipv6.routing", "ipv6.fraghdr"}


def protocol_path(packet) -> list[str]:
    d = packet.decoded
    std = d.protocols
    if d.transport in std:                       # the game layers' names follow the transport in frame.protocols
        std = std[:len(std) - std[::-1].index(d.transport)]
    path = [p for p in std if p not in HIDDEN]
    segments_at = None
    if d.transport == "sctp" and getattr(d, "chunk_marks", None):
        # the game layers with the SCTP continuation layers between them (engine.dispatch.Packet.layers)
        layers = packet.layers()
        first = next(i for i, layer in enumerate(layers) if layer.proto == "sctp")
        path.extend(layer.proto for layer in layers[first + 1:] if layer.proto != "tcp.segments")
    else:
        # TCP's reassembled-segments item follows the layers of the PDU it completed: after the first round of
        # desegment_tcp when a second one follows (Decoded.round_at), else after them all
        segments_at = d.round_at if d.reassembled else None
        for i, layer in enumerate(packet.games):
            if i == segments_at:
                path.append("tcp.segments")
            path.append(layer.proto)
            if layer.proto == "websocket":
                # the items its dissector put on the top level, which io,phs counts: a continuation frame's
                # payload, a fragmented message's reassembly (the message's own layer follows)
                path.extend(item.field.abbrev for item in layer.after or () if item.field is not None)
    if d.reassembled and segments_at is None:
        path.append("tcp.segments")
    if not packet.games and (d.transport == "udp" and d.payload or d.transport == "tcp" and d.unclaimed
                             or d.icmp is not None and d.icmp.quoted_udp is not None and d.icmp.data_at is not None):
        path.append("data")      # (an ICMP error's quoted UDP payload: tshark's data layer, on the top level)
    if d.dropped and d.reassembly_note():       # TCP's reassembly threw: its "[Reassembly error ...]" item
        path.append("_ws.malformed")
    return path


@register
class ProtocolHierarchy(Tap):
    name = "io,phs"
    kind = "phs"
    usage = "io,phs[,FILTER]"

    def __init__(self, args):
        self.filter = ",".join(args)
        self.match = compile_optional(self.filter, "io,phs")
        self.root: dict = {}          # name -> [frames, bytes, children]; dicts keep first-seen order
        self.paths: dict = {}         # a path (tuple) -> its nodes

    def demand(self):
        names = of_filter(self.filter or None)      # the layers' presence, and WebSocket's top-level items
        return None if names is None else names | {"websocket.payload.continue", "websocket.fragments"}

    def add(self, packet):
        if self.match is not None and not self.match(packet):
            return
        size = packet.frame.length
        for node in self.nodes(protocol_path(packet)):
            node[0] += 1
            node[1] += size

    def nodes(self, path: list[str]) -> list:
        """The tree's nodes along a path, made on first use (the same few paths recur in every capture)."""
        key = tuple(path)
        hit = self.paths.get(key)
        if hit is None:
            hit, level = [], self.root
            for proto in path:
                node = level.setdefault(proto, [0, 0, {}])
                hit.append(node)
                level = node[2]
            if len(self.paths) < 4096:
                self.paths[key] = hit
        return hit

    def result(self):
        def tree(level):
            return [{"protocol": name, "frames": n[0], "bytes": n[1], "children": tree(n[2])}
                    for name, n in level.items()]
        return {"kind": self.kind, "filter": self.filter, "protocols": tree(self.root)}


def compile_optional(text: str, tap: str | None = None):
    """A display filter for a statistic (`tap`: tshark's, for its words on a bad one), or None."""
    if not text:
        return None
    from .stats_filter import compile_filter
    return compile_filter(text, tap)
