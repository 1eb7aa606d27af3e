"""Ethernet II, 802.1Q and 802.1ad (tshark's packet-eth.c, packet-vlan.c, packet-ieee8021ah.c)."""
from __future__ import annotations

import struct

from ...engine.tree import PROTOCOL, WARN, ExpertInfo, HiddenItem, Item, Layer
from .. import fields as f
from .. import manuf
from .common import bits, frozen, full, mac, named, proto_item

VLAN_PRIORITIES = ["Best Effort (default)", "Background", "Excellent Effort", "Critical Applications",
                   "Video, < 100ms latency and jitter", "Voice, < 10ms latency and jitter",
                   "Internetwork Control", "Network Control"]


def _ethertype_item(field, data: bytes, off: int) -> Item:
    t = struct.unpack_from("!H", data, off)[0]
    return Item(field, t, off, 2, f"Type: {named(f.ETHERTYPES, t, '0x{:04x}')}")


SRC_NOT_GROUP = ExpertInfo("eth.src_not_group", PROTOCOL, WARN,
                           "Source MAC must not be a group address: IEEE 802.3-2002, Section 3.2.3(b)")


def _eth_addr(fields, data: bytes, off: int, name: str) -> Item:
    """An address and its tree as tshark 4.0's proto_tree_add_mac48_detail: the field, its hidden resolved
    name and OUI, the same again as eth.addr (visible), then the LG and IG bits (with hidden eth.lg/eth.ig)."""
    own, own_resolved, own_oui, own_oui_resolved, lg, ig = fields
    raw = data[off:off + 6]
    text, name_of, long = mac(raw), manuf.resolved(raw), manuf.oui_name(raw)
    resolved, shown = (name_of, f"{name_of} ({text})") if name_of else (text, text)
    oui = int.from_bytes(raw[:3], "big")
    item = Item(own, text, off, 6, f"{name}: {shown}")
    if own is f.eth_src and raw[0] & 1:
        item.expert(SRC_NOT_GROUP)
    for addr, res, o, o_res in ((None, own_resolved, own_oui, own_oui_resolved),
                                (f.eth_addr, f.eth_addr_resolved, f.eth_addr_oui, f.eth_addr_oui_resolved)):
        if addr is not None:
            item.add(Item(addr, text, off, 6, f"Address: {shown}"))
        item.add(HiddenItem(res, resolved, off, 6, generated=True))
        item.add(HiddenItem(o, oui, off, 3, generated=True))
        if long is not None:
            item.add(HiddenItem(o_res, long, off, 3, generated=True))
    top3 = oui
    lg_text = bits(top3, 0x020000, 24) + " = LG bit: " + (
        "Locally administered address (this is NOT the factory default)" if top3 & 0x020000
        else "Globally unique address (factory default)")
    item.add(Item(lg, bool(top3 & 0x020000), off, 3, lg_text))
    item.add(HiddenItem(f.eth_lg, bool(top3 & 0x020000), off, 3))
    ig_text = bits(top3, 0x010000, 24) + " = IG bit: " + (
        "Group address (multicast/broadcast)" if top3 & 0x010000 else "Individual address (unicast)")
    item.add(Item(ig, bool(top3 & 0x010000), off, 3, ig_text))
    item.add(HiddenItem(f.eth_ig, bool(top3 & 0x010000), off, 3))
    return item


def eth_layer(d, data: bytes, off: int, length: int) -> Layer:
    if not full(data, off, length, 14):
        return Layer("eth", proto_item(f.eth, off, length, "Ethernet II"))
    head = data[0:14]
    label, kids = frozen(("eth", head, manuf.RESOLVE["mac"]), lambda: _eth_parts(data))   # a (label, children) pair
    top = proto_item(f.eth, 0, 14, label)
    top.children = kids
    return Layer("eth", top)


def _eth_parts(data: bytes):
    """(label, frozen children) of an Ethernet II header."""
    return (_eth_label(data), tuple(_eth_items(data)))


def _eth_label(data: bytes) -> str:
    src, dst = data[6:12], data[0:6]
    return f"Ethernet II, Src: {_shown(src)}, Dst: {_shown(dst)}"


def _shown(raw: bytes) -> str:
    name = manuf.resolved(raw)
    return f"{name} ({mac(raw)})" if name else mac(raw)


def _eth_items(data: bytes):
    top = proto_item(f.eth, 0, 14, "")
    top.add(_eth_addr(f.eth_dst_fields, data, 0, "Destination"))
    top.add(_eth_addr(f.eth_src_fields, data, 6, "Source"))
    t = struct.unpack_from("!H", data, 12)[0]
    if t <= 1500:
        top.add(Item(f.eth_len, t, 12, 2, f"Length: {t}"))
    else:
        top.add(_ethertype_item(f.eth_type, data, 12))
    return top.children


def vlan_layer(d, data: bytes, off: int, length: int) -> Layer:
    if not full(data, off, length, 4):
        return Layer("vlan", proto_item(f.vlan, off, length, "802.1Q Virtual LAN"))
    tci = struct.unpack_from("!H", data, off)[0]
    pri, dei, vid = tci >> 13, (tci >> 12) & 1, tci & 0xFFF
    top = proto_item(f.vlan, off, 4, f"802.1Q Virtual LAN, PRI: {pri}, DEI: {dei}, ID: {vid}")
    top.add(Item(f.vlan_priority, pri, off, 2, f"{bits(tci, 0xE000, 16)} = Priority: {VLAN_PRIORITIES[pri]} ({pri})"))
    top.add(Item(f.vlan_dei, dei, off, 2, f"{bits(tci, 0x1000, 16)} = DEI: {'Eligible' if dei else 'Ineligible'}"))
    top.add(Item(f.vlan_id, vid, off, 2, f"{bits(tci, 0x0FFF, 16)} = ID: {vid}"))
    top.add(_ethertype_item(f.vlan_etype, data, off + 2))
    return Layer("vlan", top)


def ieee8021ad_layer(d, data: bytes, off: int, length: int) -> Layer:
    if not full(data, off, length, 4):
        return Layer("ieee8021ad", proto_item(f.ieee8021ad, off, length, "IEEE 802.1ad"))
    tci = struct.unpack_from("!H", data, off)[0]
    pri, dei, vid = tci >> 13, (tci >> 12) & 1, tci & 0xFFF
    top = proto_item(f.ieee8021ad, off, 4, f"IEEE 802.1ad, ID: {vid}")
    top.add(Item(f.ieee8021ad_priority, pri, off, 1, f"{bits(tci, 0xE000, 16)} = Priority: {pri}"))
    top.add(Item(f.ieee8021ad_dei, dei, off, 1, f"{bits(tci, 0x1000, 16)} = DEI: {dei}"))
    top.add(Item(f.ieee8021ad_id, vid, off, 2, f"{bits(tci, 0x0FFF, 16)} = ID: {vid}"))
    top.add(_ethertype_item(f.ieee8021ah_etype, data, off + 2))
    return Layer("ieee8021ad", top)
