"""UDP (tshark's packet-udp.c)."""
from __future__ import annotations

import struct

from ...engine.tree import HiddenItem, Item, Layer, TextItem
from .. import fields as f
from .common import frozen, full, ns_text, proto_item


def info(d) -> str:
    """UDP's Info column: the ports and length, with tshark's notes for a bad length, a zero checksum, and a
    header the snap length cut short."""
    head = f"{d.sport} \u2192 {d.dport}"
    span = d.spans[-1] if d.spans else None
    if span is not None and span[0] == "udp" and span[-1] == "cut":         # (network.udp)
        ulen = f" Len={struct.unpack_from('!H', d.transport_data(), span[1] + 4)[0] - 8}" if span[2] >= 6 else ""
        return f"{head}{ulen}[Packet size limited during capture]"
    if span is not None and span[0] == "udp" and span[-1] == "bad":         # past the IP length (network._short_udp)
        if span[2] >= 6:
            ulen = struct.unpack_from('!H', d.transport_data(), span[1] + 4)[0]
            return f"{head} [BAD UDP LENGTH {ulen} > IP PAYLOAD LENGTH] Len={ulen - 8}[Malformed Packet]"
        return f"{head}[Malformed Packet]"
    problems = d.problems
    if problems:
        bad = next((p.message for _, p in problems if p.abbrev == "udp.length.bad"), None)
        if bad is not None:             # tshark: the claimed length, and the note in capitals
            ulen = struct.unpack_from("!H", d.transport_data(), d.payload_offset - 4)[0]
            claim = bad.split("value ", 1)[-1].upper()
            tail = f" Len={ulen - 8}" if " > " in bad else ""
            return f"{head} [BAD UDP LENGTH {claim}]{tail}"
        if any(p.abbrev == "udp.checksum.zero" for _, p in problems):
            return f"{head} Len={len(d.payload) + d.cut} [ILLEGAL CHECKSUM (0)]"
    return f"{head} Len={len(d.payload) + d.cut}" + ("[Packet size limited during capture]" if d.truncated else "")


def udp_layer(d, data: bytes, off: int, length: int, cut: str | None = None) -> Layer:
    if cut is not None:
        return _cut_layer(data, off, length, cut == "bad")
    if not full(data, off, length, 8):
        return Layer("udp", proto_item(f.udp, off, length, "User Datagram Protocol"))
    sport, dport, ulen, csum = struct.unpack_from("!HHHH", data, off)
    top = proto_item(f.udp, off, 8, f"User Datagram Protocol, Src Port: {sport}, Dst Port: {dport}")
    top.children = list(frozen(("udp.ports", sport, dport, off), lambda: _ports(sport, dport, off))) \
        if d.defragmented is None else _ports(sport, dport, off)     # (a reassembled one's items get its source)
    room = len(d.payload) + 8 if d.transport == "udp" and d.payload is not None else ulen
    bogus = (f" (bogus, must be >= 8)" if ulen < 8 else f" (bogus, payload length {room})" if ulen > room else "") \
        if any(info.abbrev == "udp.length.bad" for _, info in d.problems) else ""
    top.add(Item(f.udp_length, ulen, off + 4, 2, f"Length: {ulen}{bogus}"))
    if bogus and ulen < 8:
        return Layer("udp", top)
    if csum:
        top.add(Item(f.udp_checksum, csum, off + 6, 2, f"Checksum: 0x{csum:04x} [unverified]"))
        top.add(Item(f.udp_checksum_status, 2, off + 6, 0, "[Checksum Status: Unverified]", generated=True))
    elif d.network == "ipv6":    # illegal over IPv6 (the expert, from the decode, goes first)
        c = top.add(Item(f.udp_checksum, csum, off + 6, 2, "Checksum: 0x0000 [zero-value illegal]"))
        c.children = [Item(f.udp_checksum_status, 4, off + 6, 0, "[Checksum Status: Illegal]", generated=True)]
    else:
        c = top.add(Item(f.udp_checksum, csum, off + 6, 2, "Checksum: 0x0000 [zero-value ignored]"))
        c.add(Item(f.udp_checksum_status, 3, off + 6, 0, "[Checksum Status: Not present]", generated=True))
    conv = getattr(d, "udp", None)
    if conv is not None:
        _stream(top, conv, off, bool(d.payload or d.cut))
    if d.transport == "udp" and d.payload:
        top.add(Item(f.udp_payload, d.payload, d.payload_offset, len(d.payload),
                     f"UDP payload ({len(d.payload)} byte{'s' if len(d.payload) != 1 else ''})"))
    return Layer("udp", top)


def _ports(sport: int, dport: int, off: int) -> list:
    """Source and destination port, and tshark's hidden udp.port twice: the same in every datagram of a
    conversation (built once, shared)."""
    return [Item(f.udp_srcport, sport, off, 2, f"Source Port: {sport}"),
            Item(f.udp_dstport, dport, off + 2, 2, f"Destination Port: {dport}"),
            HiddenItem(f.udp_port, sport, off, 2), HiddenItem(f.udp_port, dport, off + 2, 2)]


def _stream(top: Item, conv: tuple, off: int, payload: bool) -> None:
    """udp.stream, and (when there is a payload to hand on, as tshark 4.0) the conversation's timestamps."""
    stream, rel, delta = conv
    # added at the payload's offset (udp.c: offset 8 of its tvb), the timestamps at the header's
    top.add(Item(f.udp_stream, stream, off + 8, 0, f"[Stream index: {stream}]", generated=True))
    if payload:
        ts = top.add(TextItem(None, None, off, 0, "Timestamps", generated=True))
        rel, delta = ns_text(rel), ns_text(delta)
        ts.add(Item(f.udp_time_relative, rel, off, 0, f"[Time since first frame: {rel} seconds]", generated=True))
        ts.add(Item(f.udp_time_delta, delta, off, 0, f"[Time since previous frame: {delta} seconds]",
                    generated=True))


def _cut_layer(data: bytes, off: int, there: int, bad: bool = False) -> Layer:
    """A header the snap length cut (4 to 7 bytes captured): the ports, and the length when it is there
    (capture/layers/__init__.py adds tshark's "[Packet size limited during capture: UDP truncated]"). `bad`: the
    header runs past the IP length instead (capture.network._short_udp), its length judged against what is left."""
    sport, dport = struct.unpack_from("!HH", data, off)
    top = proto_item(f.udp, off, there, f"User Datagram Protocol, Src Port: {sport}, Dst Port: {dport}")
    top.children = _ports(sport, dport, off)
    if there >= 6:
        ulen = struct.unpack_from("!H", data, off + 4)[0]
        bogus = f" (bogus, payload length {there})" if bad and ulen > there else ""
        top.add(Item(f.udp_length, ulen, off + 4, 2, f"Length: {ulen}{bogus}"))
    return Layer("udp", top)
