"""TCP options (packet-tcp.c's tcp_dissect_options): the options item, each option's items and label, the values
of MSS, window scale, SACK (with D-SACK) and timestamps, and the experts of a length tshark rejects. MPTCP's
option (kind 30) is mptcp.py's; where options lie without building items is tcp_option_spans.py."""
from __future__ import annotations

import struct

from ...engine.tree import Item, TextItem
from .. import fields as f
from . import mptcp as mptcp_option
from .tcp_header import tcp_expert

OPTION_KINDS = {0: "End of Option List", 1: "No-Operation", 2: "Maximum Segment Size", 3: "Window Scale",
                4: "SACK Permitted", 5: "SACK", 8: "Time Stamp Option"}
OPTION_LENGTHS = {2: 4, 3: 3, 4: 2, 8: 10}      # the options of a fixed length tshark checks


def _option_values(o: Item, data: bytes, p: int, kind: int, n: int) -> None:
    """The decoded values of the options tshark decodes (MSS, window scale, timestamps, an unknown one's bytes)."""
    if kind == 2:
        v = struct.unpack_from("!H", data, p + 2)[0]
        o.add(Item(f.tcp_mss_val, v, p + 2, 2, f"MSS Value: {v}"))
    elif kind == 3:
        shift = o.add(Item(f.tcp_wscale_shift, data[p + 2], p + 2, 1, f"Shift count: {data[p + 2]}"))
        if data[p + 2] > 14:
            tcp_expert(shift, "tcp.options.wscale.shift.invalid")
        m = 1 << min(data[p + 2], 14)
        o.add(Item(f.tcp_wscale_multiplier, m, p + 2, 1, f"[Multiplier: {m}]", generated=True))
    elif kind == 8:             # one value at a time: the snap length may cut the second (struct.error)
        tsval = struct.unpack_from("!I", data, p + 2)[0]
        o.add(Item(f.tcp_tsval, tsval, p + 2, 4, f"Timestamp value: {tsval}"))
        tsecr = struct.unpack_from("!I", data, p + 6)[0]
        o.add(Item(f.tcp_tsecr, tsecr, p + 6, 4, f"Timestamp echo reply: {tsecr}"))
    elif kind not in f.TCP_OPTIONS and n > 2:
        payload = data[p + 2:p + n]
        o.add(Item(f.tcp_option_unknown_payload, payload, p + 2, n - 2, f"Payload: {payload.hex()}"))


def _sack_values(o: Item, data: bytes, p: int, n: int, sack: tuple) -> bool:
    """A SACK option's edges, relative to the acknowledged side's base (dissect_tcpopt_sack), its count, and
    the D-SACK edges when its first block lies at or below the acknowledgement number or inside the second;
    False when tshark's D-SACK read runs past the option (an exception)."""
    base, ack = sack
    q, left, blocks = p + 2, n - 2, []
    while left > 0:
        if left < 4:
            tcp_expert(o.add(TextItem(None, None, q, left, f.TCP_EXPERTS["tcp.suboption_malformed"][2])),
                        "tcp.suboption_malformed")
            break
        le = (struct.unpack_from("!I", data, q)[0] - base) & 0xFFFFFFFF
        o.add(Item(f.tcp_sack_le, le, q, 4, f"left edge = {le} (relative)"))
        left -= 4
        if left < 4:
            tcp_expert(o.add(TextItem(None, None, q, left, f.TCP_EXPERTS["tcp.suboption_malformed"][2])),
                        "tcp.suboption_malformed")
            break
        re = (struct.unpack_from("!I", data, q + 4)[0] - base) & 0xFFFFFFFF
        left -= 4
        o.add(Item(f.tcp_sack_re, re, q + 4, 4, f"right edge = {re} (relative)"))
        blocks.append((le, re))
        o.label += f" {le}-{re}"
        q += 8
    o.add(Item(f.tcp_sack_count, len(blocks), p, 0, f"[TCP SACK Count: {len(blocks)}]", generated=True))
    first = blocks[0][1] if blocks else 0
    if not (not _seq_gt(first, ack) or len(blocks) > 1 and _seq_gt(first, blocks[1][0])
            and not _seq_gt(first, blocks[1][1])):
        return True
    for i, (fld, name) in enumerate(((f.tcp_dsack_le, "Left"), (f.tcp_dsack_re, "Right"))):
        if n - 2 < 4 * (i + 1):
            return False
        v = (struct.unpack_from("!I", data, p + 2 + 4 * i)[0] - base) & 0xFFFFFFFF
        o.add(Item(fld, v, p + 2 + 4 * i, 4, f"[D-SACK {name} Edge = {v} (relative)]", generated=True))
    tcp_expert(o.add(TextItem(None, None, p + 2, 8, "D-SACK Sequence")), "tcp.options.sack.dsack")
    return True


def _seq_gt(a: int, b: int) -> bool:
    return 0 < ((a - b) & 0xFFFFFFFF) < 0x80000000


def _option_label(data: bytes, p: int, kind: int, valid: bool) -> str:
    """"TCP Option - <name>", with its value when the option has its own length."""
    name = f.TCP_OPTIONS[kind][1] if kind in f.TCP_OPTIONS else "Unknown"
    if valid and kind == 2:
        return f"TCP Option - {name}: {struct.unpack_from('!H', data, p + 2)[0]} bytes"
    if valid and kind == 3:
        return f"TCP Option - {name}: {data[p + 2]} (multiply by {1 << min(data[p + 2], 14)})"
    if valid and kind == 8:
        return f"TCP Option - {name}: TSval {{}}, TSecr {{}}".format(*struct.unpack_from("!II", data, p + 2))
    return f"TCP Option - {name}"


class _CutBeforeOption(IndexError):
    """The option walk reached bytes the snap length cut before an option's kind or length (nothing shown)."""


def _bad_option(item: Item, p: int, n: int, message: str) -> None:
    """tshark's text item for an option whose length is unusable, with the expert on it (the walk stops)."""
    tcp_expert(item.add(TextItem(None, None, p, n, message)), "tcp.option.len.invalid", message)


def options_item(top: Item, data: bytes, off: int, end: int, syn: bool = False, sack=None, mp=None) -> None:
    """The options item, as tshark 4.0's tcp_dissect_options makes it (option_items), and after a walk that
    reached the end, the expert of a SYN without MSS."""
    opts = data[off:end]
    # (its length: the bytes captured, when the snap length cut the options; the label keeps the header's count)
    item = top.add(Item(f.tcp_options, opts, off, min(end, max(len(data), off)) - off, ""))
    names: list[str] = []
    try:
        _, whole = option_items(item, data, off, end, syn, names, sack=sack, mp=mp)
    except _CutBeforeOption:    # the snap length cut the options before an option began
        whole = False
    except (IndexError, struct.error):  # tshark's exception in an option (capture.network: the layer ends there)
        names.pop()             # (the option's name is appended after its own dissection)
        whole = False
    if whole and syn and f.TCP_OPTIONS[2][1] not in names:
        tcp_expert(item, "tcp.options.mss.absent")
    item.label = f"Options: ({end - off} bytes), " + ", ".join(names) if names else f"Options: ({end - off} bytes)"


def option_items(item: Item, data: bytes, p: int, end: int, syn: bool,
                  names: list[str] | None = None, sack=None, mp=None) -> tuple[list[str], bool]:
    """Each option's item under `item`; (the names of the options shown, whether the walk reached the end). An
    option whose length byte is missing, too short or runs past the header ends the walk with an expert; a
    fixed-length option of another length is shown without its values, with an expert on its length; after an
    End of Option List, non-zero padding ends it too. `mp`: the derived values of each MPTCP option, in order
    (capture.mptcp_analysis.FrameMptcp.options)."""
    names = [] if names is None else names
    nops = 0
    mptcp_seen = 0
    while p < end:
        if p >= len(data) or data[p] > 1 and len(data) <= p + 1 < end:
            raise _CutBeforeOption("an option's kind or length byte past the captured bytes")
        kind = data[p]
        if kind == 1:       # tshark counts NOPs in a row within 32-bit words: one on a word boundary restarts it
            nops = nops + 1 if nops == 0 or (p - item.offset) % 4 else 0
        if kind in (0, 1):
            name = f.TCP_OPTIONS[kind][1]
            if nops == 4:
                tcp_expert(item, "tcp.nop")
            o = item.add(Item(f.tcp_option[kind], data[p:p + 1], p, 1, f"TCP Option - {name}"))
            o.add(Item(f.tcp_option_kind, kind, p, 1, f"Kind: {OPTION_KINDS[kind]} ({kind})"))
            names.append(name)
            p += 1
            if kind == 0 and any(data[p:end]):
                tcp_expert(item.add(TextItem(None, None, p, end - p, "Non-zero header padding")),
                            "tcp.non_zero_bytes_after_eol")
                return names, False
            continue
        name = f.TCP_OPTIONS[kind][1] if kind in f.TCP_OPTIONS else f"Unknown (0x{kind:02x})"
        n = data[p + 1] if p + 1 < end else None
        s = "s" if n != 1 else ""
        if n is None:
            _bad_option(item, p, 1, f"{name} (length byte past end of options)")
        elif n < 2:
            _bad_option(item, p, 2, f"{name} (with too-short option length = {n} byte{s})")
        elif p + n > end:
            _bad_option(item, p, end - p - 2,
                        f"{name} (option length = {n} byte{s} says option goes past end of options)")
        if n is None or n < 2 or p + n > end:
            return names, False
        if kind == 30:
            names.append("MPTCP")
            vals = mp[mptcp_seen] if mp and mptcp_seen < len(mp) else None
            mptcp_seen += 1
            mptcp_option.option_item(item, data, p, n, vals)     # an IndexError: tshark's exception in it
            p += n
            continue
        names.append(name)
        want = OPTION_LENGTHS.get(kind, n)
        # its item runs to the option's end or the last byte captured (tshark adds it with length -1)
        o = item.add(Item(f.tcp_option.get(kind, f.tcp_option_unknown), data[p:p + n], p, min(n, len(data) - p),
                          _option_label(data, p, kind, n == want and p + n <= len(data))))
        if kind == 2 and not syn:
            tcp_expert(o, "tcp.options.mss.present")
        o.add(Item(f.tcp_option_kind, kind, p, 1, f"Kind: {OPTION_KINDS.get(kind, 'Unknown')} ({kind})"))
        length = o.add(Item(f.tcp_option_len, n, p + 1, 1, f"Length: {n}"))
        if n != want:
            tcp_expert(length, "tcp.option.len.invalid", f"option length should be {want}")
        elif kind == 5:
            if not _sack_values(o, data, p, n, sack or (0, 0)):
                raise IndexError("a D-SACK edge past the option")    # tshark's exception (network.sack_throws)
        else:
            _option_values(o, data, p, kind, n)
        p += n
    return names, True
