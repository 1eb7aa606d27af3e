"""ICMP and ICMPv6 (tshark's packet-icmp.c, packet-icmpv6.c): the message header, echo identifiers, and the
datagram an error message quotes (its IPv4 and UDP headers, as tshark decodes them inside the ICMP item).

decode() records what the Info column and the layers need; capture/layers/icmp.py builds the tree. Never raises:
a message too short for its header is a MALFORMED expert; a quoted datagram cut short is shown as far as it goes.
"""
from __future__ import annotations

import struct

from ..engine.tree import CHECKSUM, WARN, ExpertInfo

ICMP_TYPES = {0: "Echo (ping) reply", 3: "Destination unreachable", 4: "Source quench (flow control)",
              5: "Redirect", 8: "Echo (ping) request", 9: "Router advertisement", 10: "Router solicitation",
              11: "Time-to-live exceeded", 12: "Parameter problem", 13: "Timestamp request", 14: "Timestamp reply",
              17: "Address mask request", 18: "Address mask reply"}
UNREACHABLE = {0: "Network unreachable", 1: "Host unreachable", 2: "Protocol unreachable", 3: "Port unreachable",
               4: "Fragmentation needed", 5: "Source route failed", 6: "Destination network unknown",
               7: "Destination host unknown", 8: "Source host isolated", 9: "Network administratively prohibited",
               10: "Host administratively prohibited", 11: "Network unreachable for TOS",
               12: "Host unreachable for TOS", 13: "Communication administratively filtered",
               14: "Host precedence violation", 15: "Precedence cutoff in effect"}
ICMP_CODES = {3: UNREACHABLE, 5: {0: "Redirect for network", 1: "Redirect for host",
                                  2: "Redirect for TOS and network", 3: "Redirect for TOS and host"},
              11: {0: "Time to live exceeded in transit", 1: "Fragment reassembly time exceeded"},
              12: {0: "Pointer indicates the error", 1: "Required option missing", 2: "Bad length"}}
ERRORS = {3, 4, 5, 11, 12}          # messages that quote the offending datagram
ERRORS_V6 = {1, 2, 3, 4}
ICMPV6_TYPES = {1: "Destination Unreachable", 2: "Packet Too Big", 3: "Time Exceeded", 4: "Parameter Problem",
                128: "Echo (ping) request", 129: "Echo (ping) reply", 133: "Router Solicitation",
                134: "Router Advertisement", 135: "Neighbor Solicitation", 136: "Neighbor Advertisement",
                137: "Redirect", 130: "Multicast Listener Query", 131: "Multicast Listener Report",
                132: "Multicast Listener Done", 143: "Multicast Listener Report Message v2"}
ICMPV6_CODES = {1: {0: "no route to destination", 1: "Administratively prohibited", 2: "Beyond scope of source address",
                    3: "Address unreachable", 4: "Port unreachable", 5: "Source address failed ingress/egress policy",
                    6: "Reject route to destination", 7: "Error in Source Routing Header"},
                3: {0: "hop limit exceeded in transit", 1: "fragment reassembly time exceeded"},
                4: {0: "erroneous header field encountered", 1: "unrecognized Next Header type encountered",
                    2: "unrecognized IPv6 option encountered",
                    3: "IPv6 First Fragment has incomplete IPv6 Header Chain"}}


class IcmpInfo:
    """One ICMP(v6) message: header values, the quoted datagram's place, the echo request it answers."""

    __slots__ = ("v6", "type", "code", "checksum", "good", "expected", "ident", "seq", "ttl", "quoted", "quoted_udp",
                 "request_in", "resptime_ns", "udp_stream", "data_at", "handed", "quoted_tcp", "tcp", "lua_tries",
                 "response_in", "unanswered", "server_port")

    def __init__(self, v6: bool, kind: int, code: int, checksum: int):
        self.v6, self.type, self.code, self.checksum = v6, kind, code, checksum
        self.good = True
        self.expected = checksum    # what the checksum should be (tshark's "incorrect, should be 0x....")
        self.ident = self.seq = self.ttl = None
        self.quoted = None          # (offset, length) of the quoted IPv4 header and what follows
        self.quoted_udp = None      # (offset, src, sport, dst, dport) of a quoted UDP header
        self.quoted_tcp = None      # (offset, src, sport, dst, dport) of a quoted TCP header (its ports at least)
        self.tcp = None             # its capture.tcp_analysis.TcpInfo (a whole header: tshark finds its conversation)
        self.server_port = None     # that conversation's server port (from its SYN), where TCP offers the payload first
        self.request_in = self.resptime_ns = self.udp_stream = None
        # -2's second pass, an echo request: the frame of the reply the first pass saw, or that it saw none (True;
        # "multicast": none, to a multicast group)
        self.response_in, self.unanswered = None, False
        self.data_at = None         # where the echo data / the quoted payload starts
        self.handed = False         # the quoted payload went to a game dissector (engine.dispatch): no data layer
        self.lua_tries = 0          # the plugin's dissectors tshark's TCP offered a quoted payload to (engine.dispatch)


def _sum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def decode(d, data: bytes, off: int, end: int, v6: bool) -> None:
    from .network import short
    span = next((sp for sp in reversed(d.spans) if sp[0] in ("ip", "ipv6")), None)
    # the IP header is in the frame's bytes; `data` is the datagram reassembled from fragments when there was one
    header = data if d.defragmented is None else d.frame.data
    ttl = header[span[1] + (7 if v6 else 8)] if span is not None else 0
    name = "icmpv6" if v6 else "icmp"
    d.protocols.append(name)
    end = min(end, len(data))
    if off + 4 > end or (not v6 and off + 8 > end):
        d.spans.append((name, off, max(0, end - off)))
        short(d, name, name.upper(), 8, off, end)
        return
    kind, code, csum = struct.unpack_from("!BBH", data, off)
    info = IcmpInfo(v6, kind, code, csum)
    d.transport = name
    d.icmp = info
    d.payload_offset = off
    d.payload = data[off:end]
    d.spans.append((name, off, end - off))
    if v6:          # over the pseudo-header: source, destination, upper-layer length, next header 58
        ip = span[1] if span is not None else off
        pseudo = header[ip + 8:ip + 40] + struct.pack("!IxxxB", end - off, 58)
        total = _sum(pseudo + data[off:end])
    else:
        pseudo, total = b"", _sum(data[off:end])
    if total != 0xFFFF:
        info.good = False
        info.expected = ~_sum(pseudo + data[off:off + 2] + data[off + 4:end]) & 0xFFFF
        d.problems.append((name, ExpertInfo("icmpv6.checksum_bad.expert" if v6 else "icmp.checksum_bad", CHECKSUM,
                                            WARN, f"Bad checksum [should be 0x{info.expected:04x}]")))
    if kind in ((0, 8) if not v6 else (128, 129)) and off + 8 <= end:
        info.ident, info.seq = struct.unpack_from("!HH", data, off + 4)
        info.ttl = ttl
        info.data_at = off + 8
        if end > off + 8:
            d.protocols.append("data")
    elif kind in (ERRORS_V6 if v6 else ERRORS):
        _quoted(d, info, data, off + 8, end)


def _quoted(d, info: IcmpInfo, data: bytes, q: int, end: int) -> None:
    """The quoted IP header and, for UDP, its header: protocol names and places (the tree is built later). tshark
    hands whatever the message quotes to IP, even nothing; an IPv4 header shown as far as it goes; UDP once its
    ports are there."""
    import socket
    if info.v6:
        if q + 40 > end or data[q] >> 4 != 6:
            return
        hl, proto, version = 40, data[q + 6], "ipv6"
        src, dst = socket.inet_ntop(socket.AF_INET6, data[q + 8:q + 24]), socket.inet_ntop(socket.AF_INET6,
                                                                                               data[q + 24:q + 40])
    else:
        if q < end and data[q] >> 4 != 4:
            return
        info.quoted = (q, end - q)
        if q >= end:            # nothing quoted: the Unused field only
            return
        d.protocols.append("ip")
        if q + 20 > end:
            return
        hl, proto, version = (data[q] & 15) * 4, data[q + 9], None
        tlen = struct.unpack_from("!H", data, q + 2)[0]
        if hl < 20 or q + hl > end or 0 < tlen < hl:
            return
        src, dst = socket.inet_ntoa(data[q + 12:q + 16]), socket.inet_ntoa(data[q + 16:q + 20])
    if version:
        info.quoted = (q, end - q)
        d.protocols.append(version)
    if proto == 6 and q + hl + 4 <= end:
        # tshark's TCP on a quoted segment (in_error_pkt): its ports and raw sequence number; with a whole header,
        # its conversation too (capture.tcp_analysis.TcpTable.quoted) and any payload as data
        d.protocols.append("tcp")
        t = q + hl
        info.quoted_tcp = (t, src, *struct.unpack_from("!H", data, t), dst, *struct.unpack_from("!H", data, t + 2))
        if t + 20 <= end and 20 <= (data[t + 12] >> 4) * 4 < end - t:
            d.protocols.append("data")
        return
    if proto != 17 or q + hl + 4 > end:
        return
    d.protocols.append("udp")
    u = q + hl
    sport, dport = struct.unpack_from("!HH", data, u)
    info.quoted_udp = (u, src, sport, dst, dport)
    if end > u + 8:
        d.protocols.append("data")
        info.data_at = u + 8


def info_column(d) -> str:
    info = d.icmp
    if info.v6:
        text = ICMPV6_TYPES.get(info.type, f"Unknown ({info.type})")
        if info.ident is not None:
            return f"{text} id=0x{info.ident:04x}, seq={info.seq}, hop limit={info.ttl}" + _answer(info)
        from .layers.ndp import info as ndp_info
        nd = ndp_info(info.type, d.transport_data(), d.payload_offset, d.payload_offset + len(d.payload))
        if nd is not None:
            return nd
        code = icmpv6_code_name(info.type, info.code)
        return f"{text} ({code})" if code else text
    text = ICMP_TYPES.get(info.type, "Unknown ICMP (obsolete or malformed?)")
    if info.ident is not None:
        le = lambda v: ((v & 0xFF) << 8) | (v >> 8)     # noqa: E731
        pad = "  " if info.type == 8 else "    "
        return f"{text}{pad}id=0x{info.ident:04x}, seq={info.seq}/{le(info.seq)}, ttl={info.ttl}" + _answer(info)
    code = ICMP_CODES.get(info.type, {}).get(info.code)
    return f"{text} ({code})" if code else text


def icmpv6_code_name(kind: int, code: int) -> str | None:
    """An ICMPv6 error's code as tshark names it (None: a type whose codes have no names)."""
    names = ICMPV6_CODES.get(kind)
    if names is None:
        return None
    return names.get(code) or ("Unknown" if kind == 1 else f"Unknown ({code})")


def _answer(info: IcmpInfo) -> str:
    """An echo's Info column tail: the request a reply answers; under -2, a request's reply, or that none came."""
    if info.request_in is not None:
        return f" (request in {info.request_in})"
    if info.response_in is not None:
        return f" (reply in {info.response_in})"
    if info.unanswered:
        return " (multicast)" if info.unanswered == "multicast" else " (no response found!)"
    return ""
