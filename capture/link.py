"""Link-layer decoders, one per LINKTYPE: find where the network header starts and what it is.

Each decoder takes (Decoded, frame bytes), records its header span and protocol names, and hands the rest to
network.NET_DECODERS by ethertype. Names follow tshark's frame.protocols ("eth:ethertype", "sll:ethertype",
"null", "raw").
"""
from __future__ import annotations

import struct

from ..engine.tree import NOTE, PROTOCOL, ExpertInfo
from .network import NET_DECODERS, ipv4, ipv6, short

_U16 = struct.Struct("!H").unpack_from
_U32BE = struct.Struct("!I").unpack_from
_SLL1 = struct.Struct("!HHH8sH")
_SLL2 = struct.Struct("!HHIHBB8s")
# 802.1Q, the old QinQ tag (both tshark's "vlan") and 802.1ad (its "ieee8021ad")
VLAN_TYPES = {0x8100: "vlan", 0x9100: "vlan", 0x88A8: "ieee8021ad"}
NULL_IPV6 = {24, 28, 30}                # AF_INET6 on NetBSD/OpenBSD, FreeBSD, Darwin (as Wireshark's null)


def ethernet(d, data: bytes) -> None:
    if len(data) < 14:
        d.protocols.append("eth")
        d.spans.append(("eth", 0, len(data)))
        short(d, "eth", "Ethernet", 14, 0)
        return
    etype = _U16(data, 12)[0]
    d.spans.append(("eth", 0, 14))
    if etype <= 1500:                   # an 802.3 length, not an ethertype: LLC follows, no IP
        d.protocols = ["eth"]
        return
    d.protocols = ["eth", "ethertype"]
    off = 14
    while etype in VLAN_TYPES:
        tag = VLAN_TYPES[etype]
        d.protocols.append(tag)
        if len(data) < off + 4:
            if off + 4 <= d.frame.length:       # the snap length cut it (network.cut)
                d.spans.append((tag, off, len(data) - off, "cut"))
                return
            d.spans.append((tag, off, len(data) - off))
            short(d, tag, "802.1Q" if tag == "vlan" else "802.1ad", 4, off)
            return
        d.spans.append((tag, off, 4))
        d.protocols.append("ethertype")
        etype = _U16(data, off + 2)[0]
        off += 4
    fn = NET_DECODERS.get(etype)
    if fn is not None:
        fn(d, data, off)
        split = trailer(d, data) if len(data) > off + 20 else None
        if split is not None and split[3]:
            d.problems.append(("ethertype", ExpertInfo("eth.padding_bad", PROTOCOL, NOTE, PADDING_BAD)))


PADDING_BAD = "Didn't find padding of zeros, and an undecoded trailer exists. There may be padding of non-zeros."


def trailer(d, data: bytes):
    """The bytes after an Ethernet frame's IPv4/IPv6/ARP packet, as tshark 4.0 splits them: (end of the packet,
    padding length, FCS present, padding was not zeros), or None. Padding: zeros up to the 60-byte minimum of a
    frame at least that long; 4 bytes left after it are the FCS; anything else a trailer."""
    span = d.spans[1] if len(d.spans) > 1 else None
    if span is None or span[1] != 14:
        return None
    proto, off = span[0], 14
    if proto == "ip" and len(data) >= off + 4:
        tlen = _U16(data, off + 2)[0]
        end = off + tlen if tlen >= (data[off] & 15) * 4 and tlen else None
    elif proto == "ipv6" and len(data) >= off + 6:
        plen = _U16(data, off + 4)[0]
        end = off + 40 + plen if plen else None
    elif proto == "arp":
        end = off + span[2]
    else:
        return None
    if end is None or end >= len(data):
        return None
    room = max(0, min(60, d.frame.length) - end) if d.frame.length >= 60 else 0
    room = min(room, len(data) - end)
    zeros = not any(data[end:end + room])
    pad = room if zeros else 0
    return end, pad, len(data) - end - pad == 4, bool(room) and not zeros


def _sll(d, data: bytes, proto: str, need: int, etype_at: int, name: str) -> None:
    d.protocols = ["sll"]
    if len(data) < need:
        d.spans.append((proto, 0, len(data)))
        short(d, proto, name, need, 0)
        return
    d.spans.append((proto, 0, need))
    d.protocols.append("ethertype")
    fn = NET_DECODERS.get(_U16(data, etype_at)[0])
    if fn is not None:
        fn(d, data, need)


def sll(d, data: bytes) -> None:
    _sll(d, data, "sll", 16, 14, "Linux cooked capture v1")


def sll2(d, data: bytes) -> None:
    _sll(d, data, "sll2", 20, 0, "Linux cooked capture v2")


def _family(d, data: bytes, family: int) -> None:
    d.spans.append(("null", 0, 4, family))
    if family == 2:
        ipv4(d, data, 4)
    elif family in NULL_IPV6:
        ipv6(d, data, 4)


def null(d, data: bytes) -> None:
    """DLT_NULL: the family is in the capturing host's byte order; a value with only high bits set is swapped."""
    d.protocols = ["null"]
    if len(data) < 4:
        d.spans.append(("null", 0, len(data), None))
        short(d, "null", "Null/Loopback", 4, 0)
        return
    family = _U32BE(data)[0]
    if family & 0xFFFF0000 and not family & 0xFFFF:
        family = int.from_bytes(data[:4], "little")
    _family(d, data, family)


def loop(d, data: bytes) -> None:
    """DLT_LOOP (OpenBSD): like NULL but always network byte order."""
    d.protocols = ["null"]
    if len(data) < 4:
        d.spans.append(("null", 0, len(data), None))
        short(d, "null", "Null/Loopback", 4, 0)
        return
    _family(d, data, _U32BE(data)[0])


def raw(d, data: bytes) -> None:
    """Raw IP: the version nibble says IPv4 or IPv6."""
    d.protocols = ["raw"]
    d.spans.append(("raw", 0, 0))
    version = data[0] >> 4 if data else None
    if version == 4:
        ipv4(d, data, 0)
    elif version == 6:
        ipv6(d, data, 0)
    else:
        d.bad("raw", f"Raw packet data: not an IP packet (version {version})")


def raw4(d, data: bytes) -> None:
    ipv4(d, data, 0)


def raw6(d, data: bytes) -> None:
    ipv6(d, data, 0)


# LINKTYPE_* values of the pcap/pcapng header (12 and 14 are raw IP on some systems, per libpcap).
LINK_DECODERS = {1: ethernet, 113: sll, 276: sll2, 0: null, 108: loop, 101: raw, 12: raw, 14: raw,
                 228: raw4, 229: raw6}
