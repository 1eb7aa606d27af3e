"""ICMP and ICMPv6 layers (tshark's packet-icmp.c, packet-icmpv6.c): header, echo identifiers and request
matching, and the quoted datagram of an error message (its IPv4 and UDP headers nested in the ICMP item, the
rest a top-level data layer)."""
from __future__ import annotations

import struct

from ...engine.tree import SEQUENCE, WARN, ExpertInfo, FieldInfo, HiddenItem, Item, Layer
from .. import fields as f
from ..icmp import ERRORS_V6, ICMP_CODES, ICMP_TYPES, ICMPV6_TYPES, icmpv6_code_name
from .common import proto_item
from . import ndp
from .data import data_item, data_layer
from .ip import ip_layer, ipv6_layer
from .tcp_partial import quoted_tcp_item

LUA_FAKE = FieldInfo("_ws.lua.fake", "Wireshark Lua fake item", "none")    # (wslua's; tshark's tree shows it)


def _named(names: dict, v: int, v6: bool = False) -> str:
    """ICMP puts the number first ("3 (Port unreachable)"), ICMPv6 the name ("Echo (ping) request (128)")."""
    name = names.get(v)
    if not name:
        return str(v)
    return f"{name} ({v})" if v6 else f"{v} ({name})"


def icmp_layer(d, data: bytes, off: int, length: int) -> list[Layer]:
    info = d.icmp
    v6 = info is not None and info.v6
    field, name = (f.icmpv6, "Internet Control Message Protocol v6") if v6 else (f.icmp,
                                                                                   "Internet Control Message Protocol")
    top = proto_item(field, off, length, name)
    if info is None:
        return [Layer("icmpv6" if v6 else "icmp", top)]
    fs = f.icmpv6_fields if v6 else f.icmp_fields
    types = ICMPV6_TYPES if v6 else ICMP_TYPES
    top.add(Item(fs["type"], info.type, off, 1, f"Type: {_named(types, info.type, v6)}"))
    code = icmpv6_code_name(info.type, info.code) if v6 else ICMP_CODES.get(info.type, {}).get(info.code)
    top.add(Item(fs["code"], info.code, off + 1, 1, f"Code: {info.code} ({code})" if code else f"Code: {info.code}"))
    verdict = "[correct]" if info.good else f"incorrect, should be 0x{info.expected:04x}"
    top.add(Item(fs["checksum"], info.checksum, off + 2, 2, f"Checksum: 0x{info.checksum:04x} {verdict}"))
    top.add(Item(fs["checksum_status"], 1 if info.good else 0, off + 2, 0,
                 f"[Checksum Status: {'Good' if info.good else 'Bad'}]", generated=True))
    layers = [Layer("icmpv6" if v6 else "icmp", top)]
    if v6 and ndp.body(top, info.type, data, off, min(off + length, len(data))):
        pass                    # neighbour discovery, MLDv2
    elif info.ident is not None:
        _echo(top, info, fs, data, off, off + length, d.frame.number)
    elif info.quoted is not None or v6 and info.type in ERRORS_V6 and length >= 8 and len(data) >= off + 8:
        spare = data[off + 4:off + 8]
        if not v6 and info.type == 3 and info.code == 4:      # fragmentation needed: the next hop's MTU
            mtu = struct.unpack_from("!H", data, off + 6)[0]
            top.add(Item(f.icmp_unused, spare[:2], off + 4, 2, f"Unused: {spare[:2].hex()}"))
            top.add(Item(f.icmp_mtu, mtu, off + 6, 2, f"MTU of next hop: {mtu}"))
        elif v6 and info.type in (2, 4):                       # packet too big: the link's MTU; parameter problem:
            value = struct.unpack_from("!I", data, off + 4)[0]  # where in the quoted packet
            field = f.icmpv6_mtu if info.type == 2 else f.icmpv6_pointer
            top.add(Item(field, value, off + 4, 4, f"{field.name}: {value}"))
        else:
            top.add(Item(f.icmpv6_reserved if v6 else f.icmp_unused, spare, off + 4, 4,
                         f"{'Reserved' if v6 else 'Unused'}: {spare.hex()}"))
        if info.quoted is not None:     # (an ICMPv6 error quoting less than an IPv6 header: its fields only)
            layers.extend(_quoted(top, d, info, data, off + length))
    return layers


def _echo(top: Item, info, fs, data: bytes, off: int, end: int, frame_number: int) -> None:
    ident, seq = info.ident, info.seq
    swap = lambda v: ((v & 0xFF) << 8) | (v >> 8)      # noqa: E731
    if info.v6:
        top.add(Item(fs["ident"], ident, off + 4, 2, f"Identifier: 0x{ident:04x}"))
        top.add(Item(fs["seq"], seq, off + 6, 2, f"Sequence: {seq}"))
    else:
        top.add(Item(fs["ident"], ident, off + 4, 2, f"Identifier (BE): {ident} (0x{ident:04x})"))
        top.add(Item(fs["ident_le"], swap(ident), off + 4, 2, f"Identifier (LE): {swap(ident)} (0x{swap(ident):04x})"))
        top.add(Item(fs["seq"], seq, off + 6, 2, f"Sequence Number (BE): {seq} (0x{seq:04x})"))
        top.add(Item(fs["seq_le"], swap(seq), off + 6, 2, f"Sequence Number (LE): {swap(seq)} (0x{swap(seq):04x})"))
    # -2: a request's reply seen by the first pass, or none (items without bytes: offset 0, as PDML shows them)
    if info.response_in is not None:
        top.add(Item(fs["resp_in"], info.response_in, 0, 0, f"[{fs['resp_in'].name}: {info.response_in}]",
                     generated=True))
    elif info.unanswered is True:
        what = f"ICMPv6 request in frame {frame_number}" if info.v6 else "ICMP request"
        top.add(Item(fs["no_resp"], None, 0, 0, "[No response seen]", generated=True)).expert(
            ExpertInfo(f"{'icmpv6' if info.v6 else 'icmp'}.resp_not_found", SEQUENCE, WARN,
                       f"No response seen to {what}"))
    if info.request_in is not None:
        ms = info.resptime_ns / 1e6
        to, took = ("Response To", "Response Time") if info.v6 else ("Request frame", "Response time")
        top.add(Item(fs["resp_to"], info.request_in, off, 0, f"[{to}: {info.request_in}]", generated=True))
        top.add(Item(fs["resptime"], ms, off, 0, f"[{took}: {ms:.3f} ms]", generated=True))
    if end > off + 8:
        top.add(data_item(data[off + 8:end], off + 8))


def _quoted(top: Item, d, info, data: bytes, end: int) -> list[Layer]:
    q, n = info.quoted
    if n:
        ip = top.add(ipv6_layer(d, data, q, n).item if info.v6 else ip_layer(d, data, q, n, quoted=True).item)
        if not info.v6 and n >= 20 and 20 <= (data[q] & 15) * 4 <= n:
            ip.length = (data[q] & 15) * 4      # tshark's IP item spans its header once it has read it whole
    if info.quoted_tcp is not None:
        top.add(quoted_tcp_item(d, info, data, end))
        t = info.quoted_tcp[0]
        if end >= t + 20 and 20 <= (data[t + 12] >> 4) * 4 < end - t:
            for _ in range(info.lua_tries):     # wslua's item for each of the plugin's heuristics that said no
                top.add(HiddenItem(LUA_FAKE, None, t + (data[t + 12] >> 4) * 4, 0, "Wireshark Lua fake item"))
            top.add(data_item(data[t + (data[t + 12] >> 4) * 4:end], t + (data[t + 12] >> 4) * 4))
        return []
    if info.quoted_udp is None:
        return []
    u = info.quoted_udp[0]
    sport, dport = struct.unpack_from("!HH", data, u)
    udp = top.add(proto_item(f.udp, u, min(8, end - u), f"User Datagram Protocol, Src Port: {sport}, "
                                                          f"Dst Port: {dport}"))
    udp.add(Item(f.udp_srcport, sport, u, 2, f"Source Port: {sport}"))
    udp.add(Item(f.udp_dstport, dport, u + 2, 2, f"Destination Port: {dport}"))
    udp.add(HiddenItem(f.udp_port, sport, u, 2))
    udp.add(HiddenItem(f.udp_port, dport, u + 2, 2))
    if end < u + 6:             # tshark shows a cut quoted UDP header as far as it goes
        return []
    ulen = struct.unpack_from("!H", data, u + 4)[0]
    udp.add(Item(f.udp_length, ulen, u + 4, 2, f"Length: {ulen}"))
    if end < u + 8:
        return []
    csum = struct.unpack_from("!H", data, u + 6)[0]
    udp.add(Item(f.udp_checksum, csum, u + 6, 2, f"Checksum: 0x{csum:04x} [unverified]"))
    udp.add(Item(f.udp_checksum_status, 2, u + 6, 0, "[Checksum Status: Unverified]", generated=True))
    if info.udp_stream is not None:
        udp.add(Item(f.udp_stream, info.udp_stream, u + 8, 0, f"[Stream index: {info.udp_stream}]",
                     generated=True))
    if end > u + 8:
        payload = data[u + 8:end]
        udp.add(Item(f.udp_payload, payload, u + 8, len(payload),
                     f"UDP payload ({len(payload)} byte{'s' if len(payload) != 1 else ''})"))
        return [] if info.handed else [data_layer(payload, u + 8)]
    return []
