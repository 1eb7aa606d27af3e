"""ICMPv6 neighbour discovery and MLDv2 bodies (tshark's packet-icmpv6.c): router and neighbour solicitations,
neighbour advertisements with their link-layer address options, multicast listener reports v2."""
from __future__ import annotations

import struct

from ...engine.tree import HiddenItem, Item
from .. import fields as f
from .. import manuf
from ..network import v6_text

ND_TYPES = (133, 134, 135, 136)
OPTION_NAMES = {1: "Source link-layer address", 2: "Target link-layer address", 3: "Prefix information", 5: "MTU",
                14: "Nonce"}
HEADER = {133: 8, 134: 16, 135: 24, 136: 24}     # the fixed part before the options
RECORD_TYPES = {1: "Mode is include", 2: "Mode is exclude", 3: "Changed to include", 4: "Changed to exclude",
                5: "Allow new sources", 6: "Block old sources"}


def _v6(data: bytes, at: int) -> str:
    return v6_text(data[at:at + 16])


def _options(data: bytes, p: int, end: int):
    """(offset, type, length in bytes, link-layer address or None) of each option decoded here (link-layer
    addresses, prefix information, MTU, nonce); stops at any other, or one of another length."""
    while p + 8 <= end:
        kind, n = data[p], data[p + 1] * 8
        if kind not in OPTION_NAMES or (n < 8 if kind == 14 else n != (32 if kind == 3 else 8)) or p + n > end:
            return
        yield p, kind, n, data[p + 2:p + 8] if kind in (1, 2) else None
        p += n


def info(v6type: int, data: bytes, off: int, end: int) -> str | None:
    """The Info column of an NDP message (None: another type)."""
    lladdr = {kind: mac.hex(":") for _, kind, _, mac in _options(data, off + HEADER.get(v6type, 8), end)
              if mac is not None}
    if v6type == 133 and off + 8 <= end:
        return "Router Solicitation" + (f" from {lladdr[1]}" if 1 in lladdr else "")
    if v6type == 134 and off + 16 <= end:
        return "Router Advertisement" + (f" from {lladdr[1]}" if 1 in lladdr else "")
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
    if v6type not in ND_TYPES or off + HEADER[v6type] > end:
        return False
    if v6type == 134:
        _ra(top, data, off)
    elif v6type == 136:
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
    if v6type == 134:
        p = off + 16
    for at, kind, n, mac in _options(data, p, end):
        if mac is None:
            _option(top, data, at, kind, n)
            continue
        text = mac.hex(":")
        shown = f"{manuf.resolved(mac) or text} ({text})"
        opt = top.add(Item(f.icmpv6_opt, None, at, n, f"ICMPv6 Option ({OPTION_NAMES[kind]} : {text})"))
        opt.add(Item(f.icmpv6_opt_type, kind, at, 1, f"Type: {OPTION_NAMES[kind]} ({kind})"))
        opt.add(Item(f.icmpv6_opt_length, n // 8, at + 1, 1, f"Length: {n // 8} ({n} bytes)"))
        opt.add(Item(f.icmpv6_opt_linkaddr, text, at + 2, 6, f"Link-layer address: {shown}"))
        either = f.icmpv6_opt_src_linkaddr if kind == 1 else f.icmpv6_opt_target_linkaddr
        opt.add(HiddenItem(either, text, at + 2, 6, f"{either.name}: {shown}"))
    return True


def _ra(top: Item, data: bytes, off: int) -> None:
    """A router advertisement's fixed part (dissect_icmp6 ND_ROUTER_ADVERT)."""
    hop, flags, life, reach, retrans = struct.unpack_from("!BBHII", data, off + 4)
    top.add(Item(f.icmpv6_ra_cur_hop_limit, hop, off + 4, 1, f"Cur hop limit: {hop}"))
    top.add(_bitmask(f.icmpv6_ra_flag, "Flags", f.ICMPV6_RA_FLAGS, flags, off + 5))
    top.add(Item(f.icmpv6_ra_router_lifetime, life, off + 6, 2, f"Router lifetime (s): {life}"))
    top.add(Item(f.icmpv6_ra_reachable_time, reach, off + 8, 4, f"Reachable time (ms): {reach}"))
    top.add(Item(f.icmpv6_ra_retrans_timer, retrans, off + 12, 4, f"Retrans timer (ms): {retrans}"))


def _bitmask(field, name: str, bits, value: int, at: int) -> Item:
    """An 8-bit flags item as proto_tree_add_bitmask makes it: the label lists the set flags and the named
    values; a line per bit field."""
    from .common import bits as bit_text
    shown = []
    for fld, mask in bits:
        v = value & mask
        if fld.ftype == "bool" and v:
            shown.append(fld.name)
        elif fld.values is not None:
            shown.append(f"{fld.name}: {fld.values.get(v >> (mask & -mask).bit_length() - 1, 'Unknown')}")
    item = Item(field, value, at, 1, f"{name}: 0x{value:02x}" + "".join(", " + s for s in shown))
    for fld, mask in bits:
        v = value & mask
        shift = (mask & -mask).bit_length() - 1
        if fld.ftype == "bool":
            text, shown_value = ("Set" if v else "Not set"), bool(v)
        else:
            text, shown_value = (f"{fld.values.get(v >> shift, 'Unknown')} ({v >> shift})" if fld.values
                                 else str(v >> shift)), v >> shift
        item.add(Item(fld, shown_value, at, 1, f"{bit_text(value, mask, 8)} = {fld.name}: {text}"))
    return item


def _option(top: Item, data: bytes, at: int, kind: int, n: int) -> None:
    """A prefix information, MTU or nonce option (dissect_icmpv6_nd_opt)."""
    if kind == 14:
        nonce = data[at + 2:at + n]
        label, kids = "Nonce", [Item(f.icmpv6_opt_nonce, nonce, at + 2, n - 2, f"Nonce: {nonce.hex()}")]
    elif kind == 5:
        (mtu,) = struct.unpack_from("!I", data, at + 4)
        label, kids = f"MTU : {mtu}", [Item(f.icmpv6_opt_reserved, None, at + 2, 2, "Reserved"),
                                       Item(f.icmpv6_opt_mtu, mtu, at + 4, 4, f"MTU: {mtu}")]
    else:
        plen, flags, valid, preferred = struct.unpack_from("!BBII", data, at + 2)
        prefix = _v6(data, at + 16)
        life = lambda v: f"Infinity ({v})" if v == 0xFFFFFFFF else str(v)     # noqa: E731 (unique_infinity)
        label, kids = f"Prefix information : {prefix}/{plen}", [
            Item(f.icmpv6_opt_prefix_length, plen, at + 2, 1, f"Prefix Length: {plen}"),
            _bitmask(f.icmpv6_opt_prefix_flag, "Flag", f.ICMPV6_PREFIX_FLAGS, flags, at + 3),
            Item(f.icmpv6_opt_prefix_valid_lifetime, valid, at + 4, 4, f"Valid Lifetime: {life(valid)}"),
            Item(f.icmpv6_opt_prefix_preferred_lifetime, preferred, at + 8, 4,
                 f"Preferred Lifetime: {life(preferred)}"),
            Item(f.icmpv6_opt_reserved, None, at + 12, 4, "Reserved"),
            Item(f.icmpv6_opt_prefix, prefix, at + 16, 16, f"Prefix: {prefix}")]
    opt = top.add(Item(f.icmpv6_opt, None, at, n, f"ICMPv6 Option ({label})"))
    opt.add(Item(f.icmpv6_opt_type, kind, at, 1, f"Type: {OPTION_NAMES[kind]} ({kind})"))
    opt.add(Item(f.icmpv6_opt_length, n // 8, at + 1, 1, f"Length: {n // 8} ({n} bytes)"))
    for kid in kids:
        opt.add(kid)


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
