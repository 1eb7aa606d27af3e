"""IPv4 / IPv6 and UDP / TCP headers, on the hot path: struct unpacks into the Decoded slots, nothing else.

Bounds: `len(data)` is what was captured; the frame's wire length and the IP total/payload length are what
should be there. A header cut by the snaplen is "_ws.short" (Wireshark: "Packet size limited during
capture"); a header that lies past the length its own headers claim is "_ws.malformed" (or a more precise
expert abbrev). Either way the decode stops at that layer. IP fragments are flagged here; capture.decode hands
them to the capture's reassembly (reassembly/ip_fragments.py), which decodes a completed datagram's UDP.
"""
from __future__ import annotations

import struct

from ..engine.tree import CHECKSUM, ERROR, MALFORMED, NOTE, SEQUENCE, ExpertInfo

_IP4 = struct.Struct("!BBHHHBBH4s4s").unpack_from
_IP6 = struct.Struct("!IHBB16s16s").unpack_from
_UDP = struct.Struct("!HHHH").unpack_from
_TCP = struct.Struct("!HHIIHHHH").unpack_from
_U16 = struct.Struct("!H").unpack_from

# Address text caches: inet_ntoa/ntop cost ~0.3 us a call and captures reuse a few addresses. Bounded (cleared
# when full) so memory stays constant on captures with many hosts.
_V4: dict[bytes, str] = {}
_V6: dict[bytes, str] = {}
v4_cached = _V4.get
v6_cached = _V6.get


def v4_text(b: bytes) -> str:
    if len(_V4) >= 65536:
        _V4.clear()
    s = _V4[b] = "%d.%d.%d.%d" % tuple(b)     # (inet_ntoa's text; the socket module costs start-up time)
    return s


def v6_text(b: bytes) -> str:
    if len(_V6) >= 65536:
        _V6.clear()
    from socket import AF_INET6, inet_ntop
    s = _V6[b] = inet_ntop(AF_INET6, b)
    return s

# IPv6 extension headers we step over: hop-by-hop, routing, destination options, AH (fragment: separately).
_EXT = {0: "hopopts", 43: "routing", 60: "dstopts", 51: "ah"}
_EXT_PROTO = {0: "ipv6.hopopts", 43: "ipv6.routing", 60: "ipv6.dstopts", 51: "ah", 44: "ipv6.fraghdr"}
IPV6_FRAGMENT = 44


def short(d, proto: str, name: str, need: int, off: int, end: int | None = None) -> None:
    """Record a header of `need` bytes at `off` that is not all there (captured or claimed)."""
    data_len = len(d.frame.data)
    limit = max(d.frame.length, data_len) if end is None else end
    left = max(0, min(limit, data_len) - off)
    if off + need > limit:
        d.bad(proto, f"Malformed Packet: {name} needs {need} bytes at offset {off}, only {max(0, limit - off)}"
                     f" left")
    else:
        d.bad(proto, f"Packet size limited during capture: {name} truncated ({left} of {need} bytes"
                     f" captured)", "_ws.short")


def ipv4(d, data: bytes, off: int) -> None:
    d.protocols.append("ip")
    d.network = "ip"
    if len(data) - off < 20:
        if off + 20 <= d.frame.length and not _bad_cut_ipv4(d, data, off):
            cut(d, "ip", off)
            return
        if d.spans and d.spans[-1][0] == "ip":      # (a bogus header length or version: recorded)
            return
        d.spans.append(("ip", off, max(0, len(data) - off)))
        short(d, "ip", "IPv4", 20, off)
        return
    vihl, _tos, tlen, _id, frag, _ttl, proto, _sum, src, dst = _IP4(data, off)
    hl = (vihl & 15) << 2
    if tlen == 0:                           # tshark: "TCP segmentation offload", the rest of the packet
        tlen = max(d.frame.length, len(data)) - off
    if _bogus_ipv4(d, off, vihl, tlen):
        return
    d.src = v4_cached(src) or v4_text(src)         # tshark sets the address columns past these checks
    d.dst = v4_cached(dst) or v4_text(dst)
    if len(data) < off + hl:
        if off + hl <= d.frame.length:
            d.dst = None            # (tshark sets it after a look for a source route in the options)
            cut(d, "ip", off)
            return
        d.spans.append(("ip", off, len(data) - off))
        short(d, "ip", "IPv4 options", hl, off)
        return
    d.spans.append(("ip", off, hl))
    note = ttl_note(_ttl, dst, proto)
    if note is not None:
        d.problems.append(("ip", note))
    d.ip_proto = proto
    end = off + tlen
    wire = max(d.frame.length, len(data))
    if end > wire:
        d.bad("ip", f"IPv4 total length exceeds packet length ({wire - off} bytes)", "ip.len.past_end")
        end = wire
    if frag & 0x3FFF:                     # MF set or a non-zero offset: a fragment (its bytes shown as data)
        d.fragment = True
        d.payload_offset = off + hl
        d.payload = data[off + hl:end]
        if d.payload:
            d.protocols.append("data")
        return
    transport(d, data, off + hl, end, proto)


# The Local Network Control Block (224.0.0.0/24) is never routed: TTL 1, but for these (packet-ip.c's list)
LNCB_TTL = {b"\xe0\x00\x00\x12": 255, b"\xe0\x00\x00\x66": 255, b"\xe0\x00\x00\xfb": 255,   # VRRP, GLBP, mDNS
            b"\xe0\x00\x00\xfc": None}                                                             # LLMNR: any
NO_LOW_TTL_NOTE = (89, 103)      # OSPF, PIM: a low TTL is their rule
IGMP = 2
TTL_NOTE_MIN = 5                 # (what the decode fast paths leave to the general one: ttl_note says nothing else)


def ttl_note(ttl: int, dst: bytes, proto: int) -> ExpertInfo | None:
    """tshark's note on an IPv4 header's TTL (packet-ip.c, on the TTL item): not the TTL a local network control
    block address needs (IGMP's always 1), or under 5 to an address that is not multicast."""
    if dst[:3] == b"\xe0\x00\x00":
        valid = 1 if proto == IGMP else LNCB_TTL.get(dst, 1)
        if valid is None or ttl == valid:
            return None
        return ExpertInfo("ip.ttl.lncb", SEQUENCE, NOTE, f'"Time To Live" != {valid} for a packet sent to the Local '
                                                         "Network Control Block (see RFC 3171)")
    if ttl < TTL_NOTE_MIN and not 224 <= dst[0] < 240 and proto not in NO_LOW_TTL_NOTE:
        return ExpertInfo("ip.ttl.too_small", SEQUENCE, NOTE, f'"Time To Live" only {ttl}')
    return None


def cut(d, proto: str, off: int) -> None:
    """A header the snap length cut (its bytes are on the wire): tshark shows its fields as far as they were
    captured, sets the address columns it got to, and ends the frame with "[Packet size limited during capture:
    IPv4 truncated]" (layers.build; the builders take the span's "cut"). A UDP or TCP header of fewer than 4
    bytes shows no layer at all (its ports are read before its tree is made)."""
    there = len(d.frame.data) - off
    if proto == "ip" and there >= 16:
        src = d.frame.data[off + 12:off + 16]
        d.src = v4_cached(src) or v4_text(src)
    elif proto == "ipv6" and there >= 24:
        src = d.frame.data[off + 8:off + 24]
        d.src = v6_cached(src) or v6_text(src)
    d.spans.append((proto, off, there, "cut"))


def _bad_cut_ipv4(d, data: bytes, off: int) -> bool:
    """The checks tshark makes on a cut IPv4 header before it runs out of bytes (_bogus_ipv4, the total length
    only when captured and not 0); True when one failed."""
    there = len(data) - off
    if there < 1:
        return False
    tlen = _U16(data, off + 2)[0] if there >= 4 else 0
    return _bogus_ipv4(d, off, data[off], tlen or None)


def _bogus_ipv4(d, off: int, vihl: int, tlen: int | None) -> bool:
    """tshark's first checks of an IPv4 header: version, header length, total length (None: not to check), each
    recorded as tshark shows it; True when one failed (the header shows no more)."""
    hl = (vihl & 15) << 2
    if vihl >> 4 != 4:
        d.spans.append(("ip", off, 1))
        d.bad("ip", f"Bogus IP version ({vihl >> 4})", "ip.version.bad")
        return True
    if hl < 20:
        d.spans.append(("ip", off, 20))
        d.bad("ip", f"Bogus IP header length ({hl}, must be at least 20)", "ip.bogus_header_length")
        return True
    if tlen is not None and tlen < hl:
        d.spans.append(("ip", off, 20))
        d.bad("ip", "Bogus IP length", "ip.bogus_ip_length")      # the Info says more (Decoded.plain_info)
        return True
    return False


def ipv6(d, data: bytes, off: int) -> None:
    d.protocols.append("ipv6")
    d.network = "ipv6"
    if len(data) - off < 40:
        if off + 40 <= d.frame.length and (len(data) == off or data[off] >> 4 == 6):
            cut(d, "ipv6", off)
            return
        d.spans.append(("ipv6", off, max(0, len(data) - off)))
        short(d, "ipv6", "IPv6", 40, off)
        return
    vtf, plen, nh, _hlim, src, dst = _IP6(data, off)
    if vtf >> 28 != 6:
        d.spans.append(("ipv6", off, 1))
        d.bad("ipv6", f"Bogus IP version ({vtf >> 28})", "ipv6.version.bad")
        return
    d.src = v6_cached(src) or v6_text(src)
    d.dst = v6_cached(dst) or v6_text(dst)
    d.spans.append(("ipv6", off, 40))
    wire = max(d.frame.length, len(data))
    end = off + 40 + plen
    if plen == 0 and nh == 0:             # a jumbogram: the real length is in a hop-by-hop option
        end = wire
    if end > wire:
        d.bad("ipv6", f"IPv6 payload length exceeds framing length ({wire - off - 40} bytes)",
              "ipv6.plen_exceeds_framing")
        end = wire
    p = off + 40
    while nh in _EXT or nh == IPV6_FRAGMENT:
        need = 8 if nh == IPV6_FRAGMENT else 2
        if len(data) < p + need <= end:
            _cut_ext(d, nh, p)
            return
        if p + need > end or len(data) < p + need:
            short(d, "ipv6", f"IPv6 {_EXT.get(nh, 'fragment')} header", need, p, end)
            return
        nxt = data[p]
        d.protocols.append(_EXT_PROTO[nh])     # tshark lists each extension header as a protocol
        if nh == IPV6_FRAGMENT:
            d.spans.append(("ipv6.ext", p, 8, nh))
            fo = _U16(data, p + 2)[0]
            p += 8
            if fo & 0xFFF9:               # offset bits or M: a fragment (tshark shows its bytes as data)
                d.fragment = True
                if min(end, len(data)) > p:
                    d.protocols.append("data")
                d.ip_proto = nxt
                d.payload_offset = p
                d.payload = data[p:end]
                return
        else:
            ln = (data[p + 1] + 2) * 4 if nh == 51 else (data[p + 1] + 1) * 8
            if len(data) < p + ln <= end:
                d.protocols.pop()
                _cut_ext(d, nh, p)
                return
            if nh in (0, 60) and not _options_fit(data, p + 2, p + ln, min(end, len(data))):
                # tshark reads each option to its end, past the header if need be; one that runs past the
                # payload (or a header that does) is an exception: "[Malformed Packet: IPv6 Hop-by-Hop]"
                d.spans.append(("ipv6.ext", p, min(end, len(data)) - p, nh, ln))
                d.problems.append((_EXT_PROTO[nh], ExpertInfo("_ws.malformed.expert", MALFORMED, ERROR,
                                                              "Malformed Packet (Exception occurred)")))
                return
            if p + ln > end:
                d.spans.append(("ipv6.ext", p, end - p, nh))
                d.bad("ipv6", f"IPv6 {_EXT[nh]} header length {ln} runs past the payload", "_ws.malformed")
                return
            d.spans.append(("ipv6.ext", p, ln, nh))
            if nh == 43 and ln >= 8:          # the Destination column and the conversation: the route's end
                from .layers.ipv6_routing import final_destination
                last = final_destination(data, p, ln)
                if last is not None:
                    d.header_dst = d.header_dst or d.dst
                    d.dst = v6_cached(last) or v6_text(last)
            p += ln
        nh = nxt
    d.ip_proto = nh
    transport(d, data, p, end, nh)


def _cut_ext(d, nh: int, p: int) -> None:
    """An extension header the snap length cut (network.cut): listed, shown as far as captured."""
    d.protocols.append(_EXT_PROTO[nh])
    d.spans.append(("ipv6.ext", p, len(d.frame.data) - p, nh, "cut"))


def _options_fit(data: bytes, p: int, end: int, limit: int) -> bool:
    """Do the hop-by-hop / destination options up to `end` (the header's end) each end before `limit`?"""
    while p < end:
        if p >= limit:
            return False
        if data[p] == 0:
            p += 1
            continue
        if p + 1 >= limit or p + 2 + data[p + 1] > limit:
            return False
        p += 2 + data[p + 1]
    return True


def transport(d, data: bytes, off: int, end: int, proto: int) -> None:
    if proto == 17:
        udp(d, data, off, end)
    elif proto == 6:
        tcp(d, data, off, end)
    elif proto == 132:
        from .sctp import decode as sctp
        sctp(d, data, off, end)
    elif proto in (1, 58):
        from .icmp import decode as icmp
        icmp(d, data, off, end, proto == 58)
    else:
        d.payload_offset = off
        d.payload = data[off:end]


def udp(d, data: bytes, off: int, end: int) -> None:
    d.protocols.append("udp")
    if off + 8 <= end and len(data) < off + 4:
        cut(d, "udp", off)
        return
    if off + 8 <= end and off + 4 <= len(data) < off + 8:
        # the header cut by the snap length: tshark shows its ports (and length) and stops there
        d.sport, d.dport = struct.unpack_from("!HH", data, off)
        d.spans.append(("udp", off, len(data) - off, "cut"))
        return
    if off + 8 > end and end <= len(data):
        _short_udp(d, data, off, end)
        return
    if off + 8 > end or len(data) < off + 8:
        d.spans.append(("udp", off, max(0, min(end, len(data)) - off)))
        short(d, "udp", "UDP", 8, off, end)
        return
    sport, dport, ulen, _sum = _UDP(data, off)
    d.transport = "udp"
    d.sport = sport
    d.dport = dport
    d.spans.append(("udp", off, 8))
    room = end - off
    if ulen > room:
        d.bad("udp", f"Bad length value {ulen} > IP payload length", "udp.length.bad")
        ulen = room
    elif ulen < 8:                  # tshark stops at the length: no payload
        d.bad("udp", f"Bad length value {ulen} < 8", "udp.length.bad")
        ulen = 8
    d.payload_offset = off + 8
    d.payload = data[off + 8:off + ulen]
    if off + ulen > len(data):      # cut by the snap length: the Info column counts the length on the wire
        d.cut = off + ulen - len(data)
    if not _sum and d.network == "ipv6":      # RFC 8200: a zero UDP checksum is not allowed over IPv6
        d.problems.append(("udp", ExpertInfo("udp.checksum.zero", CHECKSUM, ERROR, "Illegal checksum value (0)")))


def _short_udp(d, data: bytes, off: int, end: int) -> None:
    """A UDP header past the IP length (a bogus total length): tshark reads what it can, then its exception
    ("[Malformed Packet: UDP]"): nothing of an empty payload, no tree before the ports, the length (and its check
    against the IP payload) once there."""
    n = end - off
    if n <= 0:
        d.protocols.pop()
        return
    if n >= 4:
        d.sport, d.dport = struct.unpack_from("!HH", data, off)
    d.spans.append(("udp", off, n, "bad"))
    if n >= 6 and _U16(data, off + 4)[0] > n:
        d.bad("udp", f"Bad length value {_U16(data, off + 4)[0]} > IP payload length", "udp.length.bad")
    d.problems.append(("udp", ExpertInfo("_ws.malformed.expert", MALFORMED, ERROR,
                                         "Malformed Packet (Exception occurred)")))


def sack_throws(data: bytes, p: int, end: int) -> bool:
    """Whether TCP options data[p:end] hold a SACK too short for tshark's D-SACK read (layers.tcp_option_spans.sack_throws)
    or an MPTCP option tshark's dissector reads past (layers.mptcp.throws), walked only when such a kind byte
    is there at all."""
    return throwing_option(data, p, end) is not None


def throwing_option(data: bytes, p: int, end: int) -> str | None:
    """The protocol ("tcp", "mptcp") whose option among data[p:end] ends tshark's dissection in an exception."""
    options = data[p:end]
    if 5 in options:
        from .layers.tcp_option_spans import sack_throws as walk
        if walk(data, p, end):
            return "tcp"
    if 30 in options:
        from .layers.mptcp import throws
        if throws(data, p, end):
            return "mptcp"
    return None


def _cut_header(d, data: bytes, off: int, end: int) -> None:
    """A TCP header the snap length cut (the IP length says it is whole): tshark reads the ports, and with the
    window captured it analyses the segment (its length on the wire); layers.tcp_partial.cut_layer shows what was read."""
    there = len(data) - off
    d.transport = "tcp"
    d.sport, d.dport = struct.unpack_from("!HH", data, off)
    if there >= 16:
        d.seq, d.ack, offflags, d.window = struct.unpack_from("!IIHH", data, off + 4)
        d.flags = offflags & 0x0FFF
        hl = (offflags >> 12) << 2
        if 20 <= hl <= end - off:
            d.spans.append(("tcp", off, hl, "cut"))
            d.payload_offset = off + hl
            d.payload = b""
            d.cut = end - off - hl
            return
        d.seq = d.ack = d.flags = d.window = None
    d.spans.append(("tcp", off, there, "cut"))        # the ports only


def tcp(d, data: bytes, off: int, end: int) -> None:
    d.protocols.append("tcp")
    if off + 20 <= end and len(data) < off + 4:
        cut(d, "tcp", off)
        return
    if off + 20 <= end and off + 4 <= len(data) < off + 20:
        _cut_header(d, data, off, end)
        return
    if off + 20 > end or len(data) < off + 20:
        d.spans.append(("tcp", off, max(0, min(end, len(data)) - off)))
        short(d, "tcp", "TCP", 20, off, end)
        return
    sport, dport, seq, ack, offflags, win, _sum, _urp = _TCP(data, off)
    d.transport = "tcp"
    d.sport = sport
    d.dport = dport
    d.seq = seq
    d.ack = ack
    d.flags = offflags & 0x0FFF
    d.window = win
    hl = (offflags >> 12) << 2
    if hl < 20:
        d.spans.append(("tcp", off, 20, end - off))     # the segment's length: tshark's [TCP Segment Len] counts from it
        d.bad("tcp", f"Bogus TCP header length ({hl}, must be at least 20)", "tcp.bogus_header_length")
        return
    if off + hl > end:
        # tshark's "Short segment": the header and the options it can read, then an exception (Malformed)
        from .layers.tcp_option_spans import short_exception
        there = min(end, len(data))
        d.spans.append(("tcp", off, there - off, None, short_exception(data, off + 20, off + hl, there)))
        d.problems.append(("tcp", ExpertInfo("_ws.malformed.expert", MALFORMED, ERROR,
                                             "Malformed Packet (Exception occurred)")))
        return
    if len(data) < off + hl:
        # the options cut by the snap length: tshark still analyses the segment (its length on the wire), shows
        # the options as far as they were captured, then "[Packet size limited during capture: TCP truncated]"
        d.spans.append(("tcp", off, hl, "cut"))
        d.payload_offset = off + hl
        d.payload = b""
        d.cut = end - off - hl
        return
    d.spans.append(("tcp", off, hl))
    thrown = throwing_option(data, off + 20, off + hl) if hl > 20 else None
    if thrown is not None:
        d.problems.append((thrown, ExpertInfo("_ws.malformed.expert", MALFORMED, ERROR,
                                              "Malformed Packet (Exception occurred)")))
    d.payload_offset = off + hl
    d.payload = data[off + hl:end]
    if end > len(data):         # cut by the snap length: tshark counts the segment's length on the wire
        d.cut = end - len(data)


def arp(d, data: bytes, off: int) -> None:
    """ARP: its name and place (capture/layers/arp.py shows it; Decoded.protocol_column says RARP)."""
    d.protocols.append("arp")
    n = 8 + 2 * (data[off + 4] + data[off + 5]) if len(data) >= off + 6 else 0
    d.spans.append(("arp", off, min(n, len(data) - off)))


NET_DECODERS = {0x0800: ipv4, 0x86DD: ipv6, 0x0806: arp}
