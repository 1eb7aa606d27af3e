"""Null/Loopback and raw IP (tshark's packet-null.c, packet-raw.c)."""
from __future__ import annotations

from ...engine.tree import Item, Layer
from .. import fields as f
from .common import named, proto_item

def null_layer(d, data: bytes, off: int, length: int, family: int | None) -> Layer:
    top = proto_item(f.null, 0, length, "Null/Loopback")
    if family is not None:
        top.add(Item(f.null_family, family, 0, 4, f"Family: {named(f.NULL_FAMILIES, family)}"))
    return Layer("null", top)


def raw_layer(d, data: bytes, off: int, length: int) -> Layer:
    return Layer("raw", proto_item(f.raw, 0, len(data), "Raw packet data"))
