"""Build the standard layers' engine.tree Layers from a Decoded's header spans (lazily: only when an output
needs the tree), one module per protocol. Labels are tshark -V's; offsets are relative to the frame start, for
hex-view highlighting.

A span shorter than its full header (a cut or bogus packet) gets only its protocol item; the MALFORMED
experts recorded by the decoder are hung on the layer where the decode stopped.
"""
from __future__ import annotations

from ...engine.tree import Item, Layer
from .. import fields as f
from ..sctp import sctp_layer
from .arp import arp_layer
from .data import data_layer
from .eth import eth_layer, ieee8021ad_layer, vlan_layer
from .frame import comments_layer, frame_layer
from .icmp import icmp_layer
from .ip import fragments_item, ip_layer, ipv6_ext_item, ipv6_layer, reassembled_in_item
from .null import null_layer, raw_layer
from .sll import sll2_layer, sll_layer
from .tcp import tcp_layer, tcp_segments_layer
from .tcp_option_spans import cut_protocol
from .udp import udp_layer

BUILDERS = {"eth": eth_layer, "vlan": vlan_layer, "ieee8021ad": ieee8021ad_layer, "sll": sll_layer,
            "sll2": sll2_layer, "null": null_layer,
            "raw": raw_layer, "ip": ip_layer, "ipv6": ipv6_layer, "udp": udp_layer, "tcp": tcp_layer,
            "sctp": sctp_layer, "icmp": icmp_layer, "icmpv6": icmp_layer, "arp": arp_layer}


MALFORMED_NAMES = {"ipv6.hopopts": "IPv6 Hop-by-Hop", "ipv6.dstopts": "IPv6 Destination", "tcp": "TCP",
                   "mptcp": "MPTCP", "udp": "UDP", "sctp": "SCTP"}
# a header the snap length cut (capture.network.cut) -> the name in tshark's "[Packet size limited during capture:
# NAME truncated]"
CUT_NAMES = {"ip": "IPv4", "ipv6": "IPv6", "udp": "UDP", "tcp": "TCP", "vlan": "VLAN", "ieee8021ad": "IEEE 802.1AD",
             "sctp": "SCTP"}
EXT_CUT_NAMES = {0: "IPv6 Hop-by-Hop", 60: "IPv6 Destination", 43: "IPv6 Routing", 44: "IPv6 Fragment", 51: "AH"}
# ... and how many bytes of it tshark needs before it shows its tree (IPv6: an empty one with none)
CUT_MIN = {"ip": 1, "udp": 4, "tcp": 4, "vlan": 2, "ieee8021ad": 2, "sctp": 12}
# expert abbrev -> the field whose item carries it
EXPERT_ANCHORS = {"ip.bogus_header_length": "ip.hdr_len", "ip.len.past_end": "ip.len", "ip.bogus_ip_length": "ip.len",
                  "udp.length.bad": "udp.length", "tcp.bogus_header_length": "tcp.hdr_len",
                  "icmp.checksum_bad": "icmp.checksum", "icmpv6.checksum_bad.expert": "icmpv6.checksum",
                  "udp.checksum.zero": "udp.checksum", "eth.padding_bad": "eth.trailer", "ip.ttl.lncb": "ip.ttl",
                  "ip.ttl.too_small": "ip.ttl"}
EXPERT_FIRST = {"udp.checksum.zero"}
# link layers that hand their payload on through packet-ethertype.c
ETHERTYPE_LINKS = frozenset(("eth", "sll", "sll2", "vlan", "ieee8021ad"))


def exception_offset(d) -> int:
    """Where tshark's `[Malformed Packet]` item sits: packet-ethertype.c catches the exception and adds it at the
    start of the tvb it handed on (after eth/sll and any VLAN tag: its PDML pos); without it, frame.c at 0."""
    if "ethertype" not in d.protocols:
        return 0
    ends = [span[1] + span[2] for span in d.spans if span[0] in ETHERTYPE_LINKS]
    return ends[-1] if ends else 0


# the data source index of a datagram reassembled from fragments (the frame's is 0; engine.dispatch.Stack adds it
# first, before any a game layer adds)
REASSEMBLED_SOURCE = 1
# layers whose items all carry abbrevs under the layer's own name: a run reading none of those can skip them
OWN_NAMES_ONLY = {"frame", "eth", "sll", "sll2", "ip", "ipv6", "udp", "tcp"}
SKIPPABLE = OWN_NAMES_ONLY | {"ipv6.ext"}
SPAN_ROOTS = {"sll2": "sll"}       # a span whose fields start with another name (SLL v2's are tshark's "sll.*")


def _in_source(item: Item, source: int) -> None:
    """Mark a layer built from a reassembled datagram's bytes (its offsets are in them): PDML's values and -x's raw
    fields read its items' bytes there."""
    item.source = source
    for kid in item.children or ():
        _in_source(kid, source)


def build(d, roots=None) -> list[Layer]:
    """roots: the protocol names some field a run reads starts with (engine.demand; None: all): a layer of
    OWN_NAMES_ONLY outside them is not built, and expert infos are hung only on the layers built."""
    frame = d.frame
    data = frame.data
    layers = [frame_layer(d)] if roots is None or "frame" in roots else []
    if frame.comments and (roots is None or "frame" in roots or "pkt_comment" in roots):
        layers.insert(0, comments_layer(frame.comments))
    by_proto: dict[str, Layer] = {}
    whole_from = d.defragmented[2] if d.defragmented is not None else None
    for i, span in enumerate(d.spans):
        proto = span[0]
        if i == whole_from:        # the transport header of a datagram reassembled from fragments: in its bytes
            data = d.defragmented[1]
            if d.network in by_proto:
                top = by_proto[d.network].item
                top.add(fragments_item(d.defragmented[0], data, REASSEMBLED_SOURCE, d.network == "ipv6"))
        if roots is not None and proto in SKIPPABLE and SPAN_ROOTS.get(proto, proto.split(".")[0]) not in roots:
            continue
        if proto == "ipv6.ext":
            ext = ipv6_ext_item(data, *span[1:]) if "ipv6" in by_proto else None
            if ext is not None:
                top = by_proto["ipv6"].item
                top.add(ext)
                if span[-1] != "cut" and not d.fragment:
                    # tshark's IPv6 item spans the extension headers before the payload it hands on (a
                    # fragment's, whose datagram is not complete, its fixed header only)
                    top.length = span[1] + span[2] - top.offset
            continue
        if span[-1] in ("cut", "bad") and span[2] < CUT_MIN.get(proto, 0):
            continue            # (no byte of it, or a UDP/TCP header before its ports: no tree, only the note)
        made = BUILDERS[proto](d, data, *span[1:])
        group = made if made.__class__ is list else None   # SCTP, ICMP: several (continuations, a quoted datagram)
        if group is not None:
            layers.extend(group)
            made = group[0]
        else:
            layers.append(made)
        if whole_from is not None and i >= whole_from:
            for layer in group or (made,):
                _in_source(layer.item, REASSEMBLED_SOURCE)
        by_proto[proto] = made
    last = d.spans[-1] if d.spans else ()
    name = d.truncated
    if name is None and last and last[-1] == "cut" and (roots is None or "_ws" in roots
                                                       or last[0].split(".")[0] in roots):   # a cut header
        name = cut_protocol(data, last[1], last[2]) if last[0] == "tcp" else \
            EXT_CUT_NAMES[last[3]] if last[0] == "ipv6.ext" else CUT_NAMES[last[0]]
    if name is not None:
        layers.append(Layer("_ws.short", Item(f._ws_short, None, 0, 0,
                                              f"[Packet size limited during capture: {name} truncated]")))
    if not (d.problems or d.fragment or getattr(d, "unclaimed", False) or getattr(d, "reassembled", None)):
        return layers
    for proto, info in d.problems:
        if info.abbrev == "frame.comment.expert":     # on the pkt_comment layer already
            continue
        if roots is not None and by_proto.get("eth" if proto == "ethertype" else proto) is None:
            continue             # a layer nothing asked for (a filter on an expert names its layer's protocol)
        if info.abbrev == "_ws.malformed.reassembly":   # TCP's reassembly threw: its own top-level item
            top = Item(f._ws_malformed, None, exception_offset(d), 0, f.REASSEMBLY_ERROR.format(info.message))
            top.expert(info)
            layers.append(Layer("_ws.malformed", top))
            continue
        if info.abbrev == "_ws.malformed.expert":       # tshark's item after an exception, on the top level
            why = d.exception_reason(proto)
            top = Item(f._ws_malformed, None, exception_offset(d), 0, f"[Malformed Packet: {MALFORMED_NAMES.get(proto, proto)}"
                                                    f"{': ' + why if why else ''}]")
            top.expert(info)
            layers.append(Layer("_ws.malformed", top))
            continue
        layer = by_proto.get("eth" if proto == "ethertype" else proto) or layers[-1]
        anchor = EXPERT_ANCHORS.get(info.abbrev)
        item = layer.item.find(anchor) if anchor else None      # tshark hangs some on the field they judge
        (item or layer.item).expert(info)
        if item is not None and info.abbrev in EXPERT_FIRST:   # before the item's own children
            item.children = [item.children[-1], *item.children[:-1]]
    if d.fragment and d.reassembled_in is not None and d.network in by_proto:   # -2: a later datagram's fragment
        by_proto[d.network].item.add(reassembled_in_item(d.reassembled_in, d.network == "ipv6", d.spans[-1][1]
                                                         if d.network == "ipv6" else 0))
    if (d.fragment or getattr(d, "unclaimed", False)) and d.payload:
        layers.append(data_layer(d.payload, d.payload_offset))
        if whole_from is not None:          # the payload of a datagram reassembled from fragments: in its bytes
            _in_source(layers[-1].item, REASSEMBLED_SOURCE)
    for pieces, whole, source, conflicts in getattr(d, "reassembled", None) or ():
        layers.append(tcp_segments_layer(pieces, whole, source, conflicts))
    return layers

