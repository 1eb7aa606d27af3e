"""Helpers every standard layer builder shares: label pieces, the frozen-subtree cache."""
from __future__ import annotations

from ...engine.tree import Item, SubtreeMemo, bit_picture

bits = bit_picture   # (value, mask, width)


def set_text(v: int) -> str:
    return "Set" if v else "Not set"


def mac(b: bytes) -> str:
    return b.hex(":")


def named(values: dict, v: int, fmt: str = "{}") -> str:
    return f"{values.get(v, 'Unknown')} ({fmt.format(v)})"


def proto_item(field, off: int, length: int, label: str) -> Item:
    return Item(field, None, off, length, label)


def full(data: bytes, off: int, length: int, need: int) -> bool:
    return length >= need and len(data) >= off + need


def ns_text(ns: int) -> str:
    """A time in nanoseconds as tshark's "%d.%09d" (a negative delta keeps its sign: "-0.000100000")."""
    if ns < 0:
        return "-" + ns_text(-ns)
    return "%d.%09d" % divmod(ns, 1_000_000_000)


# Every frame of a conversation repeats the same few headers: their subtrees are built once and shared, frozen
# (tuple children), so outputs can memoise their text too (engine.tree.Item). Bounded in bytes.
FROZEN = SubtreeMemo(4 << 20)


def frozen(key, build):
    return FROZEN.get(key, build)

