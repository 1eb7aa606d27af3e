"""Linux cooked capture v1 and v2 (tshark's packet-sll.c)."""
from __future__ import annotations

import struct

from ...engine.tree import Item, Layer
from .. import fields as f
from .. import manuf
from ..network import v4_text
from .common import full, mac, named, proto_item

def _sll_source(top: Item, data: bytes, off: int, halen: int) -> None:
    n = min(halen, 8)
    addr = data[off:off + n]
    if halen == 6:
        name = manuf.resolved(addr)
        shown = f"{name} ({mac(addr)})" if name else mac(addr)
        top.add(Item(f.sll_src_eth, mac(addr), off, 6, f"Source: {shown}"))
    elif halen == 4:
        a = v4_text(addr)
        top.add(Item(f.sll_src_ipv4, a, off, 4, f"Source: {a}"))
    elif n:
        top.add(Item(f.sll_src_other, addr, off, n, f"Source: {addr.hex()}"))
    if n < 8:
        top.add(Item(f.sll_unused, data[off + n:off + 8], off + n, 8 - n, f"Unused: {data[off + n:off + 8].hex()}"))


def sll_layer(d, data: bytes, off: int, length: int) -> Layer:
    if not full(data, off, length, 16):
        return Layer("sll", proto_item(f.sll, off, length, "Linux cooked capture v1"))
    pkttype, hatype, halen = struct.unpack_from("!HHH", data, 0)
    top = proto_item(f.sll, 0, 16, "Linux cooked capture v1")
    top.add(Item(f.sll_pkttype, pkttype, 0, 2, f"Packet type: {named(f.SLL_PKTTYPES, pkttype)}"))
    top.add(Item(f.sll_hatype, hatype, 2, 2, f"Link-layer address type: {named(f.ARPHRD, hatype)}"))
    top.add(Item(f.sll_halen, halen, 4, 2, f"Link-layer address length: {halen}"))
    _sll_source(top, data, 6, halen)
    top.add(Item(f.sll_etype, *_etype_args(data, 14)))
    return Layer("sll", top)


def _etype_args(data: bytes, off: int):
    t = struct.unpack_from("!H", data, off)[0]
    return t, off, 2, f"Protocol: {named(f.ETHERTYPES, t, '0x{:04x}')}"


def sll2_layer(d, data: bytes, off: int, length: int) -> Layer:
    if not full(data, off, length, 20):
        return Layer("sll", proto_item(f.sll2, off, length, "Linux cooked capture v2"))
    _, _, ifindex, hatype, pkttype, halen = struct.unpack_from("!HHIHBB", data, 0)
    top = proto_item(f.sll2, 0, 20, "Linux cooked capture v2")
    top.add(Item(f.sll_etype, *_etype_args(data, 0)))
    top.add(Item(f.sll_ifindex, ifindex, 4, 4, f"Interface index: {ifindex}"))
    top.add(Item(f.sll_hatype, hatype, 8, 2, f"Link-layer address type: {named(f.ARPHRD, hatype)}"))
    top.add(Item(f.sll_pkttype, pkttype, 10, 1, f"Packet type: {named(f.SLL_PKTTYPES, pkttype)}"))
    top.add(Item(f.sll_halen, halen, 11, 1, f"Link-layer address length: {halen}"))
    _sll_source(top, data, 12, halen)
    return Layer("sll", top)
