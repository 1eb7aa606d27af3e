"""The frame layer: what the capture file says about a frame (tshark's packet-frame.c), with the times tshark
derives from the capture's other frames (capture/clock.py)."""
from __future__ import annotations

import time
from functools import lru_cache

from ...engine.template import Slot, SlotLayer, TemplateCache
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
    return _times(ts_ns)[0]


def _times(ts_ns: int) -> tuple[str, str]:
    """(frame.time, frame.time_epoch) of a time in nanoseconds (one division for both)."""
    secs, frac = divmod(ts_ns, 1_000_000_000)
    head, zone = _second(secs)
    return "%s.%09d %s" % (head, frac, zone), "%d.%09d" % (secs, frac) if secs >= 0 else ns_text(ts_ns)


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


# The frame layer is a template (engine.template) chosen by what shapes it: the link type, the pcapng interface and
# packet flags (static items); the times, number, lengths and protocols of each frame fill its slots.
TEMPLATES = TemplateCache()
_G = True        # generated
LONG_PROTOCOLS = 150    # a longer frame.protocols label may reach Wireshark's label buffer (240 bytes)


def frame_layer(d):
    fr = d.frame
    protocols = ":".join(d.protocols)      # a snapshot: the tree is built after the dissectors named theirs
    iface, flags = fr.iface, fr.flags
    if iface is None and flags is None:
        key = (fr.linktype, fr.interface)
    else:
        key = (fr.linktype, fr.interface, flags, None if iface is None else
               (iface.section, iface.name, iface.description))
    tpl = TEMPLATES.memo.get(key)
    if tpl is None:
        tpl = TEMPLATES.get(key, lambda: _frame_nodes(fr))
    length, caplen, ts_ns = fr.length, fr.caplen, fr.ts_ns
    rel, delta, shown = times_of(ts_ns, getattr(d, "times", None))
    delta_text = ns_text(delta)
    arrival, epoch = _times(ts_ns)
    vals = {"arrival": arrival, "ts": epoch, "delta": delta_text,
            "shown": delta_text if shown == delta else ns_text(shown), "rel": ns_text(rel), "number": fr.number,
            "len": length, "len8": length * 8, "caplen": caplen, "caplen8": caplen * 8, "protocols": protocols}
    label = (f"Frame {fr.number}: {length} bytes on wire ({length * 8} bits), {caplen} bytes captured "
             f"({caplen * 8} bits)")
    if iface is not None:
        label += f" on interface {_iface_name(iface)}, id {fr.interface}"
    if flags is not None:
        label += {1: " (inbound)", 2: " (outbound)"}.get(flags & 3, "")
    layer = SlotLayer("frame", f.frame, 0, caplen, label, tpl, vals)
    if len(protocols) > LONG_PROTOCOLS:
        layer.item       # materialised: -V cuts a label that long as Wireshark's label buffer does
    return layer


def _iface_name(iface) -> str:
    """The interface as tshark names it: its name, else its description, else "unknown"."""
    name = iface.name if iface.name is not None else iface.description
    return "unknown" if name is None else name


def _frame_nodes(fr) -> list:
    """The template of a frame layer of this shape (frame_layer's key)."""
    top = Item(None)
    _interface_items(top, fr)
    nodes = list(top.children or ())
    encap = WTAP_ENCAP.get(fr.linktype)
    if encap is not None:
        nodes.append(Item(f.frame_encap, encap[0], label=f"Encapsulation type: {encap[1]} ({encap[0]})"))
    # (the times are digits, the arrival time's zone a name: `plain`, no JSON escaping)
    nodes += [Slot(f.frame_time, "Arrival Time: %(arrival)s", "arrival", plain=True),
              NO_SHIFT,
              Slot(f.frame_time_epoch, "Epoch Time: %(ts)s seconds", "ts", plain=True),
              Slot(f.frame_time_delta, "[Time delta from previous captured frame: %(delta)s seconds]", "delta",
                   generated=_G, plain=True),
              Slot(f.frame_time_delta_displayed, "[Time delta from previous displayed frame: %(shown)s seconds]",
                   "shown", generated=_G, plain=True),
              Slot(f.frame_time_relative, "[Time since reference or first frame: %(rel)s seconds]", "rel",
                   generated=_G, plain=True),
              Slot(f.frame_number, "Frame Number: %(number)d", "number"),
              Slot(f.frame_len, "Frame Length: %(len)d bytes (%(len8)d bits)", "len"),
              Slot(f.frame_cap_len, "Capture Length: %(caplen)d bytes (%(caplen8)d bits)", "caplen"),
              NOT_MARKED, NOT_IGNORED]
    p2p = _p2p_item(fr.flags)
    if p2p is not None:
        nodes.append(p2p)
    nodes.append(Slot(f.frame_protocols, "[Protocols in frame: %(protocols)s]", "protocols", generated=_G,
                      plain=True))
    return nodes


def _interface_items(top: Item, fr) -> None:
    """pcapng: the section and the interface (named by its description when its IDB has no name, else
    "unknown"), and the packet flags with their bits."""
    add = top.add
    iface = fr.iface
    if iface is not None:
        name = _iface_name(iface)
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


def _p2p_item(flags) -> Item | None:
    """tshark's point-to-point direction, from epb_flags."""
    if flags is None or flags & 3 not in (1, 2):
        return None
    p2p = 1 if flags & 3 == 1 else 0
    return Item(f.frame_p2p_dir, p2p, label=f"Point-to-Point Direction: {'Received' if p2p else 'Sent'} ({p2p})")


# The frame items a run reading a few fields may ask for that the capture record alone gives, each made from the
# frame's decode as frame_layer makes it
LIGHT_ITEMS = {
    "frame.number": lambda d: Item(f.frame_number, d.frame.number, label=f"Frame Number: {d.frame.number}"),
    "frame.len": lambda d: Item(f.frame_len, d.frame.length,
                                label=f"Frame Length: {d.frame.length} bytes ({d.frame.length * 8} bits)"),
    "frame.cap_len": lambda d: Item(f.frame_cap_len, d.frame.caplen,
                                    label=f"Capture Length: {d.frame.caplen} bytes ({d.frame.caplen * 8} bits)"),
    "frame.protocols": lambda d: _gen(f.frame_protocols, ":".join(d.protocols),
                                      f"[Protocols in frame: {':'.join(d.protocols)}]"),
}
LIGHT_FIELDS = frozenset(LIGHT_ITEMS)     # what frame_fields_layer makes
_LIGHT_ASKED: dict = {}                   # the names a run reads -> the makers of its light frame items, or None


def light_makers(names: frozenset):
    """The makers of the frame items a run reading `names` needs (in the order frame_fields_layer adds them), or
    None when it reads a frame field the capture record alone does not give. Once per set of names: the same for
    every frame of a run."""
    makers = _LIGHT_ASKED.get(names, False)
    if makers is False:
        asked = {n for n in names if n == "frame" or n.startswith("frame.")}
        makers = tuple(LIGHT_ITEMS[n] for n in sorted(asked & LIGHT_FIELDS)) if asked <= LIGHT_FIELDS else None
        if len(_LIGHT_ASKED) >= 64:
            _LIGHT_ASKED.clear()
        _LIGHT_ASKED[names] = makers
    return makers


def frame_fields_layer(d, makers) -> Layer:
    """The frame layer with only the asked LIGHT_FIELDS under it (`makers`: light_makers), the same items
    frame_layer makes (a run reading a few fields, engine.demand: `-T fields -e frame.number`); the protocol item
    without its interface and direction suffixes, which only -V prints."""
    fr = d.frame
    top = proto_item(f.frame, 0, fr.caplen, f"Frame {fr.number}: {fr.length} bytes on wire ({fr.length * 8} bits),"
                                            f" {fr.caplen} bytes captured ({fr.caplen * 8} bits)")
    for make in makers:
        top.add(make(d))
    return Layer("frame", top)
