"""The TCP header's items that the template (tcp_template.py) and the layers built by hand (tcp_partial.py)
share: header length, flags and their experts, the window scaling factor; TCP's expert infos."""
from __future__ import annotations

import struct

from ...engine import tree
from ...engine.tree import ExpertInfo, Item
from .. import fields as f
from .common import bits, set_text

HEADER = struct.Struct("!HHIIHHHH").unpack_from    # ports, seq, ack, data offset + flags, window, checksum, urgent
FLAG_SUMMARY = [(0x01, "FIN"), (0x02, "SYN"), (0x04, "RST"), (0x08, "PSH"), (0x10, "ACK"), (0x20, "URG"),
                (0x40, "ECE"), (0x80, "CWR"), (0x100, "AE"), (0xE00, "Reserved")]
FLAG_LETTERS = "RRRACEUAPRSF"



def tcp_expert(item: Item, abbrev: str, *args) -> None:
    group, severity, message = f.TCP_EXPERTS[abbrev]
    item.expert(ExpertInfo(abbrev, getattr(tree, group), getattr(tree, severity), message.format(*args)))


COMPLETENESS = {1: "Incomplete, SYN_SENT", 3: "Incomplete, CLIENT_ESTABLISHED", 7: "Incomplete, ESTABLISHED",
                15: "Incomplete, DATA", 31: "Complete, WITH_DATA", 47: "Complete, WITH_DATA",
                63: "Complete, WITH_DATA", 23: "Complete, NO_DATA", 39: "Complete, NO_DATA",
                55: "Complete, NO_DATA"}


def hdr_len_item(off: int, hl: int) -> Item:
    return Item(f.tcp_hdr_len, hl * 4, off + 12, 1, f"{bits(hl << 4, 0xF0, 8)} = Header Length: {hl * 4} bytes ({hl})")


def flags_item(t, off: int, fl: int) -> Item:
    """tcp.flags and its bits (static: they depend on the flags, and their experts on the conversation's
    server port and FIN role, all in the template's key)."""
    flags = Item(f.tcp_flags, fl, off + 12, 2, f"Flags: 0x{fl:03x} ({flag_names(fl)})")
    for fld, mask, _, _ in f.TCP_FLAG_BITS:
        # Wireshark trims a bit field's bytes to those its mask touches.
        o, n = (off + 12, 2) if mask & 0xF00 and mask & 0xFF else (off + 12, 1) if mask & 0xF00 else (off + 13, 1)
        bit = flags.add(Item(fld, bool(fl & mask), o, n, f"{bits(fl, mask, 12)} = {fld.name}: {set_text(fl & mask)}"))
        if t and fl & mask:
            _flag_expert(bit, mask, fl, t)
    s = "".join(FLAG_LETTERS[11 - i] if fl >> i & 1 else "\u00b7" for i in range(11, -1, -1))
    fstr = flags.add(Item(f.tcp_flags_str, s, off + 12, 2, f"[TCP Flags: {s}]", generated=True))
    if t and t[1]:
        tcp_expert(fstr, "tcp.connection.fin_" + t[1])
    return flags


def _flag_expert(bit: Item, mask: int, fl: int, t) -> None:
    if mask == 0x02:
        tcp_expert(bit, "tcp.connection.synack" if fl & 0x10 else "tcp.connection.syn", t[0])
    elif mask == 0x01:
        tcp_expert(bit, "tcp.connection.fin")
    elif mask == 0x04:
        tcp_expert(bit, "tcp.connection.rst")


def flag_names(fl: int) -> str:
    """The flags as the Info column and the tcp.flags label list them ("SYN, ACK"; "<None>")."""
    names = FLAG_NAMES.get(fl)
    if names is None:
        names = FLAG_NAMES[fl] = ", ".join(n for b, n in FLAG_SUMMARY if fl & b) or "<None>"
    return names


FLAG_NAMES: dict[int, str] = {}      # 4,096 values at most


def scale_factor_item(off: int, sc: int) -> Item:
    """[Window size scaling factor]: 2 ** shift, or tshark's -1 (unknown) and -2 (no window scaling used)."""
    text = {-1: "-1 (unknown)", -2: "-2 (no window scaling used)"}.get(sc, str(1 << sc) if sc >= 0 else str(sc))
    return Item(f.tcp_window_size_scalefactor, (1 << sc) if sc >= 0 else sc, off + 14, 2,
                f"[Window size scaling factor: {text}]", generated=True)
