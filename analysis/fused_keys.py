"""Which conversation a frame belongs to, read straight from its bytes (analysis/stats_fused.py places every
frame with it, in both of its passes): Ethernet and IPv4 by hand, as the decoder keys its per-conversation state
(transport, both ends), and the UDP or TCP header fields the fused machine reads. No library parses this little
this fast (dpkt builds objects per layer)."""
from __future__ import annotations

import struct

from ..capture.layers.tcp_option_spans import option_spans
from ..capture.network import v4_cached, v4_text

ETH_IP, ETH_IPV6 = b"\x08\x00", b"\x86\xdd"
ABORT = ("abort",)        # key_of: a frame no conversation can be told for
VLAN_TAGS = (b"\x81\x00", b"\x88\xa8", b"\x91\x00")
TIMESTAMPS = b"\x01\x01\x08"      # NOP NOP timestamps: the options of most segments
_U16 = struct.Struct("!H")


# From the IPv4 header of an Ethernet frame (offset 14) to the ports: total length, flags and fragment offset,
# protocol, both addresses, both ports, in one call (key_of's common case: no IP options, not cut)
_IP_PORTS = struct.Struct("!2xH2xHxB2x4s4sHH")
_UDP_LENGTH = struct.Struct("!4xH")
_TCP_FIELDS = struct.Struct("!IIBB")


def key_of(frame):
    """key_of_any's answer, the common frame (Ethernet, IPv4 without options, UDP or TCP, not cut, not a fragment)
    read with one struct call instead of several: the fused machine places every frame with it."""
    data = frame.data
    if frame.linktype != 1 or len(data) < 42 or data[14] != 0x45 or data[12:14] != ETH_IP \
            or frame.caplen != frame.length:
        return key_of_any(frame)
    total, fragment, transport, src, dst, sport, dport = _IP_PORTS.unpack_from(data, 14)
    if fragment & 0x3FFF or (transport != 6 and transport != 17):
        return key_of_any(frame)
    a, b = (src, sport), (dst, dport)
    return (transport, a, b) if a <= b else (transport, b, a), _parsed(data, transport, src, dst, sport, dport, total)


def key_of_any(frame):
    """(key, parsed) of a frame. The key is its conversation, (transport, lower end, higher end), as the full
    decode's state keys it (an ICMP error quoting a datagram: the quoted one's), or None for a frame of no IPv4
    conversation (IPv6, ARP: decoded in full with its own kind), or ABORT for one that cannot be placed (an IP
    fragment, a header cut before the ports, another link type or a VLAN tag: then no fused path at all).
    parsed is None when the machine cannot model the frame (its conversation goes to the full decode), else for
    UDP (ends, sport, dport, payload length), for TCP (ends, seq, ack, flags, data, payload start, stop); ends:
    ((src, sport), (dst, dport)), the addresses as their 4 bytes."""
    data = frame.data
    if frame.linktype != 1:
        return ABORT, None
    if len(data) < 14 or data[12:14] != ETH_IP:
        return (ABORT, None) if data[12:14] in VLAN_TAGS else (None, None)
    if len(data) < 34 or data[14] >> 4 != 4 or data[20] & 0x3F or data[21]:
        return ABORT, None                                      # fragments (or no IPv4 header)
    ihl = (data[14] & 0x0F) * 4
    transport = data[23]
    if transport == 1:
        return _quoted(data, 14 + ihl), None
    if transport not in (6, 17):
        return None, None
    if len(data) < 14 + ihl + 4:
        return ABORT, None
    src, dst = data[26:30], data[30:34]
    sport, dport = struct.unpack_from("!HH", data, 14 + ihl)
    key = _key(transport, src, dst, sport, dport)
    if frame.caplen != frame.length or ihl != 20:
        return key, None                                        # cut by the snap length, IP options
    return key, _parsed(data, transport, src, dst, sport, dport, _U16.unpack_from(data, 16)[0])


def _parsed(data: bytes, transport: int, src: bytes, dst: bytes, sport: int, dport: int, total: int):
    """key_of's parsed part of an Ethernet frame whose IPv4 header (20 bytes, `total` long) carries UDP or TCP
    with these ends, or None where the machine cannot model it."""
    end = 14 + total
    if total < 20 or end > len(data):
        return None
    if transport == 17:
        if total < 28:
            return None
        ulen = _UDP_LENGTH.unpack_from(data, 34)[0]
        if ulen < 8 or 34 + ulen > end:
            return None
        return ((src, sport), (dst, dport)), sport, dport, ulen - 8
    if total < 40:
        return None
    seq, ack, off, flags = _TCP_FIELDS.unpack_from(data, 38)
    hlen = (off >> 4) * 4
    if hlen < 20 or 34 + hlen > end or off & 0x0F or flags & 0xC0:
        return None
    if hlen > 20 and not (hlen == 32 and data[54:57] == TIMESTAMPS) and \
            any(kind == 30 for _, kind, _ in option_spans(data, 54, 34 + hlen)):
        return None                                             # MPTCP
    return ((src, sport), (dst, dport)), seq, ack, flags, data, 34 + hlen, end


def _key(transport: int, src: bytes, dst: bytes, sport: int, dport: int) -> tuple:
    a, b = (src, sport), (dst, dport)
    return (transport, a, b) if a <= b else (transport, b, a)


def _quoted(data: bytes, at: int):
    """An ICMP error's key: the conversation of the datagram it quotes (the full decode hands the quoted payload
    to that conversation's dissector); ABORT when the quote cannot be read, None when there is none."""
    if len(data) < at + 8 or data[at] not in (3, 4, 5, 11, 12):
        return None
    ip = at + 8
    if len(data) < ip + 20 or data[ip] >> 4 != 4:
        return ABORT
    ihl = (data[ip] & 0x0F) * 4
    transport = data[ip + 9]
    if transport not in (6, 17):
        return None
    if len(data) < ip + ihl + 4:
        return ABORT
    return _key(transport, data[ip + 12:ip + 16], data[ip + 16:ip + 20], *struct.unpack_from("!HH", data, ip + ihl))


def dotted(addr: bytes) -> str:
    """An IPv4 address's text, through the decoder's bounded cache (capture/network.py)."""
    return v4_cached(addr) or v4_text(addr)
