"""Build the standard layers' engine.tree Layers from a Decoded's header spans (lazily: only when an output
needs the tree). Labels are tshark -V's; offsets are relative to the frame start, for hex-view highlighting.

A span shorter than its full header (a cut or bogus packet) gets only its protocol item; the MALFORMED
experts recorded by the decoder are hung on the layer where the decode stopped.
"""
from __future__ import annotations

import socket
import struct

from ..engine import tree
from ..engine.tree import ExpertInfo, Item, Layer, TextItem, bit_picture
from . import fields as f
from .sctp import sctp_layer

DSCP_SHORT = {0: "CS0", 8: "CS1", 16: "CS2", 24: "CS3", 32: "CS4", 40: "CS5", 48: "CS6", 56: "CS7", 1: "LE",
              10: "AF11", 12: "AF12", 14: "AF13", 18: "AF21", 20: "AF22", 22: "AF23", 26: "AF31", 28: "AF32",
              30: "AF33", 34: "AF41", 36: "AF42", 38: "AF43", 44: "VA", 46: "EF"}
DSCP_LONG = {0: "Default", 1: "Lower Effort", 44: "Voice Admit", 46: "Expedited Forwarding",
             **{n: f"Class Selector {n // 8}" for n in range(8, 64, 8)},
             **{n: f"Assured Forwarding {n // 8}{(n % 8) // 2}" for n in (10, 12, 14, 18, 20, 22, 26, 28, 30,
                                                                           34, 36, 38)}}
ECN_SHORT = ["Not-ECT", "ECT(1)", "ECT(0)", "CE"]
ECN_LONG = ["Not ECN-Capable Transport", "ECN-Capable Transport codepoint '01'",
            "ECN-Capable Transport codepoint '10'", "Congestion Experienced"]
VLAN_PRIORITIES = ["Best Effort (default)", "Background", "Excellent Effort", "Critical Applications",
                   "Video, < 100ms latency and jitter", "Voice, < 10ms latency and jitter",
                   "Internetwork Control", "Network Control"]


# LINKTYPE -> tshark's frame.encap_type (a WTAP_ENCAP_* number, not the LINKTYPE) and its name
WTAP_ENCAP = {1: (1, "Ethernet"), 113: (25, "Linux cooked-mode capture v1"), 276: (210, "Linux cooked-mode capture v2"),
              0: (15, "NULL/Loopback"), 108: (174, "OpenBSD loopback"), 101: (7, "Raw IP"), 12: (7, "Raw IP"),
              14: (7, "Raw IP"), 228: (129, "Raw IPv4"), 229: (130, "Raw IPv6")}


bits = bit_picture   # (value, mask, width)


def _set(v: int) -> str:
    return "Set" if v else "Not set"


def _mac(b: bytes) -> str:
    return b.hex(":")


def _named(values: dict, v: int, fmt: str = "{}") -> str:
    return f"{values.get(v, 'Unknown')} ({fmt.format(v)})"


def _proto(field, off: int, length: int, label: str) -> Item:
    return Item(field, None, off, length, label)


def _full(data: bytes, off: int, length: int, need: int) -> bool:
    return length >= need and len(data) >= off + need


# -- frame ------------------------------------------------------------------------------------------

def frame_layer(d) -> Layer:
    fr = d.frame
    ts = f"{fr.ts_ns // 1_000_000_000}.{fr.ts_ns % 1_000_000_000:09d}"
    top = _proto(f.frame, 0, fr.caplen, f"Frame {fr.number}: {fr.length} bytes on wire ({fr.length * 8} bits),"
                                        f" {fr.caplen} bytes captured ({fr.caplen * 8} bits)")
    if fr.interface:
        top.add(Item(f.frame_interface, fr.interface, label=f"Interface id: {fr.interface}"))
    encap = WTAP_ENCAP.get(fr.linktype)
    if encap is not None:
        top.add(Item(f.frame_encap, encap[0], label=f"Encapsulation type: {encap[1]} ({encap[0]})"))
    top.add(Item(f.frame_time_epoch, ts, label=f"Epoch Time: {ts} seconds"))
    top.add(Item(f.frame_number, fr.number, label=f"Frame Number: {fr.number}"))
    top.add(Item(f.frame_len, fr.length, label=f"Frame Length: {fr.length} bytes ({fr.length * 8} bits)"))
    top.add(Item(f.frame_cap_len, fr.caplen, label=f"Capture Length: {fr.caplen} bytes ({fr.caplen * 8} bits)"))
    protocols = ":".join(d.protocols)
    # A snapshot of d.protocols: build the tree after the dissectors have appended their names.
    top.add(Item(f.frame_protocols, protocols, label=f"[Protocols in frame: {protocols}]", generated=True))
    return Layer("frame", top)


# -- link layers ------------------------------------------------------------------------------------

def _ethertype_item(field, data: bytes, off: int) -> Item:
    t = struct.unpack_from("!H", data, off)[0]
    return Item(field, t, off, 2, f"Type: {_named(f.ETHERTYPES, t, '0x{:04x}')}")


def _eth_addr(field, lg, ig, data: bytes, off: int, name: str) -> Item:
    mac = _mac(data[off:off + 6])
    item = Item(field, mac, off, 6, f"{name}: {mac}")
    item.add(Item(f.eth_addr, mac, off, 6, f"Address: {mac}"))
    top3 = int.from_bytes(data[off:off + 3], "big")
    item.add(Item(lg, bool(top3 & 0x020000), off, 3, f"{bits(top3, 0x020000, 24)} = LG bit: " + (
        "Locally administered address (this is NOT the factory default)" if top3 & 0x020000
        else "Globally unique address (factory default)")))
    item.add(Item(ig, bool(top3 & 0x010000), off, 3, f"{bits(top3, 0x010000, 24)} = IG bit: " + (
        "Group address (multicast/broadcast)" if top3 & 0x010000 else "Individual address (unicast)")))
    return item


# Every frame of a conversation repeats the same few headers: their subtrees are built once and shared, frozen
# (tuple children), so outputs can memoise their text too (engine.tree.Item). Bounded: cleared when full.
_FROZEN: dict = {}


def _frozen(key, build):
    kids = _FROZEN.get(key)
    if kids is None:
        if len(_FROZEN) >= 1024:
            _FROZEN.clear()
        built = build()
        kids = _FROZEN[key] = built if isinstance(built, tuple) else tuple(built)
    return kids


def eth_layer(d, data: bytes, off: int, length: int) -> Layer:
    if not _full(data, off, length, 14):
        return Layer("eth", _proto(f.eth, off, length, "Ethernet II"))
    head = data[0:14]
    label, kids = _frozen(("eth", head), lambda: _eth_parts(data))   # a (label, children) pair
    top = _proto(f.eth, 0, 14, label)
    top.children = kids
    return Layer("eth", top)


def _eth_parts(data: bytes):
    """(label, frozen children) of an Ethernet II header."""
    return (_eth_label(data), tuple(_eth_items(data)))


def _eth_label(data: bytes) -> str:
    return f"Ethernet II, Src: {_mac(data[6:12])}, Dst: {_mac(data[0:6])}"


def _eth_items(data: bytes):
    top = _proto(f.eth, 0, 14, "")
    top.add(_eth_addr(f.eth_dst, f.eth_dst_lg, f.eth_dst_ig, data, 0, "Destination"))
    top.add(_eth_addr(f.eth_src, f.eth_src_lg, f.eth_src_ig, data, 6, "Source"))
    t = struct.unpack_from("!H", data, 12)[0]
    if t <= 1500:
        top.add(Item(f.eth_len, t, 12, 2, f"Length: {t}"))
    else:
        top.add(_ethertype_item(f.eth_type, data, 12))
    return top.children


def vlan_layer(d, data: bytes, off: int, length: int) -> Layer:
    if not _full(data, off, length, 4):
        return Layer("vlan", _proto(f.vlan, off, length, "802.1Q Virtual LAN"))
    tci = struct.unpack_from("!H", data, off)[0]
    pri, dei, vid = tci >> 13, (tci >> 12) & 1, tci & 0xFFF
    top = _proto(f.vlan, off, 4, f"802.1Q Virtual LAN, PRI: {pri}, DEI: {dei}, ID: {vid}")
    top.add(Item(f.vlan_priority, pri, off, 2, f"{bits(tci, 0xE000, 16)} = Priority: {VLAN_PRIORITIES[pri]} ({pri})"))
    top.add(Item(f.vlan_dei, dei, off, 2, f"{bits(tci, 0x1000, 16)} = DEI: {'Eligible' if dei else 'Ineligible'}"))
    top.add(Item(f.vlan_id, vid, off, 2, f"{bits(tci, 0x0FFF, 16)} = ID: {vid}"))
    top.add(_ethertype_item(f.vlan_etype, data, off + 2))
    return Layer("vlan", top)


def ieee8021ad_layer(d, data: bytes, off: int, length: int) -> Layer:
    if not _full(data, off, length, 4):
        return Layer("ieee8021ad", _proto(f.ieee8021ad, off, length, "IEEE 802.1ad"))
    tci = struct.unpack_from("!H", data, off)[0]
    pri, dei, vid = tci >> 13, (tci >> 12) & 1, tci & 0xFFF
    top = _proto(f.ieee8021ad, off, 4, f"IEEE 802.1ad, ID: {vid}")
    top.add(Item(f.ieee8021ad_priority, pri, off, 1, f"{bits(tci, 0xE000, 16)} = Priority: {pri}"))
    top.add(Item(f.ieee8021ad_dei, dei, off, 1, f"{bits(tci, 0x1000, 16)} = DEI: {dei}"))
    top.add(Item(f.ieee8021ad_id, vid, off, 2, f"{bits(tci, 0x0FFF, 16)} = ID: {vid}"))
    top.add(_ethertype_item(f.ieee8021ah_etype, data, off + 2))
    return Layer("ieee8021ad", top)


def _sll_source(top: Item, data: bytes, off: int, halen: int) -> None:
    n = min(halen, 8)
    addr = data[off:off + n]
    if halen == 6:
        top.add(Item(f.sll_src_eth, _mac(addr), off, 6, f"Source: {_mac(addr)}"))
    elif halen == 4:
        a = socket.inet_ntoa(addr)
        top.add(Item(f.sll_src_ipv4, a, off, 4, f"Source: {a}"))
    elif n:
        top.add(Item(f.sll_src_other, addr, off, n, f"Source: {addr.hex()}"))
    if n < 8:
        top.add(Item(f.sll_unused, data[off + n:off + 8], off + n, 8 - n, f"Unused: {data[off + n:off + 8].hex()}"))


def sll_layer(d, data: bytes, off: int, length: int) -> Layer:
    if not _full(data, off, length, 16):
        return Layer("sll", _proto(f.sll, off, length, "Linux cooked capture v1"))
    pkttype, hatype, halen = struct.unpack_from("!HHH", data, 0)
    top = _proto(f.sll, 0, 16, "Linux cooked capture v1")
    top.add(Item(f.sll_pkttype, pkttype, 0, 2, f"Packet type: {_named(f.SLL_PKTTYPES, pkttype)}"))
    top.add(Item(f.sll_hatype, hatype, 2, 2, f"Link-layer address type: {_named(f.ARPHRD, hatype)}"))
    top.add(Item(f.sll_halen, halen, 4, 2, f"Link-layer address length: {halen}"))
    _sll_source(top, data, 6, halen)
    top.add(Item(f.sll_etype, *_etype_args(data, 14)))
    return Layer("sll", top)


def _etype_args(data: bytes, off: int):
    t = struct.unpack_from("!H", data, off)[0]
    return t, off, 2, f"Protocol: {_named(f.ETHERTYPES, t, '0x{:04x}')}"


def sll2_layer(d, data: bytes, off: int, length: int) -> Layer:
    if not _full(data, off, length, 20):
        return Layer("sll", _proto(f.sll2, off, length, "Linux cooked capture v2"))
    _, _, ifindex, hatype, pkttype, halen = struct.unpack_from("!HHIHBB", data, 0)
    top = _proto(f.sll2, 0, 20, "Linux cooked capture v2")
    top.add(Item(f.sll_etype, *_etype_args(data, 0)))
    top.add(Item(f.sll_ifindex, ifindex, 4, 4, f"Interface index: {ifindex}"))
    top.add(Item(f.sll_hatype, hatype, 8, 2, f"Link-layer address type: {_named(f.ARPHRD, hatype)}"))
    top.add(Item(f.sll_pkttype, pkttype, 10, 1, f"Packet type: {_named(f.SLL_PKTTYPES, pkttype)}"))
    top.add(Item(f.sll_halen, halen, 11, 1, f"Link-layer address length: {halen}"))
    _sll_source(top, data, 12, halen)
    return Layer("sll", top)


def null_layer(d, data: bytes, off: int, length: int, family: int | None) -> Layer:
    top = _proto(f.null, 0, length, "Null/Loopback")
    if family is not None:
        top.add(Item(f.null_family, family, 0, 4, f"Family: {_named(f.NULL_FAMILIES, family)}"))
    return Layer("null", top)


def raw_layer(d, data: bytes, off: int, length: int) -> Layer:
    return Layer("raw", _proto(f.raw, 0, len(data), "Raw packet data"))


# -- IPv4 / IPv6 ------------------------------------------------------------------------------------

def _ds_text(ds: int) -> str:
    return f"DSCP: {DSCP_SHORT.get(ds >> 2, 'Unknown')}, ECN: {ECN_SHORT[ds & 3]}"


def _ds_children(item: Item, value: int, ds: int, off: int, n: int, mask_shift: int, width: int) -> None:
    item.add(Item(f.ip_dscp, ds >> 2, off, n, f"{bits(value, 0xFC << mask_shift, width)} = Differentiated Services"
                                               f" Codepoint: {DSCP_LONG.get(ds >> 2, 'Unknown')} ({ds >> 2})"))
    item.add(Item(f.ip_ecn, ds & 3, off, n, f"{bits(value, 0x03 << mask_shift, width)} = Explicit Congestion"
                                             f" Notification: {ECN_LONG[ds & 3]} ({ds & 3})"))


def _ds_items(ds: int, off: int):
    holder = Item(None)
    _ds_children(holder, ds, ds, off + 1, 1, 0, 8)
    return holder.children


def _flag_items(hi: int, off: int):
    return [Item(fld, bool(hi & b), off + 6, 1, f"{bits(hi, b, 8)} = {name}: {_set(hi & b)}")
            for fld, b, name in ((f.ip_flags_rb, 0x80, "Reserved bit"), (f.ip_flags_df, 0x40, "Don't fragment"),
                                 (f.ip_flags_mf, 0x20, "More fragments"))]


def ip_layer(d, data: bytes, off: int, length: int) -> Layer:
    if not _full(data, off, length, 20):
        return Layer("ip", _proto(f.ip, off, length, "Internet Protocol Version 4"))
    vihl, ds, tlen, ident, frag, ttl, proto, csum, src, dst = struct.unpack_from("!BBHHHBBH4s4s", data, off)
    src, dst = socket.inet_ntoa(src), socket.inet_ntoa(dst)
    top = _proto(f.ip, off, length, f"Internet Protocol Version 4, Src: {src}, Dst: {dst}")
    hl = vihl & 15
    top.add(Item(f.ip_version, vihl >> 4, off, 1, f"{bits(vihl, 0xF0, 8)} = Version: {vihl >> 4}"))
    top.add(Item(f.ip_hdr_len, hl * 4, off, 1, f"{bits(vihl, 0x0F, 8)} = Header Length: {hl * 4} bytes ({hl})"))
    dsf = top.add(Item(f.ip_dsfield, ds, off + 1, 1, f"Differentiated Services Field: 0x{ds:02x} ({_ds_text(ds)})"))
    dsf.children = _frozen(("ip.ds", ds, off), lambda: _ds_items(ds, off))
    top.add(Item(f.ip_len, tlen, off + 2, 2, f"Total Length: {tlen}"))
    top.add(Item(f.ip_id, ident, off + 4, 2, f"Identification: 0x{ident:04x} ({ident})"))
    fl = frag >> 13
    names = ", ".join(n for b, n in ((4, "Reserved bit"), (2, "Don't fragment"), (1, "More fragments")) if fl & b)
    flags = top.add(Item(f.ip_flags, fl, off + 6, 1,
                         f"{bits(frag >> 8, 0xE0, 8)} = Flags: 0x{fl:x}" + (f", {names}" if names else "")))
    flags.children = _frozen(("ip.flags", frag >> 8, off), lambda: _flag_items(frag >> 8, off))
    fo = frag & 0x1FFF
    top.add(Item(f.ip_frag_offset, fo, off + 6, 2, f"{bits(frag, 0x1FFF, 16)} = Fragment Offset: {fo * 8}"))
    top.add(Item(f.ip_ttl, ttl, off + 8, 1, f"Time to Live: {ttl}"))
    top.add(Item(f.ip_proto, proto, off + 9, 1, f"Protocol: {_named(f.IP_PROTOS, proto)}"))
    top.add(Item(f.ip_checksum, csum, off + 10, 2, f"Header Checksum: 0x{csum:04x} [validation disabled]"))
    top.add(Item(f.ip_checksum_status, 2, off + 10, 0, "[Header checksum status: Unverified]", generated=True))
    top.add(Item(f.ip_src, src, off + 12, 4, f"Source Address: {src}"))
    top.add(Item(f.ip_dst, dst, off + 16, 4, f"Destination Address: {dst}"))
    if hl > 5 and len(data) >= off + hl * 4:
        opts = data[off + 20:off + hl * 4]
        top.add(Item(f.ip_options, opts, off + 20, len(opts), f"Options: ({len(opts)} bytes)"))
    return Layer("ip", top)


def ipv6_layer(d, data: bytes, off: int, length: int) -> Layer:
    if not _full(data, off, length, 40):
        return Layer("ipv6", _proto(f.ipv6, off, length, "Internet Protocol Version 6"))
    vtf, plen, nh, hlim, src, dst = struct.unpack_from("!IHBB16s16s", data, off)
    src, dst = socket.inet_ntop(socket.AF_INET6, src), socket.inet_ntop(socket.AF_INET6, dst)
    top = _proto(f.ipv6, off, 40, f"Internet Protocol Version 6, Src: {src}, Dst: {dst}")
    top.add(Item(f.ipv6_version, vtf >> 28, off, 1, f"{bits(vtf >> 24, 0xF0, 8)} = Version: {vtf >> 28}"))
    tc = (vtf >> 20) & 0xFF
    tci = top.add(Item(f.ipv6_tclass, tc, off, 4, f"{bits(vtf, 0x0FF00000, 32)} = Traffic Class: 0x{tc:02x}"
                                                   f" ({_ds_text(tc)})"))
    _ds_children(tci, vtf, tc, off, 4, 20, 32)
    flow = vtf & 0xFFFFF
    top.add(Item(f.ipv6_flow, flow, off + 1, 3, f"{bits(vtf & 0xFFFFFF, 0x0FFFFF, 24)} = Flow Label: 0x{flow:05x}"))
    top.add(Item(f.ipv6_plen, plen, off + 4, 2, f"Payload Length: {plen}"))
    top.add(Item(f.ipv6_nxt, nh, off + 6, 1, f"Next Header: {_named(f.IP_PROTOS, nh)}"))
    top.add(Item(f.ipv6_hlim, hlim, off + 7, 1, f"Hop Limit: {hlim}"))
    top.add(Item(f.ipv6_src, src, off + 8, 16, f"Source Address: {src}"))
    top.add(Item(f.ipv6_dst, dst, off + 24, 16, f"Destination Address: {dst}"))
    return Layer("ipv6", top)


def ipv6_ext_item(data: bytes, off: int, length: int, kind: int) -> Item:
    """An extension header: a child of the IPv6 item in tshark -V (but its own name in frame.protocols)."""
    field = f.ipv6_ext[kind]
    item = _proto(field, off, length, field.name)
    if kind == 44:
        if len(data) >= off + 8:
            nxt, fo, ident = struct.unpack_from("!BxHI", data, off)
            item.add(Item(f.ipv6_fraghdr_nxt, nxt, off, 1, f"Next header: {_named(f.IP_PROTOS, nxt)}"))
            item.add(Item(f.ipv6_fraghdr_offset, fo >> 3, off + 2, 2,
                          f"{bits(fo, 0xFFF8, 16)} = Offset: {fo >> 3} ({(fo >> 3) * 8} bytes)"))
            item.add(Item(f.ipv6_fraghdr_more, bool(fo & 1), off + 2, 2,
                          f"{bits(fo, 1, 16)} = More Fragments: {'Yes' if fo & 1 else 'No'}"))
            item.add(Item(f.ipv6_fraghdr_ident, ident, off + 4, 4, f"Identification: 0x{ident:08x}"))
    elif len(data) >= off + 2:
        nxt_f, len_f, oct_f = f.ipv6_ext_fields[kind]
        item.add(Item(nxt_f, data[off], off, 1, f"Next Header: {_named(f.IP_PROTOS, data[off])}"))
        item.add(Item(len_f, data[off + 1], off + 1, 1, f"Length: {data[off + 1]}"))
        item.add(Item(oct_f, length, off + 1, 0, f"[Length: {length} bytes]", generated=True))
    return item


# -- UDP / TCP --------------------------------------------------------------------------------------

def udp_layer(d, data: bytes, off: int, length: int) -> Layer:
    if not _full(data, off, length, 8):
        return Layer("udp", _proto(f.udp, off, length, "User Datagram Protocol"))
    sport, dport, ulen, csum = struct.unpack_from("!HHHH", data, off)
    top = _proto(f.udp, off, 8, f"User Datagram Protocol, Src Port: {sport}, Dst Port: {dport}")
    top.add(Item(f.udp_srcport, sport, off, 2, f"Source Port: {sport}"))
    top.add(Item(f.udp_dstport, dport, off + 2, 2, f"Destination Port: {dport}"))
    top.add(Item(f.udp_length, ulen, off + 4, 2, f"Length: {ulen}"))
    if csum:
        top.add(Item(f.udp_checksum, csum, off + 6, 2, f"Checksum: 0x{csum:04x} [unverified]"))
        top.add(Item(f.udp_checksum_status, 2, off + 6, 0, "[Checksum Status: Unverified]", generated=True))
    else:
        c = top.add(Item(f.udp_checksum, csum, off + 6, 2, "Checksum: 0x0000 [zero-value ignored]"))
        c.add(Item(f.udp_checksum_status, 3, off + 6, 0, "[Checksum Status: Not present]", generated=True))
    if d.transport == "udp" and d.payload:
        top.add(Item(f.udp_payload, d.payload, d.payload_offset, len(d.payload),
                     f"UDP payload ({len(d.payload)} byte{'s' if len(d.payload) != 1 else ''})"))
    return Layer("udp", top)


FLAG_SUMMARY = [(0x01, "FIN"), (0x02, "SYN"), (0x04, "RST"), (0x08, "PSH"), (0x10, "ACK"), (0x20, "URG"),
                (0x40, "ECE"), (0x80, "CWR"), (0x100, "AE"), (0xE00, "Reserved")]
FLAG_LETTERS = "RRRACEUAPRSF"
OPTION_KINDS = {0: "End of Option List", 1: "No-Operation", 2: "Maximum Segment Size", 3: "Window Scale",
                4: "SACK Permitted", 5: "SACK", 8: "Time Stamp Option"}


def _option_values(o: Item, data: bytes, p: int, kind: int, n: int) -> None:
    """The decoded values of the options tshark decodes (MSS, window scale, timestamps)."""
    if kind == 2 and n == 4:
        v = struct.unpack_from("!H", data, p + 2)[0]
        o.add(Item(f.tcp_mss_val, v, p + 2, 2, f"MSS Value: {v}"))
    elif kind == 3 and n == 3:
        o.add(Item(f.tcp_wscale_shift, data[p + 2], p + 2, 1, f"Shift count: {data[p + 2]}"))
        m = 1 << min(data[p + 2], 14)
        o.add(Item(f.tcp_wscale_multiplier, m, p + 2, 1, f"[Multiplier: {m}]", generated=True))
    elif kind == 8 and n == 10:
        tsval, tsecr = struct.unpack_from("!II", data, p + 2)
        o.add(Item(f.tcp_tsval, tsval, p + 2, 4, f"Timestamp value: {tsval}"))
        o.add(Item(f.tcp_tsecr, tsecr, p + 6, 4, f"Timestamp echo reply: {tsecr}"))


def _tcp_options(top: Item, data: bytes, off: int, end: int) -> None:
    opts = data[off:end]
    names = []
    item = top.add(Item(f.tcp_options, opts, off, len(opts), ""))
    p = off
    while p < end:
        kind = data[p]
        name = f.TCP_OPTIONS.get(kind, ("", f"Unknown ({kind})"))[1]
        if kind in (0, 1):
            n = 1
        elif p + 1 < end and data[p + 1] >= 2 and p + data[p + 1] <= end:
            n = data[p + 1]
        else:
            n = end - p                  # a bad option length: the rest is one undecodable option
        names.append(name)
        label = f"TCP Option - {name}"
        if kind == 2 and n == 4:
            label += f": {struct.unpack_from('!H', data, p + 2)[0]} bytes"
        elif kind == 3 and n == 3:
            label += f": {data[p + 2]} (multiply by {1 << data[p + 2]})"
        elif kind == 8 and n == 10:
            label += ": TSval {}, TSecr {}".format(*struct.unpack_from("!II", data, p + 2))
        o = item.add(Item(f.tcp_option.get(kind, f.tcp_option_unknown), data[p:p + n], p, n, label))
        o.add(Item(f.tcp_option_kind, kind, p, 1, f"Kind: {OPTION_KINDS.get(kind, 'Unknown')} ({kind})"))
        if n > 1:
            o.add(Item(f.tcp_option_len, data[p + 1], p + 1, 1, f"Length: {data[p + 1]}"))
        _option_values(o, data, p, kind, n)
        p += n
        if kind == 0:
            break
    item.label = f"Options: ({len(opts)} bytes), " + ", ".join(names) if names else f"Options: ({len(opts)} bytes)"


def _ns(ns: int) -> str:
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"


def _tcp_expert(item: Item, abbrev: str, *args) -> None:
    group, severity, message = f.TCP_EXPERTS[abbrev]
    item.expert(ExpertInfo(abbrev, getattr(tree, group), getattr(tree, severity), message.format(*args)))


COMPLETENESS = {1: "Incomplete, SYN_SENT", 3: "Incomplete, CLIENT_ESTABLISHED", 7: "Incomplete, ESTABLISHED",
                15: "Incomplete, DATA", 31: "Complete, WITH_DATA", 47: "Complete, WITH_DATA",
                63: "Complete, WITH_DATA", 23: "Complete, NO_DATA", 39: "Complete, NO_DATA",
                55: "Complete, NO_DATA"}


def _tcp_head(top: Item, t, off: int, seglen: int) -> None:
    """Stream index and completeness (before the segment length, as tshark)."""
    top.add(Item(f.tcp_stream, t.stream, off, 0, f"[Stream index: {t.stream}]", generated=True))
    c = t.completeness
    top.add(Item(f.tcp_completeness, c, off, 0, f"[Conversation completeness: {COMPLETENESS.get(c, 'Incomplete')}"
                                                 f" ({c})]", generated=True))


def _tcp_numbers(top: Item, t, off: int, seq: int, ack: int, fl: int) -> None:
    top.add(Item(f.tcp_seq, t.seq, off + 4, 4, f"Sequence Number: {t.seq}    (relative sequence number)"))
    top.add(Item(f.tcp_seq_raw, seq, off + 4, 4, f"Sequence Number (raw): {seq}"))
    top.add(Item(f.tcp_nxtseq, t.nxtseq, off, 0, f"[Next Sequence Number: {t.nxtseq}    (relative sequence number)]",
                 generated=True))
    rel = "    (relative ack number)" if fl & 0x10 else ""
    top.add(Item(f.tcp_ack, t.ack, off + 8, 4, f"Acknowledgment Number: {t.ack}{rel}"))


def _tcp_window(top: Item, t, off: int) -> None:
    if t is None or t.win_scale == -3:
        if t is not None:
            top.add(Item(f.tcp_window_size, t.window, off + 14, 2, f"[Calculated window size: {t.window}]",
                         generated=True))
        return
    top.add(Item(f.tcp_window_size, t.window, off + 14, 2, f"[Calculated window size: {t.window}]", generated=True))
    sc = t.win_scale
    text = {-1: "-1 (unknown)", -2: "-2 (no window scaling used)"}.get(sc, str(1 << sc) if sc >= 0 else str(sc))
    top.add(Item(f.tcp_window_size_scalefactor, (1 << sc) if sc >= 0 else sc, off + 14, 2,
                 f"[Window size scaling factor: {text}]", generated=True))


def _tcp_analysis(top: Item, t, off: int) -> None:
    ts = top.add(TextItem(None, None, off, 0, "Timestamps", generated=True))
    ts.add(Item(f.tcp_time_relative, _ns(t.rel_ns), off, 0,
                f"[Time since first frame in this TCP stream: {_ns(t.rel_ns)} seconds]", generated=True))
    ts.add(Item(f.tcp_time_delta, _ns(t.delta_ns), off, 0,
                f"[Time since previous frame in this TCP stream: {_ns(t.delta_ns)} seconds]", generated=True))
    if t.acks_frame is None and t.bif is None and t.push is None and not t.flags:
        return                          # tshark shows the tree (and the iRTT) only with something to say
    kids = []
    if t.acks_frame is not None:
        kids.append(Item(f.tcp_analysis_acks_frame, t.acks_frame, off, 0,
                         f"[This is an ACK to the segment in frame: {t.acks_frame}]", generated=True))
        kids.append(Item(f.tcp_analysis_ack_rtt, _ns(t.ack_rtt_ns), off, 0,
                         f"[The RTT to ACK the segment was: {_ns(t.ack_rtt_ns)} seconds]", generated=True))
    if t.irtt_ns is not None:
        kids.append(Item(f.tcp_analysis_initial_rtt, _ns(t.irtt_ns), off, 0, f"[iRTT: {_ns(t.irtt_ns)} seconds]",
                         generated=True))
    if t.bif is not None:
        kids.append(Item(f.tcp_analysis_bytes_in_flight, t.bif, off, 0, f"[Bytes in flight: {t.bif}]",
                         generated=True))
    if t.push is not None:
        kids.append(Item(f.tcp_analysis_push_bytes_sent, t.push, off, 0, f"[Bytes sent since last PSH flag: {t.push}]",
                         generated=True))
    if t.flags:
        flags = Item(f.tcp_analysis_flags, None, off, 0, "TCP Analysis Flags", generated=True)
        for kind in t.flags:
            _tcp_expert(flags, "tcp.analysis." + kind)
        kids.append(flags)
    if kids:
        a = top.add(Item(f.tcp_analysis, None, off, 0, "SEQ/ACK analysis", generated=True))
        for k in kids:
            a.add(k)


def tcp_layer(d, data: bytes, off: int, length: int) -> Layer:
    if not _full(data, off, length, 20):
        return Layer("tcp", _proto(f.tcp, off, length, "Transmission Control Protocol"))
    sport, dport, seq, ack, offflags, win, csum, urp = struct.unpack_from("!HHIIHHHH", data, off)
    hl = offflags >> 12
    fl = offflags & 0x0FFF
    seglen = len(d.payload) if d.transport == "tcp" else 0
    t = getattr(d, "tcp", None)
    shown_seq, shown_ack = (t.seq, t.ack) if t is not None else (seq, ack)
    top = _proto(f.tcp, off, length, f"Transmission Control Protocol, Src Port: {sport}, Dst Port: {dport},"
                                      f" Seq: {shown_seq}" + (f", Ack: {shown_ack}" if fl & 0x10 else "") +
                 f", Len: {seglen}")
    top.add(Item(f.tcp_srcport, sport, off, 2, f"Source Port: {sport}"))
    top.add(Item(f.tcp_dstport, dport, off + 2, 2, f"Destination Port: {dport}"))
    if t is not None:
        _tcp_head(top, t, off, seglen)
    top.add(Item(f.tcp_len, seglen, off, 0, f"[TCP Segment Len: {seglen}]", generated=True))
    if t is not None:
        _tcp_numbers(top, t, off, seq, ack, fl)
    else:
        top.add(Item(f.tcp_seq_raw, seq, off + 4, 4, f"Sequence Number (raw): {seq}"))
    top.add(Item(f.tcp_ack_raw, ack, off + 8, 4, f"Acknowledgment number (raw): {ack}"))
    top.add(Item(f.tcp_hdr_len, hl * 4, off + 12, 1,
                 f"{bits(hl << 4, 0xF0, 8)} = Header Length: {hl * 4} bytes ({hl})"))
    summary = ", ".join(n for b, n in FLAG_SUMMARY if fl & b) or "<None>"
    flags = top.add(Item(f.tcp_flags, fl, off + 12, 2, f"Flags: 0x{fl:03x} ({summary})"))
    for fld, mask, _, _ in f.TCP_FLAG_BITS:
        # Wireshark trims a bit field's bytes to those its mask touches.
        o, n = (off + 12, 2) if mask & 0xF00 and mask & 0xFF else (off + 12, 1) if mask & 0xF00 else (off + 13, 1)
        bit = flags.add(Item(fld, bool(fl & mask), o, n, f"{bits(fl, mask, 12)} = {fld.name}: {_set(fl & mask)}"))
        if t is not None and fl & mask:
            _flag_expert(bit, mask, fl, t)
    s = "".join(FLAG_LETTERS[11 - i] if fl >> i & 1 else "\u00b7" for i in range(11, -1, -1))
    fstr = flags.add(Item(f.tcp_flags_str, s, off + 12, 2, f"[TCP Flags: {s}]", generated=True))
    if t is not None and t.fin_role:
        _tcp_expert(fstr, "tcp.connection.fin_" + t.fin_role)
    top.add(Item(f.tcp_window_size_value, win, off + 14, 2, f"Window: {win}"))
    _tcp_window(top, t, off)
    top.add(Item(f.tcp_checksum, csum, off + 16, 2, f"Checksum: 0x{csum:04x} [unverified]"))
    top.add(Item(f.tcp_checksum_status, 2, off + 16, 0, "[Checksum Status: Unverified]", generated=True))
    top.add(Item(f.tcp_urgent_pointer, urp, off + 18, 2, f"Urgent Pointer: {urp}"))
    if hl > 5 and length >= hl * 4 and len(data) >= off + hl * 4:
        _tcp_options(top, data, off + 20, off + hl * 4)
    if t is not None:
        _tcp_analysis(top, t, off)
    if seglen:
        top.add(Item(f.tcp_payload, d.payload, d.payload_offset, seglen, f"TCP payload ({seglen} byte"
                                                                           f"{'s' if seglen != 1 else ''})"))
    return Layer("tcp", top)


def _flag_expert(bit: Item, mask: int, fl: int, t) -> None:
    if mask == 0x02:
        _tcp_expert(bit, "tcp.connection.synack" if fl & 0x10 else "tcp.connection.syn", t.server_port)
    elif mask == 0x01:
        _tcp_expert(bit, "tcp.connection.fin")
    elif mask == 0x04:
        _tcp_expert(bit, "tcp.connection.rst")


BUILDERS = {"eth": eth_layer, "vlan": vlan_layer, "ieee8021ad": ieee8021ad_layer, "sll": sll_layer,
            "sll2": sll2_layer, "null": null_layer,
            "raw": raw_layer, "ip": ip_layer, "ipv6": ipv6_layer, "udp": udp_layer, "tcp": tcp_layer,
            "sctp": sctp_layer}


def build(d) -> list[Layer]:
    data = d.frame.data
    layers = [frame_layer(d)]
    by_proto: dict[str, Layer] = {}
    for span in d.spans:
        proto, off, length = span[0], span[1], span[2]
        if proto == "ipv6.ext":
            if "ipv6" in by_proto:
                by_proto["ipv6"].item.add(ipv6_ext_item(data, off, length, span[3]))
            continue
        made = BUILDERS[proto](d, data, off, length, *span[3:])
        layer = made[0] if isinstance(made, list) else made     # SCTP: several (its continuation layers)
        layers.extend(made) if isinstance(made, list) else layers.append(made)
        by_proto[proto] = layer
    for proto, info in d.problems:
        (by_proto.get(proto) or layers[-1]).item.expert(info)
    for pieces, whole in getattr(d, "reassembled", None) or ():
        layers.append(tcp_segments_layer(pieces, whole))
    return layers


def tcp_segments_layer(pieces, whole: bytes) -> Layer:
    """tshark's summary of a PDU reassembled from segments, shown in the frame that completed it."""
    parts = ", ".join(f"#{frame}({length})" for frame, length in pieces)
    top = Item(f.tcp_segments, None, 0, 0, f"[{len(pieces)} Reassembled TCP Segments ({len(whole)} bytes): {parts}]",
               generated=True)
    at = 0
    for frame, length in pieces:
        top.add(Item(f.tcp_segment, frame, 0, 0, f"[Frame: {frame}, payload: {at}-{at + length - 1} ({length} bytes)]",
                     generated=True))
        at += length
    top.add(Item(f.tcp_segment_count, len(pieces), 0, 0, f"[Segment count: {len(pieces)}]", generated=True))
    top.add(Item(f.tcp_reassembled_length, len(whole), 0, 0, f"[Reassembled TCP length: {len(whole)}]",
                 generated=True))
    top.add(Item(f.tcp_reassembled_data, whole, 0, 0, None, generated=True))     # tshark's bytes label (cut)
    return Layer("tcp.segments", top)
