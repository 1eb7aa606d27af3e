"""The frame layer: what the capture file says about a frame (tshark's packet-frame.c)."""
from __future__ import annotations

from ...engine.tree import Item, Layer
from .. import fields as f
from .common import proto_item


# LINKTYPE -> tshark's frame.encap_type (a WTAP_ENCAP_* number, not the LINKTYPE) and its name
WTAP_ENCAP = {1: (1, "Ethernet"), 113: (25, "Linux cooked-mode capture v1"), 276: (210, "Linux cooked-mode capture v2"),
              0: (15, "NULL/Loopback"), 108: (174, "OpenBSD loopback"), 101: (7, "Raw IP"), 12: (7, "Raw IP"),
              14: (7, "Raw IP"), 228: (129, "Raw IPv4"), 229: (130, "Raw IPv6")}


def frame_layer(d) -> Layer:
    fr = d.frame
    ts = f"{fr.ts_ns // 1_000_000_000}.{fr.ts_ns % 1_000_000_000:09d}"
    top = proto_item(f.frame, 0, fr.caplen, f"Frame {fr.number}: {fr.length} bytes on wire ({fr.length * 8} bits),"
                                        f" {fr.caplen} bytes captured ({fr.caplen * 8} bits)")
    if fr.interface:
        top.add(Item(f.frame_interface, fr.interface, label=f"Interface id: {fr.interface}"))
    encap = WTAP_ENCAP.get(fr.linktype)
    if encap is not None:
        top.add(Item(f.frame_encap, encap[0], label=f"Encapsulation type: {encap[1]} ({encap[0]})"))
    top.add(Item(f.frame_time_epoch, ts, label=f"Epoch Time: {ts} seconds"))
    top.add(Item(f.frame_number, fr.number, label=f"Frame Number: {fr.number}"))
    top.add(Item(f.frame_len, fr.length, label=f"Frame Length: {fr.length} bytes ({fr.length * 8} bits)"))
    top.add(Item(f.frame_cap_len, fr.caplen, label=f"Capture Length: {fr.caplen} bytes ({fr.caplen * 8} bits)"))
    protocols = ":".join(d.protocols)
    # A snapshot of d.protocols: build the tree after the dissectors have appended their names.
    top.add(Item(f.frame_protocols, protocols, label=f"[Protocols in frame: {protocols}]", generated=True))
    return Layer("frame", top)
