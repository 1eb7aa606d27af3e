"""Ethernet II, 802.1Q and 802.1ad (tshark's packet-eth.c, packet-vlan.c, packet-ieee8021ah.c)."""
from __future__ import annotations

import struct

from ..link import trailer
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


def oui_label(field, raw: bytes, long: str | None) -> str:
    """A hidden OUI item's label (-T pdml shows it): BASE_OUI's "xx:xx:xx (vendor)", cut as Wireshark 4.0's
    32-byte value buffer cuts it."""
    value = raw[:3].hex(":")
    return f"{field.name}: " + (f"{value} ({long})"[:31] if long is not None else value)


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
        item.add(HiddenItem(o, oui, off, 3, oui_label(o, raw, long), generated=True))
        if long is not None:
            item.add(HiddenItem(o_res, long, off, 6, generated=True))
    top3 = oui
    lg_text = bits(top3, 0x020000, 24) + " = LG bit: " + (
        "Locally administered address (this is NOT the factory default)" if top3 & 0x020000
        else "Globally unique address (factory default)")
    item.add(Item(lg, bool(top3 & 0x020000), off, 3, lg_text))
    item.add(HiddenItem(f.eth_lg, bool(top3 & 0x020000), off, 3, lg_text))
    ig_text = bits(top3, 0x010000, 24) + " = IG bit: " + (
        "Group address (multicast/broadcast)" if top3 & 0x010000 else "Individual address (unicast)")
    item.add(Item(ig, bool(top3 & 0x010000), off, 3, ig_text))
    item.add(HiddenItem(f.eth_ig, bool(top3 & 0x010000), off, 3, ig_text))
    return item


# Whole Ethernet layers of frames without a trailer or a problem, by header: shared, never changed (a frame with
# problems may get an expert hung on its last layer: capture.layers.build).
SHARED: dict = {}


def eth_layer(d, data: bytes, off: int, length: int) -> Layer:
    if not full(data, off, length, 14):
        return Layer("eth", proto_item(f.eth, off, length, "Ethernet II"))
    head = data[0:14]
    resolve = manuf.RESOLVE["mac"]
    split = trailer(d, data)
    if split is None and not d.problems:
        layer = SHARED.get((head, resolve))
        if layer is None:
            if len(SHARED) >= 4096:
                SHARED.clear()
            layer = SHARED[(head, resolve)] = Layer("eth", _eth_top(data, head, resolve))
        return layer
    top = _eth_top(data, head, resolve)
    if split is not None:       # padding, FCS or trailer after the packet (tshark's add_ethernet_trailer)
        end, pad, fcs, _ = split
        top.children = list(top.children)
        if pad:
            top.add(Item(f.eth_padding, data[end:end + pad], end, pad, f"Padding: {data[end:end + pad].hex()}"))
        rest = data[end + pad:]
        if fcs:
            (value,) = struct.unpack("!I", rest)
            top.add(Item(f.eth_fcs, value, end + pad, 4, f"Frame check sequence: 0x{value:08x} [unverified]"))
            top.add(Item(f.eth_fcs_status, 2, end + pad, 0, "[FCS Status: Unverified]", generated=True))
        elif rest:
            top.add(Item(f.eth_trailer, rest, end + pad, len(rest), f"Trailer: {rest.hex()}"))
    return Layer("eth", top)


def _eth_top(data: bytes, head: bytes, resolve: bool) -> Item:
    label, kids = frozen(("eth", head, resolve), lambda: _eth_parts(data))   # a (label, children) pair
    top = proto_item(f.eth, 0, 14, label)
    top.children = kids
    return top


def _eth_parts(data: bytes):
    """(label, frozen children) of an Ethernet II header."""
    return (_eth_label(data), tuple(_eth_items(data)))


def _eth_label(data: bytes) -> str:
    src, dst = data[6:12], data[0:6]
    return f"Ethernet II, Src: {mac_shown(src)}, Dst: {mac_shown(dst)}"


def mac_shown(raw: bytes) -> str:
    """A MAC address as tshark labels it: its manufacturer's name first when names are resolved."""
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


# An 802.1Q / 802.1ad tag, as a table: (field, name, summary), then per part of the TCI (field, mask, bytes the
# item covers, -V text of the value), then the ethertype field.
TAGS = {
    "vlan": (f.vlan, "802.1Q Virtual LAN", "802.1Q Virtual LAN, PRI: {pri}, DEI: {dei}, ID: {vid}",
             ((f.vlan_priority, 0xE000, 2, lambda v: f"Priority: {VLAN_PRIORITIES[v]} ({v})"),
              (f.vlan_dei, 0x1000, 2, lambda v: f"DEI: {'Eligible' if v else 'Ineligible'}"),
              (f.vlan_id, 0x0FFF, 2, lambda v: f"ID: {v}")), f.vlan_etype),
    "ieee8021ad": (f.ieee8021ad, "IEEE 802.1ad", "IEEE 802.1ad, ID: {vid}",
                   ((f.ieee8021ad_priority, 0xE000, 1, lambda v: f"Priority: {v}"),
                    (f.ieee8021ad_dei, 0x1000, 1, lambda v: f"DEI: {v}"),
                    (f.ieee8021ad_id, 0x0FFF, 2, lambda v: f"ID: {v}")), f.ieee8021ah_etype),
}


def _tag_layer(proto: str, data: bytes, off: int, length: int, cut: str | None = None) -> Layer:
    """An 802.1Q / 802.1ad tag. `cut`: the snap length cut it after its TCI (tshark 4.0: 802.1Q shows the TCI's
    parts, 802.1ad its bare name)."""
    field, name, summary, parts, etype = TAGS[proto]
    if cut and proto == "ieee8021ad" or not cut and not full(data, off, length, 4):
        return Layer(proto, proto_item(field, off, length, name))
    tci = struct.unpack_from("!H", data, off)[0]
    pri, dei, vid = tci >> 13, (tci >> 12) & 1, tci & 0xFFF
    top = proto_item(field, off, 4, summary.format(pri=pri, dei=dei, vid=vid))
    for part, mask, n, text in parts:
        value = (tci & mask) >> (mask & -mask).bit_length() - 1
        top.add(Item(part, value, off, n, f"{bits(tci, mask, 16)} = {text(value)}"))
    if not cut:
        top.add(_ethertype_item(etype, data, off + 2))
    return Layer(proto, top)


def vlan_layer(d, data: bytes, off: int, length: int, cut: str | None = None) -> Layer:
    return _tag_layer("vlan", data, off, length, cut)


def ieee8021ad_layer(d, data: bytes, off: int, length: int, cut: str | None = None) -> Layer:
    return _tag_layer("ieee8021ad", data, off, length, cut)


def tag_info(proto: str, data: bytes, off: int) -> str:
    """The Info column a tag sets (a frame that ends in it: the snap length cut what follows)."""
    tci = struct.unpack_from("!H", data, off)[0]
    text = "PRI: {}  DEI: {}  ID: {}" if proto == "vlan" else "PRI: {}  DROP: {} ID: {}"
    return text.format(tci >> 13, (tci >> 12) & 1, tci & 0xFFF)
