"""-z expert: expert infos counted by severity, then by (group, protocol, message), as tshark -z expert.

Standard-layer experts come from the standard layers' trees when the frame can have any beyond the decode's own
problems (TCP and SCTP analysis, a group source MAC); otherwise from the decode (Decoded.problems), so a UDP
capture's standard trees are not built for this statistic. Game-layer experts come from the game trees.
"""
from __future__ import annotations

from ..engine.strings import TRAILING_STRAY    # Wireshark's own expert on a string item with bytes after a NUL
from ..engine.tree import COMMENT, CHAT, ERROR, GROUP_NAMES, NOTE, WARN
from .stats_base import Tap, register
from .stats_phs import compile_optional

# tshark's section order and titles
SECTIONS = ((ERROR, "Errors"), (WARN, "Warns"), (NOTE, "Notes"), (CHAT, "Chats"), (COMMENT, "Comments"))
# The Protocol column is the protocol's short name: a Lua plugin's is its name upper-cased ("BLANK")
SHORT_NAMES = {"ip": "IPv4", "ipv6": "IPv6", "udp": "UDP", "tcp": "TCP", "eth": "Ethernet", "frame": "Frame",
               "sll": "SLL", "vlan": "VLAN", "sctp": "SCTP", "http": "HTTP", "websocket": "WebSocket",
               "icmp": "ICMP", "icmpv6": "ICMPv6", "tcp.segments": "TCP", "ipv6.hopopts": "IPv6 Hop-by-Hop",
               "ipv6.dstopts": "IPv6 Destination", "ipv6.routing": "IPv6 Routing", "ipv6.fraghdr": "IPv6 Fragment",
               "_ws.malformed": "Malformed", "ethertype": "Ethertype",
               "arp": "ARP"}


def short_name(proto: str) -> str:
    return SHORT_NAMES.get(proto, proto.upper())


POSTDISSECTOR = "protodump.ws"     # the plugin's postdissector (lua/rt_websocket.lua rt.ws_consumer)


def packet_experts(packet):
    """(protocol, ExpertInfo) of every expert item of a packet, in tree order."""
    d = packet.decoded
    if d.transport in ("tcp", "sctp") or _group_source(d) or _tree_experts(d):
        for layer in d.layers():
            if layer.proto == "ipv6":          # an extension header's experts are its own protocol's
                yield from _ipv6_experts(layer.item)
                continue
            for item in layer.item.walk():
                if item.expert_info is not None:
                    if layer.proto == "_ws.malformed":    # an exception: counted under the protocol it ended
                        yield next((p for p, i in d.problems if i is item.expert_info), layer.proto), item.expert_info
                        continue
                    # MPTCP's experts are its own protocol's (tshark: the option's "mptcp" protocol)
                    yield ("mptcp" if item.expert_info.abbrev[:6] == "mptcp." else layer.proto), item.expert_info
    else:
        for proto, info in d.problems:
            yield proto, info
    if d.icmp is not None:          # tshark counts no expert of an ICMP error's quoted datagram
        return
    late_from = len(packet.games) - packet.postdissected
    for i, layer in enumerate(packet.games):
        # the layers the plugin's postdissector shows: its experts are its protocol's (pinfo->current_proto)
        proto = POSTDISSECTOR if i >= late_from else layer.proto
        for top in (layer.item, *(layer.after or ())):   # (and the items it put on the top level of the tree)
            for item in top.walk():
                if item.expert_info is not None:
                    yield proto, item.expert_info


def _tree_experts(d) -> bool:
    """IPv4 options, an IPv6 routing header or, under -2, an echo request nothing answered (their experts are on
    the tree only: capture/layers/ipopt.py, ipv6_routing.py, icmp.py)."""
    return (d.icmp is not None and d.icmp.unanswered is True
            or any(s[0] == "ip" and s[2] > 20 or s[0] == "ipv6.ext" and s[3] == 43 for s in d.spans))


def _ipv6_experts(top):
    for ext in top.children:
        proto = ext.field.abbrev if ext.field is not None and ext.field.abbrev in EXT_HEADERS else "ipv6"
        for item in ext.walk():
            if item.expert_info is not None:
                yield proto, item.expert_info


EXT_HEADERS = {"ipv6.hopopts", "ipv6.routing", "ipv6.dstopts", "ipv6.fraghdr"}


def _group_source(d) -> bool:
    data = d.frame.data
    return d.frame.linktype == 1 and len(data) >= 12 and bool(data[6] & 1)


@register
class Expert(Tap):
    name = "expert"
    kind = "expert"
    usage = "expert[,error|warn|note|chat|comment][,FILTER]"

    LEVELS = {"error": ERROR, "warn": WARN, "note": NOTE, "chat": CHAT, "comment": COMMENT}

    def __init__(self, args):
        self.min_severity = COMMENT
        if args and args[0] in self.LEVELS:
            self.min_severity = self.LEVELS[args[0]]
            args = args[1:]
        self.filter = ",".join(args)
        self.match = compile_optional(self.filter, "expert")
        self.items: dict[int, dict] = {sev: {} for sev, _ in SECTIONS}

    tree_shown = False     # the run prints packet trees (cli/read_cmd.py): Wireshark's items are all made

    def add(self, packet):
        if self.match is not None and not self.match(packet):
            return
        for proto, info in packet_experts(packet):
            if info.severity < self.min_severity:
                continue
            if info.abbrev == TRAILING_STRAY and not self.tree_shown:
                continue      # proto.c checks a string item it makes, and a tree nobody prints fakes it
            key = (info.group, proto, info.message)
            entry = self.items[info.severity].setdefault(key, [0, packet.number])
            entry[0] += 1

    def result(self):
        sections = []
        for sev, title in SECTIONS:
            entries = [{"frequency": n, "group": GROUP_NAMES.get(group, "Unknown"), "protocol": short_name(proto),
                        "summary": msg, "first_frame": first}
                       for (group, proto, msg), (n, first) in self.items[sev].items()]
            if entries:
                sections.append({"severity": title, "total": sum(e["frequency"] for e in entries),
                                 "items": entries})
        return {"kind": self.kind, "sections": sections}
