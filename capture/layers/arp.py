"""ARP (tshark's packet-arp.c): Ethernet/IPv4 requests and replies, gratuitous ARP, probes and announcements, the
Info column tshark writes for each."""
from __future__ import annotations

import struct

from ...engine.tree import Item, Layer
from .. import fields as f
from .. import manuf
from ..network import v4_text
from .common import named, proto_item

OPCODES = {1: "request", 2: "reply", 3: "reverse request", 4: "reverse reply", 8: "inverse request",
           9: "inverse reply"}


def parse(data: bytes, off: int):
    """(hw type, proto type, hw size, proto size, opcode, sha, spa, tha, tpa) of an Ethernet/IPv4 ARP packet, or
    None for another kind (shown as its header only)."""
    if len(data) < off + 28:
        return None
    head = struct.unpack_from("!HHBBH", data, off)
    if head[2:4] != (6, 4):
        return None
    return (*head, data[off + 8:off + 14], v4_text(data[off + 14:off + 18]), data[off + 18:off + 24],
            v4_text(data[off + 24:off + 28]))


def kind(p) -> str:
    """tshark's name for the packet: gratuitous / probe / announcement, else the opcode's."""
    op, spa, tha, tpa = p[4], p[6], p[7], p[8]
    if op == 1 and spa == "0.0.0.0":
        return "probe"
    if op in (1, 2) and spa == tpa:
        return "announcement" if op == 1 and tha == bytes(6) else "gratuitous"
    return ""


def info(data: bytes, off: int) -> str:
    p = parse(data, off)
    if p is None:
        return ""
    op, sha, spa, tha, tpa = p[4], p[5], p[6], p[7], p[8]
    k = kind(p)
    if k == "probe":
        return f"Who has {tpa}? (ARP Probe)"
    if k == "announcement":
        return f"ARP Announcement for {spa}"
    if k == "gratuitous":
        return f"Gratuitous ARP for {spa} ({'Request' if op == 1 else 'Reply'})"
    if op == 1:
        return f"Who has {tpa}? Tell {spa}"
    if op == 2:
        return f"{spa} is at {sha.hex(':')}"
    if op == 3:
        return f"Who is {tha.hex(':')}? Tell {sha.hex(':')}"
    return ""


def _mac(b: bytes) -> str:
    name = manuf.resolved(b)
    return f"{name or b.hex(':')} ({b.hex(':')})"


def arp_layer(d, data: bytes, off: int, length: int) -> Layer:
    p = parse(data, off)
    if p is None:
        return Layer("arp", proto_item(f.arp, off, length, "Address Resolution Protocol"))
    hw, pt, hs, ps, op, sha, spa, tha, tpa = p
    k = kind(p)
    what = {"probe": "ARP Probe", "announcement": "ARP Announcement"}.get(k) or \
        OPCODES.get(op, "Unknown") + ("/gratuitous ARP" if k == "gratuitous" else "")
    top = proto_item(f.arp, off, 28, f"Address Resolution Protocol ({what})")
    top.add(Item(f.arp_hw_type, hw, off, 2, f"Hardware type: {named({1: 'Ethernet'}, hw)}"))
    top.add(Item(f.arp_proto_type, pt, off + 2, 2, f"Protocol type: {named(f.ETHERTYPES, pt, '0x{:04x}')}"))
    top.add(Item(f.arp_hw_size, hs, off + 4, 1, f"Hardware size: {hs}"))
    top.add(Item(f.arp_proto_size, ps, off + 5, 1, f"Protocol size: {ps}"))
    top.add(Item(f.arp_opcode, op, off + 6, 2, f"Opcode: {named(OPCODES, op)}"))
    if k == "gratuitous" or k == "announcement":
        top.add(Item(f.arp_isgratuitous, True, off + 6, 0, "[Is gratuitous: True]", generated=True))
    if k:
        flag = {"probe": (f.arp_isprobe, "Is probe"), "announcement": (f.arp_isannouncement, "Is announcement")}.get(k)
        if flag:
            top.add(Item(flag[0], True, off + 6, 0, f"[{flag[1]}: True]", generated=True))
    top.add(Item(f.arp_src_hw_mac, sha.hex(":"), off + 8, 6, f"Sender MAC address: {_mac(sha)}"))
    top.add(Item(f.arp_src_proto_ipv4, spa, off + 14, 4, f"Sender IP address: {spa}"))
    top.add(Item(f.arp_dst_hw_mac, tha.hex(":"), off + 18, 6, f"Target MAC address: {_mac(tha)}"))
    top.add(Item(f.arp_dst_proto_ipv4, tpa, off + 24, 4, f"Target IP address: {tpa}"))
    return Layer("arp", top)
