"""The frame layer: what the capture file says about a frame (tshark's packet-frame.c), with the times tshark
derives from the capture's other frames (capture/clock.py)."""
from __future__ import annotations

import time
from functools import lru_cache

from ...engine.tree import Item, Layer
from .. import fields as f
from ..clock import times_of
from .common import bits, ns_text, proto_item

# LINKTYPE -> tshark's frame.encap_type (a WTAP_ENCAP_* number, not the LINKTYPE) and its name
WTAP_ENCAP = {1: (1, "Ethernet"), 113: (25, "Linux cooked-mode capture v1"), 276: (210, "Linux cooked-mode capture v2"),
              0: (15, "NULL/Loopback"), 108: (174, "OpenBSD loopback"), 101: (7, "Raw IP"), 12: (7, "Raw IP"),
              14: (7, "Raw IP"), 228: (129, "Raw IPv4"), 229: (130, "Raw IPv6")}
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def arrival_text(ts_ns: int) -> str:
    """frame.time as tshark 4.0 prints it: local time with the zone's abbreviation, whatever -t says
    ("Nov 21, 2026 18:30:57.531900000 UTC"; to_str.c's "%s %2d, %d %02d:%02d:%02d")."""
    head, zone = _second(ts_ns // 1_000_000_000)
    return f"{head}.{ts_ns % 1_000_000_000:09d} {zone}"


@lru_cache(maxsize=256)          # frames come in time order: one second's text serves many
def _second(secs: int) -> tuple[str, str]:
    t = time.localtime(secs)
    return (f"{MONTHS[t.tm_mon - 1]} {t.tm_mday:2d}, {t.tm_year} {t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}",
            time.strftime("%Z", t))


def comments_layer(comments) -> Layer:
    """pcapng packet comments: tshark's pkt_comment layer before the frame, each comment with its expert."""
    from ...engine.tree import COMMENT, COMMENTS_GROUP, ExpertInfo
    top = proto_item(f.pkt_comment, 0, 0, "Packet comments")
    for text in comments:
        top.add(Item(f.frame_comment, text, label=text)).expert(
            ExpertInfo("frame.comment.expert", COMMENTS_GROUP, COMMENT, text))
    return Layer("pkt_comment", top)


def _gen(field, value, label: str) -> Item:
    return Item(field, value, 0, 0, label, generated=True)


# the same in every frame: shared items (items are never changed once built)
NO_SHIFT = _gen(f.frame_offset_shift, "0.000000000", "[Time shift for this packet: 0.000000000 seconds]")
NOT_MARKED = _gen(f.frame_marked, False, "[Frame is marked: False]")
NOT_IGNORED = _gen(f.frame_ignored, False, "[Frame is ignored: False]")


def frame_layer(d) -> Layer:
    fr = d.frame
    ts = ns_text(fr.ts_ns)
    rel, delta, delta_shown = (ns_text(n) for n in times_of(fr.ts_ns, getattr(d, "times", None)))
    top = proto_item(f.frame, 0, fr.caplen, f"Frame {fr.number}: {fr.length} bytes on wire ({fr.length * 8} bits),"
                                            f" {fr.caplen} bytes captured ({fr.caplen * 8} bits)")
    add = top.add
    iface = fr.iface
    if iface is not None:       # pcapng: the section and the interface, named by its description when its IDB
        name = iface.name if iface.name is not None else iface.description      # has no name, else "unknown"
        name = "unknown" if name is None else name
        top.label += f" on interface {name}, id {fr.interface}"
        add(Item(f.frame_section_number, iface.section, label=f"Section number: {iface.section}"))
        item = add(Item(f.frame_interface, fr.interface, label=f"Interface id: {fr.interface} ({name})"))
        item.add(Item(f.frame_interface_name, name, label=f"Interface name: {name}"))
        if iface.description is not None:
            item.add(Item(f.frame_interface_description, iface.description,
                          label=f"Interface description: {iface.description}"))
    elif fr.interface:
        add(Item(f.frame_interface, fr.interface, label=f"Interface id: {fr.interface}"))
    flags = fr.flags
    if flags is not None:
        top.label += {1: " (inbound)", 2: " (outbound)"}.get(flags & 3, "")
        item = add(Item(f.frame_packet_flags, flags, label=f"Packet flags: 0x{flags:08x}"))
        for field, mask, values in f.PACKET_FLAG_BITS:
            v = (flags & mask) >> (mask & -mask).bit_length() - 1
            if values is True:
                text = "Set" if v else "Not set"
            elif values is None:
                text = str(v)
            else:
                text = f"{values.get(v, 'Unknown')} ({f'0x{v:x}' if mask == 3 else v})"
            item.add(Item(field, bool(v) if values is True else v,
                          label=f"{bits(flags, mask, 32)} = {field.name}: {text}"))
    encap = WTAP_ENCAP.get(fr.linktype)
    if encap is not None:
        add(Item(f.frame_encap, encap[0], label=f"Encapsulation type: {encap[1]} ({encap[0]})"))
    arrival = arrival_text(fr.ts_ns)
    add(Item(f.frame_time, arrival, label=f"Arrival Time: {arrival}"))
    add(NO_SHIFT)
    add(Item(f.frame_time_epoch, ts, label=f"Epoch Time: {ts} seconds"))
    add(_gen(f.frame_time_delta, delta, f"[Time delta from previous captured frame: {delta} seconds]"))
    add(_gen(f.frame_time_delta_displayed, delta_shown,
             f"[Time delta from previous displayed frame: {delta_shown} seconds]"))
    add(_gen(f.frame_time_relative, rel, f"[Time since reference or first frame: {rel} seconds]"))
    add(Item(f.frame_number, fr.number, label=f"Frame Number: {fr.number}"))
    add(Item(f.frame_len, fr.length, label=f"Frame Length: {fr.length} bytes ({fr.length * 8} bits)"))
    add(Item(f.frame_cap_len, fr.caplen, label=f"Capture Length: {fr.caplen} bytes ({fr.caplen * 8} bits)"))
    add(NOT_MARKED)
    add(NOT_IGNORED)
    if flags is not None and flags & 3 in (1, 2):       # tshark's point-to-point direction from epb_flags
        p2p = 1 if flags & 3 == 1 else 0
        add(Item(f.frame_p2p_dir, p2p, label=f"Point-to-Point Direction: {'Received' if p2p else 'Sent'} ({p2p})"))
    protocols = ":".join(d.protocols)
    # A snapshot of d.protocols: build the tree after the dissectors have appended their names.
    add(_gen(f.frame_protocols, protocols, f"[Protocols in frame: {protocols}]"))
    return Layer("frame", top)


def _frame_items(d) -> dict:
    fr = d.frame if d is not None else None
    return {
        "frame.number": lambda: Item(f.frame_number, fr.number, label=f"Frame Number: {fr.number}"),
        "frame.len": lambda: Item(f.frame_len, fr.length,
                                  label=f"Frame Length: {fr.length} bytes ({fr.length * 8} bits)"),
        "frame.cap_len": lambda: Item(f.frame_cap_len, fr.caplen,
                                      label=f"Capture Length: {fr.caplen} bytes ({fr.caplen * 8} bits)"),
        "frame.protocols": lambda: _gen(f.frame_protocols, ":".join(d.protocols),
                                        f"[Protocols in frame: {':'.join(d.protocols)}]"),
    }


LIGHT_FIELDS = frozenset(_frame_items(None))     # what frame_fields_layer makes


def frame_fields_layer(d, names) -> Layer:
    """The frame layer with only the asked LIGHT_FIELDS under it, the same items frame_layer makes (a run reading
    a few fields, engine.demand: `-T fields -e frame.number`); the protocol item without its interface and
    direction suffixes, which only -V prints."""
    fr = d.frame
    top = proto_item(f.frame, 0, fr.caplen, f"Frame {fr.number}: {fr.length} bytes on wire ({fr.length * 8} bits),"
                                            f" {fr.caplen} bytes captured ({fr.caplen * 8} bits)")
    makers = _frame_items(d)
    for name in sorted(names & LIGHT_FIELDS):
        top.add(makers[name]())
    return Layer("frame", top)

