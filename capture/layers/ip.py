"""IPv4 and IPv6 with its extension headers (tshark's packet-ip.c, packet-ipv6.c)."""
from __future__ import annotations

import struct

from ...engine.template import Slot, SlotLayer, TemplateCache
from ...engine.tree import ERROR, PROTOCOL, ExpertInfo, HiddenItem, Item, Layer
from .. import fields as f
from ..network import ttl_note, v4_cached, v4_text, v6_text
from .. import manuf
from .common import bits, frozen, full, mac, named, proto_item, set_text
from .eth import mac_shown
from .ipopt import options_item
from .ipv6_routing import routing_items

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


DSCP_SHORT_V6 = {**DSCP_SHORT, 46: "EF PHB"}     # packet-ipv6.c's traffic class says "EF PHB"


def _ds_text(ds: int, short: dict = DSCP_SHORT) -> str:
    return f"DSCP: {short.get(ds >> 2, 'Unknown')}, ECN: {ECN_SHORT[ds & 3]}"


def _ds_children(item: Item, value: int, ds: int, off: int, n: int, mask_shift: int, width: int,
                 fields=(f.ip_dscp, f.ip_ecn)) -> None:
    item.add(Item(fields[0], ds >> 2, off, n, f"{bits(value, 0xFC << mask_shift, width)} = Differentiated Services"
                                               f" Codepoint: {DSCP_LONG.get(ds >> 2, 'Unknown')} ({ds >> 2})"))
    item.add(Item(fields[1], ds & 3, off, n, f"{bits(value, 0x03 << mask_shift, width)} = Explicit Congestion"
                                             f" Notification: {ECN_LONG[ds & 3]} ({ds & 3})"))


def _ds_items(ds: int, off: int):
    holder = Item(None)
    _ds_children(holder, ds, ds, off + 1, 1, 0, 8)
    return holder.children


def _flag_items(hi: int, off: int):
    return [Item(fld, bool(hi & b), off + 6, 1, f"{bits(hi, b, 8)} = {name}: {set_text(hi & b)}")
            for fld, b, name in ((f.ip_flags_rb, 0x80, "Reserved bit"), (f.ip_flags_df, 0x40, "Don't fragment"),
                                 (f.ip_flags_mf, 0x20, "More fragments"))]


# A well-formed IPv4 header is a template (engine.template) chosen by what shapes its tree and rarely changes
# within a conversation: its offset, version and header length, DS field, flags and fragment offset, protocol
# and options. The total length, identification, TTL, checksum and addresses fill its slots.
TEMPLATES = TemplateCache()
_V4 = struct.Struct("!BBHHHBBH4s4s").unpack_from


def ip_layer(d, data: bytes, off: int, length: int, quoted: bool | str = False):
    """The IPv4 layer. `quoted`: the header an ICMP error quotes, shown as far as its bytes go (tshark stops at
    the first field past the end, with no malformed expert: a quoted datagram is expected to be cut), with the
    experts of a bogus header or total length on their items; or "cut": a header the snap length cut
    (capture.network.cut), shown the same way."""
    if not quoted and length >= 20 and len(data) >= off + 20:
        vihl, ds, tlen, ident, frag, ttl, proto, csum, src, dst = _V4(data, off)
        hl = (vihl & 15) * 4
        if hl >= 20 and tlen >= hl:
            opts = data[off + 20:off + hl] if hl > 20 and len(data) >= off + hl else None
            key = (off, vihl, ds, frag, proto, opts)
            tpl = TEMPLATES.memo.get(key)
            if tpl is None:
                tpl = TEMPLATES.get(key, lambda: _ip_nodes(data, off, vihl, ds, frag, proto, opts))
            src, dst = v4_cached(src) or v4_text(src), v4_cached(dst) or v4_text(dst)
            return SlotLayer("ip", f.ip, off, length, f"Internet Protocol Version 4, Src: {src}, Dst: {dst}", tpl,
                             {"tlen": tlen, "id": ident, "ttl": ttl, "csum": csum, "src": src, "dst": dst})
    return _ip_items(d, data, off, length, quoted)


def _ip_nodes(data: bytes, off: int, vihl: int, ds: int, frag: int, proto: int, opts: bytes | None) -> list:
    """The template of a well-formed IPv4 header of this shape (ip_layer's key): what _ip_items makes, the
    values that change from datagram to datagram as slots (the options are in the key: a static item)."""
    top = Item(None)
    _ip_head(top, vihl, ds, off)
    nodes = list(top.children)
    top.children = []
    _ip_middle(top, off, 0, frag, 0, proto, 0)
    ident, flags, fo, ttl, proto_item_, csum, status = top.children
    nodes += [Slot(f.ip_len, "Total Length: %(tlen)d", "tlen", 2, 2),
              Slot(f.ip_id, "Identification: 0x%(id)04x (%(id)d)", "id", 4, 2),
              flags, fo,
              Slot(f.ip_ttl, "Time to Live: %(ttl)d", "ttl", 8, 1),
              proto_item_,
              Slot(f.ip_checksum, "Header Checksum: 0x%(csum)04x [validation disabled]", "csum", 10, 2),
              status]
    src_f, dst_f, addr_f, src_host, dst_host, host = f.ip_addresses
    for field, host_f, key, at, name in ((src_f, src_host, "src", 12, "Source"), (dst_f, dst_host, "dst", 16,
                                                                                  "Destination")):
        nodes += [Slot(field, f"{name} Address: %({key})s", key, at, 4, plain=True),
                  Slot(addr_f, None, key, at, 4, cls=HiddenItem, plain=True),
                  Slot(host_f, None, key, at, 4, cls=HiddenItem, plain=True),
                  Slot(host, None, key, at, 4, cls=HiddenItem, plain=True)]
    if opts is not None:
        nodes.append(options_item(data, off + 20, off + 20 + len(opts)))
    return nodes


def _ip_head(top: Item, vihl: int, ds: int, off: int) -> None:
    """Version, header length and the DS field."""
    hl = vihl & 15
    top.add(Item(f.ip_version, vihl >> 4, off, 1, f"{bits(vihl, 0xF0, 8)} = Version: {vihl >> 4}"))
    top.add(Item(f.ip_hdr_len, hl * 4, off, 1, f"{bits(vihl, 0x0F, 8)} = Header Length: {hl * 4} bytes ({hl})"))
    dsf = top.add(Item(f.ip_dsfield, ds, off + 1, 1, f"Differentiated Services Field: 0x{ds:02x} ({_ds_text(ds)})"))
    dsf.children = frozen(("ip.ds", ds, off), lambda: _ds_items(ds, off))


def _ip_items(d, data: bytes, off: int, length: int, quoted: bool) -> Layer:
    """The IPv4 layer as plain items: a quoted, cut or bogus header (ip_layer)."""
    if quoted:
        n = min(length, len(data) - off)
    elif not full(data, off, length, 20):
        return Layer("ip", proto_item(f.ip, off, length, "Internet Protocol Version 4"))
    else:
        n = 20
    top = proto_item(f.ip, off, length, "Internet Protocol Version 4")
    layer = Layer("ip", top)
    vihl = data[off]
    hl = vihl & 15
    top.add(Item(f.ip_version, vihl >> 4, off, 1, f"{bits(vihl, 0xF0, 8)} = Version: {vihl >> 4}"))
    hl_item = top.add(Item(f.ip_hdr_len, hl * 4, off, 1,
                           f"{bits(vihl, 0x0F, 8)} = Header Length: {hl * 4} bytes ({hl})"))
    if hl < 5:                  # tshark stops at a bogus header length (the expert goes on this item)
        if quoted:
            hl_item.expert(ExpertInfo("ip.bogus_header_length", PROTOCOL, ERROR,
                                      f"Bogus IP header length ({hl * 4}, must be at least 20)"))
        return layer
    if n < 2:
        return layer
    ds = data[off + 1]
    dsf = top.add(Item(f.ip_dsfield, ds, off + 1, 1, f"Differentiated Services Field: 0x{ds:02x} ({_ds_text(ds)})"))
    dsf.children = frozen(("ip.ds", ds, off), lambda: _ds_items(ds, off))
    if n < 4:
        return layer
    (tlen,) = struct.unpack_from("!H", data, off + 2)
    if tlen == 0:               # tshark: a zero length is TCP segmentation offload, the rest of the packet
        reported = length if quoted else d.frame.length - off
        top.add(Item(f.ip_len, reported, off + 2, 2, f'Total Length: {reported} bytes (reported as 0, presumed to '
                                                     f'be because of "TCP segmentation offload" (TSO))',
                     generated=True))
    elif tlen < hl * 4:         # tshark stops at a bogus total length too
        item = top.add(Item(f.ip_len, tlen, off + 2, 2,
                            f"Total Length: {tlen} bytes (bogus, less than header length {hl * 4})"))
        if quoted:
            item.expert(ExpertInfo("ip.bogus_ip_length", PROTOCOL, ERROR, "Bogus IP length"))
        return layer
    else:
        top.add(Item(f.ip_len, tlen, off + 2, 2, f"Total Length: {tlen}"))
    if quoted and n < 20:
        return _ip_cut(top, data, off, n)
    _, _, _, ident, frag, ttl, proto, csum, src, dst_raw = struct.unpack_from("!BBHHHBBH4s4s", data, off)
    src, dst = v4_text(src), v4_text(dst_raw)
    _ip_middle(top, off, ident, frag, ttl, proto, csum)
    if quoted and n < hl * 4:   # the destination comes after a look for a source route in the options
        top.label += f", Src: {src}"
        top.children.extend(_addresses_of(f.ip_addresses, src, dst, off + 12, 4)[:4])
        return layer
    note = ttl_note(ttl, dst_raw, proto) if quoted is True else None    # (a decoded header: capture.network)
    if note is not None:
        top.find("ip.ttl").expert(note)
    top.label += f", Src: {src}, Dst: {dst}"
    _addresses(top, f.ip_addresses, src, dst, off + 12, 4)
    if hl > 5 and len(data) >= off + hl * 4:
        top.add(options_item(data, off + 20, off + hl * 4))
    return layer


def _ip_middle(top: Item, off: int, ident: int, frag: int, ttl: int, proto: int, csum: int, n: int = 20) -> None:
    """Identification to the header checksum (as far as `n` bytes go)."""
    if n < 6:
        return
    top.add(Item(f.ip_id, ident, off + 4, 2, f"Identification: 0x{ident:04x} ({ident})"))
    if n < 8:
        return
    fl = frag >> 13
    names = ", ".join(n for b, n in ((4, "Reserved bit"), (2, "Don't fragment"), (1, "More fragments")) if fl & b)
    flags = top.add(Item(f.ip_flags, fl, off + 6, 1,
                         f"{bits(frag >> 8, 0xE0, 8)} = Flags: 0x{fl:x}" + (f", {names}" if names else "")))
    flags.children = frozen(("ip.flags", frag >> 8, off), lambda: _flag_items(frag >> 8, off))
    fo = frag & 0x1FFF
    top.add(Item(f.ip_frag_offset, fo, off + 6, 2, f"{bits(frag, 0x1FFF, 16)} = Fragment Offset: {fo * 8}"))
    if n < 9:
        return
    top.add(Item(f.ip_ttl, ttl, off + 8, 1, f"Time to Live: {ttl}"))
    if n < 10:
        return
    top.add(Item(f.ip_proto, proto, off + 9, 1, f"Protocol: {named(f.IP_PROTOS, proto)}"))
    if n < 12:
        return
    top.add(Item(f.ip_checksum, csum, off + 10, 2, f"Header Checksum: 0x{csum:04x} [validation disabled]"))
    top.add(Item(f.ip_checksum_status, 2, off + 10, 0, "[Header checksum status: Unverified]", generated=True))


def _ip_cut(top: Item, data: bytes, off: int, n: int) -> Layer:
    """A quoted IPv4 header of fewer than 20 bytes: its fields as far as they go."""
    head = data[off:off + n] + bytes(20 - n)
    _, _, _, ident, frag, ttl, proto, csum, src, _ = struct.unpack("!BBHHHBBH4s4s", head)
    _ip_middle(top, off, ident, frag, ttl, proto, csum, n)
    if n >= 16:
        src = v4_text(src)
        top.label += f", Src: {src}"
        top.children.extend(_addresses_of(f.ip_addresses, src, "", off + 12, 4)[:4])
    return Layer("ip", top)


IP_VERSION_NOTE = '[This field makes the filter match on "ip.version == 6" possible]'


def ipv6_layer(d, data: bytes, off: int, length: int, cut: str | None = None) -> Layer:
    """The IPv6 header; `cut`: the snap length cut it (capture.network.cut), its fields as far as they go (each
    once it is whole, as tshark reads them)."""
    n = min(length, len(data) - off) if cut else 40
    if not cut and not full(data, off, length, 40):
        return Layer("ipv6", proto_item(f.ipv6, off, length, "Internet Protocol Version 6"))
    vtf, plen, nh, hlim, src_raw, dst_raw = struct.unpack("!IHBB16s16s", data[off:off + n].ljust(40, b"\0"))
    src, dst = v6_text(src_raw), v6_text(dst_raw)
    top = proto_item(f.ipv6, off, 40, f"Internet Protocol Version 6, Src: {src}, Dst: {dst}" if n >= 40 else
                     "Internet Protocol Version 6")
    if n < 40:
        return Layer("ipv6", _ipv6_fields(top, off, n, vtf, plen, nh, hlim, src, dst))
    return Layer("ipv6", _ipv6_fields(top, off, 40, vtf, plen, nh, hlim, src, dst, src_raw, dst_raw))


def _ipv6_fields(top: Item, off: int, n: int, vtf: int, plen: int, nh: int, hlim: int, src: str, dst: str,
                 src_raw: bytes = b"", dst_raw: bytes = b"") -> Item:
    """The fixed header's fields that `n` captured bytes hold."""
    if n < 1:
        return top
    top.add(Item(f.ipv6_version, vtf >> 28, off, 1, f"{bits(vtf >> 24, 0xF0, 8)} = Version: {vtf >> 28}"))
    # tshark's hidden "ip.version" beside it, with the text packet-ipv6.c appends
    top.add(HiddenItem(f.ipv6_ip_version, vtf >> 28, off, 1, f"{bits(vtf >> 24, 0xF0, 8)} = Version: {vtf >> 28}"
                                                             f" {IP_VERSION_NOTE}"))
    if n < 4:
        return top
    tc = (vtf >> 20) & 0xFF
    tci = top.add(Item(f.ipv6_tclass, tc, off, 4, f"{bits(vtf, 0x0FF00000, 32)} = Traffic Class: 0x{tc:02x}"
                                                   f" ({_ds_text(tc, DSCP_SHORT_V6)})"))
    _ds_children(tci, vtf, tc, off, 4, 20, 32, (f.ipv6_dscp, f.ipv6_ecn))
    flow = vtf & 0xFFFFF
    top.add(Item(f.ipv6_flow, flow, off + 1, 3, f"{bits(vtf & 0xFFFFFF, 0x0FFFFF, 24)} = Flow Label: 0x{flow:05x}"))
    for need, item in ((7, lambda: Item(f.ipv6_plen, plen, off + 4, 2, f"Payload Length: {plen}")),
                       (7, lambda: Item(f.ipv6_nxt, nh, off + 6, 1, f"Next Header: {named(f.IP_PROTOS, nh)}")),
                       (8, lambda: Item(f.ipv6_hlim, hlim, off + 7, 1, f"Hop Limit: {hlim}"))):
        if n < need:
            return top
        top.add(item())
    if n >= 40:
        _addresses(top, f.ipv6_addresses, src, dst, off + 8, 16)
        top.children.extend(_slaac_macs(src_raw, dst_raw, off + 8))
    elif n >= 24:
        top.children.extend(_addresses_of(f.ipv6_addresses, src, "", off + 8, 16)[:4])
    return top


def ipv6_ext_item(data: bytes, off: int, length: int, kind: int, declared: int | str | None = None) -> Item | None:
    """An extension header: a child of the IPv6 item in tshark -V (but its own name in frame.protocols).
    `declared`: the length its header claims, when that runs past the payload (the options are read up to the
    payload's end; capture.network records the exception); or "cut": the snap length cut it after `length`
    bytes (capture.network.cut), its fields as far as tshark reads them (None: not one)."""
    field = f.ipv6_ext[kind]
    item = proto_item(field, off, length, field.name)
    if declared == "cut":
        return _cut_ext_item(item, data, off, length, kind)
    if kind == 44:
        if len(data) >= off + 8:
            nxt, fo, ident = struct.unpack_from("!BxHI", data, off)
            item.add(Item(f.ipv6_fraghdr_nxt, nxt, off, 1, f"Next header: {named(f.IP_PROTOS, nxt)}"))
            item.add(Item(f.ipv6_fraghdr_reserved_octet, data[off + 1], off + 1, 1,
                          f"Reserved octet: 0x{data[off + 1]:02x}"))
            item.add(Item(f.ipv6_fraghdr_offset, fo >> 3, off + 2, 2,
                          f"{bits(fo, 0xFFF8, 16)} = Offset: {fo >> 3} ({(fo >> 3) * 8} bytes)"))
            item.add(Item(f.ipv6_fraghdr_reserved_bits, (fo >> 1) & 3, off + 2, 2,
                          f"{bits(fo, 0x0006, 16)} = Reserved bits: {(fo >> 1) & 3}"))
            item.add(Item(f.ipv6_fraghdr_more, bool(fo & 1), off + 2, 2,
                          f"{bits(fo, 1, 16)} = More Fragments: {'Yes' if fo & 1 else 'No'}"))
            item.add(Item(f.ipv6_fraghdr_ident, ident, off + 4, 4, f"Identification: 0x{ident:08x}"))
    elif len(data) >= off + 2:
        nxt_f, len_f, oct_f = f.ipv6_ext_fields[kind]
        size = length if declared is None else declared
        item.add(Item(nxt_f, data[off], off, 1, f"Next Header: {named(f.IP_PROTOS, data[off])}"))
        item.add(Item(len_f, data[off + 1], off + 1, 1, f"Length: {data[off + 1]}"))
        item.add(Item(oct_f, size, off + 1, 1, f"[Length: {size} bytes]", generated=True))     # (on the length byte)
        if kind in (0, 60):
            _options(item, data, off + 2, off + size, off + length if declared is not None else len(data))
        elif kind == 43:
            routing_items(item, data, off, size)
    return item


def _cut_ext_item(item: Item, data: bytes, off: int, n: int, kind: int) -> Item | None:
    """An extension header cut after `n` bytes: a fragment header shows nothing, options headers their next
    header and length once both are there, then the options whose type and length were captured (a value once
    it is whole); a routing header its next header, its length, and its type's fields from 8 bytes on."""
    if kind == 44 or n < (0 if kind == 43 else 2):
        return None
    if n < 1:
        return item
    nxt_f, len_f, oct_f = f.ipv6_ext_fields[kind]
    item.add(Item(nxt_f, data[off], off, 1, f"Next Header: {named(f.IP_PROTOS, data[off])}"))
    if n < 2:
        return item
    size = (data[off + 1] + 2) * 4 if kind == 51 else (data[off + 1] + 1) * 8
    item.add(Item(len_f, data[off + 1], off + 1, 1, f"Length: {data[off + 1]}"))
    item.add(Item(oct_f, size, off + 1, 1, f"[Length: {size} bytes]", generated=True))
    if kind in (0, 60):
        _options(item, data, off + 2, off + size, off + n, cut=True)
    elif kind == 43:
        routing_items(item, data, off, size, off + n)
    return item


IPV6_OPTIONS = {0: "Pad1", 1: "PadN", 5: "Router Alert",
                **{k: f"Experimental (0x{k:02X})" for k in (0x1E, 0x3E, 0x5E, 0x7E, 0x9E, 0xBE, 0xDE, 0xFE)}}
OPT_ACTIONS = ["Skip and continue", "Discard", "Discard and send ICMP Parameter Problem",
               "Discard and send ICMP if not multicast"]


def _options(item: Item, data: bytes, p: int, end: int, limit: int, cut: bool = False) -> None:
    """Hop-by-hop / destination options (RFC 8200 4.2): type (action, may-change, rest bits), length, value. As
    tshark 4.0, an option is read to its own end even past the header's; the list stops where the bytes do (the
    decoder records that exception). `cut`: the snap length cut them at `limit` (an option whose length byte was
    not captured is not shown)."""
    while p < end and p < limit:
        kind = data[p]
        if cut and kind and p + 1 >= limit:
            return
        name = IPV6_OPTIONS.get(kind, "Unknown IPv6 Option")
        n = 1 if kind == 0 else 2 + data[p + 1] if p + 1 < limit else 2
        opt = item.add(Item(f.ipv6_opt, None, p, min(n, limit - p), name))
        t = opt.add(Item(f.ipv6_opt_type, kind, p, 1, f"Type: {name} (0x{kind:02x})"))
        if kind == 0:           # tshark: no type bits for Pad1, just its (empty) pad item
            opt.add(Item(f.ipv6_opt_pad1, None, p, 1, "Pad1"))
            p += 1
            continue
        t.add(Item(f.ipv6_opt_action, kind >> 6, p, 1, f"{bits(kind, 0xC0, 8)} = Action: {OPT_ACTIONS[kind >> 6]}"
                                                       f" ({kind >> 6})"))
        t.add(Item(f.ipv6_opt_change, bool(kind & 0x20), p, 1,
                   f"{bits(kind, 0x20, 8)} = May Change: {'Yes' if kind & 0x20 else 'No'}"))
        t.add(Item(f.ipv6_opt_rest, kind & 0x1F, p, 1, f"{bits(kind, 0x1F, 8)} = Low-Order Bits: 0x{kind & 0x1F:02x}"))
        if p + 1 >= limit:
            return
        opt.add(Item(f.ipv6_opt_length, n - 2, p + 1, 1, f"Length: {n - 2}"))
        if p + n > limit:
            return
        value = data[p + 2:p + n]
        if kind == 5 and n == 4:
            (ra,) = struct.unpack("!H", value)
            opt.add(Item(f.ipv6_opt_router_alert, ra, p + 2, 2,
                         f"Router Alert: {named(f.ipv6_opt_router_alert.values, ra)}"))
        else:
            field, title = (f.ipv6_opt_padn, "PadN") if kind == 1 else \
                (f.ipv6_opt_experimental, "Experimental Option") if kind in IPV6_OPTIONS else \
                (f.ipv6_opt_unknown, "Unknown Option Payload")
            opt.add(Item(field, value, p + 2, n - 2, f"{title}: {value.hex() or '<none>'}"))
        p += n


def _addresses(top: Item, fields, src: str, dst: str, off: int, n: int) -> None:
    """Source and destination, each followed by tshark's hidden any-side address and host name fields (name
    resolution of network addresses is off by default: the host is the address). The same for every packet of a
    conversation: built once, shared."""
    top.children.extend(_addresses_of(fields, src, dst, off, n))


def _addresses_of(fields, src: str, dst: str, off: int, n: int) -> tuple:
    return frozen(("ip.addrs", fields[0].abbrev, src, dst, off), lambda: _address_items(fields, src, dst, off, n))


def _address_items(fields, src: str, dst: str, off: int, n: int) -> list:
    top = Item(None)
    src_f, dst_f, addr_f, src_host, dst_host, host = fields
    for field, host_f, value, at, name in ((src_f, src_host, src, off, "Source"), (dst_f, dst_host, dst, off + n,
                                                                                   "Destination")):
        top.add(Item(field, value, at, n, f"{name} Address: {value}"))
        top.add(HiddenItem(addr_f, value, at, n))
        top.add(HiddenItem(host_f, value, at, n))
        top.add(HiddenItem(host, value, at, n))
    return top.children


def _slaac_macs(src: bytes, dst: bytes, off: int) -> tuple:
    """tshark's items for an address whose interface identifier is a SLAAC (modified EUI-64) one made from a
    universal MAC address (ff:fe in its middle, the universal/local bit set): that MAC address (the bit flipped
    back), the source's then the destination's, each followed by its hidden either-side twin. The same for every
    packet of a conversation: shared."""
    if not _slaac(src) and not _slaac(dst):
        return ()
    return frozen(("ipv6.slaac", src[8:], dst[8:], off, manuf.RESOLVE["mac"]), lambda: _slaac_items(src, dst, off))


def _slaac(address: bytes) -> bool:
    return address[11:13] == b"\xff\xfe" and address[8] & 0x02 != 0


def _slaac_items(src: bytes, dst: bytes, off: int) -> tuple:
    either = f.ipv6_slaac_macs[2]
    items = []
    for field, raw, at, name in ((f.ipv6_slaac_macs[0], src, off, "Source"),
                                 (f.ipv6_slaac_macs[1], dst, off + 16, "Destination")):
        if _slaac(raw):
            eui = bytes((raw[8] ^ 0x02,)) + raw[9:11] + raw[13:16]
            shown = mac_shown(eui)
            items.append(Item(field, mac(eui), at + 8, 8, f"[{name} SLAAC MAC: {shown}]", generated=True))
            items.append(HiddenItem(either, mac(eui), at + 8, 8, f"SLAAC MAC: {shown}"))
    return tuple(items)


LABEL_MOST = 239         # the characters of an ASCII label Wireshark's label buffer keeps (ITEM_LABEL_LENGTH 240)


def fragments_item(pieces, whole: bytes, source: int, v6: bool = False) -> Item:
    """reassemble.c's tree of a datagram reassembled from fragments, under the IPv4 (or IPv6) layer of the frame
    that completed it: its items span their bytes in the reassembled buffer (data source `source`)."""
    fragments, fragment, count, length, data, _ = f.ipv6_reassembly if v6 else f.ip_reassembly
    name, n = "IPv6" if v6 else "IPv4", len(whole)
    parts = ", ".join(f"#{frame}({size})" for frame, _, size in pieces)
    # reassemble.c appends each piece to the label: Wireshark's label buffer cuts it, with no "[truncated]" mark
    # (the brackets of a generated item come on top)
    text = f"{len(pieces)} {name} Fragments ({n} bytes): {parts}"[:LABEL_MOST]
    top = Item(fragments, None if v6 else whole, 0, n, text, True, source)
    for frame, at, size in pieces:
        top.add(Item(fragment, frame, at, size, f"[Frame: {frame}, payload: {at}-{at + size - 1} ({size} bytes)]",
                     True, source))
    top.add(Item(count, len(pieces), 0, 0, f"[Fragment count: {len(pieces)}]", True, source))
    top.add(Item(length, n, 0, 0, f"[Reassembled {name} length: {n}]", True, source))
    top.add(Item(data, whole, 0, n, None, True, source))     # tshark's bytes label (cut)
    return top


def reassembled_in_item(frame: int, v6: bool = False, at: int = 0) -> Item:
    """-2: a fragment of a datagram a later frame completes (IPv6: at its fragment header, as PDML places it)."""
    return Item((f.ipv6_reassembly if v6 else f.ip_reassembly)[5], frame, at, 0,
                f"[Reassembled {'IPv6' if v6 else 'IPv4'} in frame: {frame}]", True)
