"""The IPv6 routing header's own fields (tshark's packet-ipv6.c dissect_routing6): its type and segments left,
then a source route's (type 0, deprecated) or a Mobile IPv6 home address's (type 2) reserved bytes and addresses,
or a segment routing header's (type 4) last entry, flags, tag and segments. The destination a packet still has to
reach (the Destination column, the conversation) is capture.network's: `final_destination`."""
from __future__ import annotations


from ...engine.tree import DEPRECATED, NOTE, ExpertInfo, Item
from .. import fields as f
from ..network import v6_text

TYPES = {0: "Source Route", 1: "Nimrod", 2: "Type 2 Routing", 3: "RPL Source Route", 4: "Segment Routing",
         5: "Compact Routing Header 16", 6: "Compact Routing Header 32", 253: "Experiment 1", 254: "Experiment 2"}


def _v6(data: bytes, at: int) -> str:
    return v6_text(data[at:at + 16])


def final_destination(data: bytes, p: int, size: int) -> bytes | None:
    """The address a routing header at `p` (of `size` bytes) sends the packet to last, when segments are left
    (None: the IPv6 destination stays)."""
    kind, left = data[p + 2], data[p + 3]
    if not left:
        return None
    if kind == 0 and data[p + 1] // 2:
        at = p + 8 + 16 * (data[p + 1] // 2 - 1)
    elif kind in (2, 4):
        at = p + 8
    else:
        return None
    return data[at:at + 16] if at + 16 <= p + size and at + 16 <= len(data) else None


def routing_items(item: Item, data: bytes, p: int, size: int, cut: int | None = None) -> None:
    """Type, segments left and the type's fields, after Next Header and Length. `cut`: where the snap length cut
    the header (the first 8 bytes are read at once; each address once it is whole)."""
    if cut is not None:
        size = min(size, max(0, cut - p - 8) // 16 * 16 + 8)
    elif size < 8 or len(data) < p + size:
        return
    if cut is not None and cut < p + 3:
        return
    kind = data[p + 2]
    name = TYPES.get(kind, "Unknown")
    item.label += f" ({name})"
    t = item.add(Item(f.ipv6_routing_type, kind, p + 2, 1, f"Type: {name} ({kind})"))
    if cut is not None and cut < p + 4:
        return
    left = data[p + 3]
    item.add(Item(f.ipv6_routing_segleft, left, p + 3, 1, f"Segments Left: {left}"))
    if cut is not None and cut < p + 8:
        return
    if kind in (0, 2):
        fields = (f.ipv6_routing_src_reserved, f.ipv6_routing_src_addr) if kind == 0 else \
            (f.ipv6_routing_mipv6_reserved, f.ipv6_routing_mipv6_home_address)
        item.add(Item(fields[0], data[p + 4:p + 8], p + 4, 4, f"Reserved: {data[p + 4:p + 8].hex()}"))
        count = min(data[p + 1] // 2 if kind == 0 else 1, (size - 8) // 16)
        for i in range(count):
            at = p + 8 + 16 * i
            item.add(Item(fields[1], _v6(data, at), at, 16, f"Address[{i + 1}]: {_v6(data, at)}"))
        if kind == 0 and cut is None:         # (tshark notes it once the addresses are read)
            t.expert(ExpertInfo("ipv6.routing.deprecated", DEPRECATED, NOTE, "Routing header type is deprecated"))
    elif kind == 4:
        last, flags, tag = data[p + 4], data[p + 5], data[p + 6:p + 8]
        item.add(Item(f.ipv6_routing_srh_last_entry, last, p + 4, 1, f"Last Entry: {last}"))
        item.add(Item(f.ipv6_routing_srh_flags, flags, p + 5, 1, f"Flags: 0x{flags:02x}"))
        item.add(Item(f.ipv6_routing_srh_tag, tag, p + 6, 2, f"Tag: {tag.hex()}"))
        for i in range(last + 1):
            at = p + 8 + 16 * i
            if at + 16 > p + size:
                break
            item.add(Item(f.ipv6_routing_srh_addr, _v6(data, at), at, 16, f"Address[{i}]: {_v6(data, at)}"))
