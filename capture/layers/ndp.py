"""ICMPv6 neighbour discovery and MLDv2 bodies (tshark's packet-icmpv6.c): router and neighbour solicitations,
neighbour advertisements with their link-layer address options, multicast listener reports v2."""
from __future__ import annotations

import socket
import struct

from ...engine.tree import HiddenItem, Item
from .. import fields as f
from .. import manuf

ND_TYPES = (133, 135, 136)
OPTION_NAMES = {1: "Source link-layer address", 2: "Target link-layer address"}
RECORD_TYPES = {1: "Mode is include", 2: "Mode is exclude", 3: "Changed to include", 4: "Changed to exclude",
                5: "Allow new sources", 6: "Block old sources"}


def _v6(data: bytes, at: int) -> str:
    return socket.inet_ntop(socket.AF_INET6, data[at:at + 16])


def _options(data: bytes, p: int, end: int):
    """(offset, type, length in bytes, link-layer address) of each link-layer address option; stops at any other."""
    while p + 8 <= end:
        kind, n = data[p], data[p + 1] * 8
        if kind not in OPTION_NAMES or n != 8 or p + n > end:
            return
        yield p, kind, n, data[p + 2:p + 8]
        p += n


def info(v6type: int, data: bytes, off: int, end: int) -> str | None:
    """The Info column of an NDP message (None: another type)."""
    lladdr = {kind: mac.hex(":") for _, kind, _, mac in _options(data, off + (8 if v6type == 133 else 24), end)}
    if v6type == 133 and off + 8 <= end:
        return "Router Solicitation" + (f" from {lladdr[1]}" if 1 in lladdr else "")
    if v6type == 135 and off + 24 <= end:
        return f"Neighbor Solicitation for {_v6(data, off + 8)}" + (f" from {lladdr[1]}" if 1 in lladdr else "")
    if v6type == 136 and off + 24 <= end:
        flags = data[off + 4]
        names = ", ".join(n for b, n in ((0x80, "rtr"), (0x40, "sol"), (0x20, "ovr")) if flags & b)
        return f"Neighbor Advertisement {_v6(data, off + 8)}" + (f" ({names})" if names else "") + \
            (f" is at {lladdr[2]}" if 2 in lladdr else "")
    return None


def body(top: Item, v6type: int, data: bytes, off: int, end: int) -> bool:
    """Add an NDP / MLDv2 message's fields after its checksum; False for a type (or length) not handled here."""
    if v6type == 143 and off + 8 <= end:
        return _mldv2(top, data, off, end)
    if v6type not in ND_TYPES or off + (8 if v6type == 133 else 24) > end:
        return False
    if v6type == 136:
        (flags,) = struct.unpack_from("!I", data, off + 4)
        names = ", ".join(n for b, n in ((1 << 31, "Router"), (1 << 30, "Solicited"), (1 << 29, "Override"))
                          if flags & b)
        fl = top.add(Item(f.icmpv6_na_flag, flags, off + 4, 4, f"Flags: 0x{flags:08x}" + (f", {names}" if names
                                                                                           else "")))
        for field, mask, name in f.ICMPV6_NA_FLAGS:
            v = flags & mask
            text = str(v) if mask == 0x1FFFFFFF else ("Set" if v else "Not set")
            fl.add(Item(field, v if mask == 0x1FFFFFFF else bool(v), off + 4, 4,
                        f"{_bits32(flags, mask)} = {name}: {text}"))
    else:
        raw = data[off + 4:off + 8]
        top.add(Item(f.icmpv6_reserved, raw, off + 4, 4, f"Reserved: {raw.hex()}"))
    p = off + 8
    if v6type in (135, 136):
        field = f.icmpv6_ns_target if v6type == 135 else f.icmpv6_na_target
        top.add(Item(field, _v6(data, p), p, 16, f"Target Address: {_v6(data, p)}"))
        p += 16
    for at, kind, n, mac in _options(data, p, end):
        text = mac.hex(":")
        shown = f"{manuf.resolved(mac) or text} ({text})"
        opt = top.add(Item(f.icmpv6_opt, None, at, n, f"ICMPv6 Option ({OPTION_NAMES[kind]} : {text})"))
        opt.add(Item(f.icmpv6_opt_type, kind, at, 1, f"Type: {OPTION_NAMES[kind]} ({kind})"))
        opt.add(Item(f.icmpv6_opt_length, n // 8, at + 1, 1, f"Length: {n // 8} ({n} bytes)"))
        opt.add(Item(f.icmpv6_opt_linkaddr, text, at + 2, 6, f"Link-layer address: {shown}"))
        opt.add(HiddenItem(f.icmpv6_opt_src_linkaddr if kind == 1 else f.icmpv6_opt_target_linkaddr, text, at + 2, 6))
    return True


def _bits32(value: int, mask: int) -> str:
    from .common import bits
    return bits(value, mask, 32)


def _mldv2(top: Item, data: bytes, off: int, end: int) -> bool:
    raw = data[off + 4:off + 6]
    (count,) = struct.unpack_from("!H", data, off + 6)
    top.add(Item(f.icmpv6_reserved, raw, off + 4, 2, f"Reserved: {raw.hex()}"))
    top.add(Item(f.icmpv6_mldr_nb_mcast_records, count, off + 6, 2, f"Number of Multicast Address Records: {count}"))
    p = off + 8
    for _ in range(count):
        if p + 20 > end:
            break
        rtype, aux, nsrc = struct.unpack_from("!BBH", data, p)
        n = 20 + 16 * nsrc + 4 * aux
        if p + n > end:
            break
        addr = _v6(data, p + 4)
        name = RECORD_TYPES.get(rtype, "Unknown")
        rec = top.add(Item(f.icmpv6_mldr_mar, None, p, n, f"Multicast Address Record {name}: {addr}"))
        rec.add(Item(f.icmpv6_mldr_mar_record_type, rtype, p, 1, f"Record Type: {name} ({rtype})"))
        rec.add(Item(f.icmpv6_mldr_mar_aux_data_len, aux, p + 1, 1, f"Aux Data Len: {aux}"))
        rec.add(Item(f.icmpv6_mldr_mar_nb_sources, nsrc, p + 2, 2, f"Number of Sources: {nsrc}"))
        rec.add(Item(f.icmpv6_mldr_mar_multicast_address, addr, p + 4, 16, f"Multicast Address: {addr}"))
        for i in range(nsrc):
            src = _v6(data, p + 20 + 16 * i)
            rec.add(Item(f.icmpv6_mldr_mar_source_address, src, p + 20 + 16 * i, 16, f"Source Address: {src}"))
        p += n
    return True
