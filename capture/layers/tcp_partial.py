"""The TCP layers tshark shows without its usual tree, built by hand (no template: they are rare): a data offset
under 5 words (bogus), past the segment's end (short), options the snap length cut, and the segment an ICMP
error quotes."""
from __future__ import annotations

import struct

from ...engine.tree import HiddenItem, Item, Layer, TextItem
from .. import fields as f
from .common import ns_text, proto_item
from .tcp_header import COMPLETENESS, HEADER, flags_item, hdr_len_item, scale_factor_item, tcp_expert
from .tcp_options import option_items, options_item


def bogus_layer(d, data: bytes, off: int, hl: int, segment: int) -> Layer:
    """A data offset under 5 words: tshark 4.0 gives up after the header length (the expert goes on that item,
    from Decoded.problems), and the segment's length counts from the bogus offset."""
    sport, dport, seq = struct.unpack_from("!HHI", data, off)
    t = getattr(d, "tcp", None)
    shown = t.seq if t is not None else seq
    top = proto_item(f.tcp, off, 20,
                     f"Transmission Control Protocol, Src Port: {sport}, Dst Port: {dport}, Seq: {shown}")
    _port_items(top, off, sport, dport)
    if t is not None:
        _conversation_items(top, off, t)
    seglen = segment - hl * 4
    top.add(Item(f.tcp_len, seglen, off + 12, 1, f"[TCP Segment Len: {seglen}]", generated=True))
    if t is not None:
        top.add(Item(f.tcp_seq, t.seq, off + 4, 4, f"Sequence Number: {t.seq}    (relative sequence number)"))
    top.add(Item(f.tcp_seq_raw, seq, off + 4, 4, f"Sequence Number (raw): {seq}"))
    top.add(hdr_len_item(off, hl))
    return Layer("tcp", top)


def quoted_tcp_item(d, info, data: bytes, end: int) -> Item:
    """The TCP segment an ICMP error quotes (tshark's TCP with in_error_pkt): its ports and raw sequence number
    first; with a whole header, the rest as for a short segment (no length, analysis), its options and the
    payload's bytes. (In ICMPv6 a whole header's sequence number comes where a segment's does, named relative and
    raw: tshark's early one is for a quote in IPv4, which may stop after it.)"""
    off, _, sport, _, dport = info.quoted_tcp
    top = proto_item(f.tcp, off, min(end, off + 20) - off, f"Transmission Control Protocol, Src Port: {sport}, "
                                                           f"Dst Port: {dport}")
    _port_items(top, off, sport, dport)
    if end < off + 8:
        return top
    seq = struct.unpack_from("!I", data, off + 4)[0]
    t = info.tcp
    whole = t is not None and end >= off + 20
    if not (whole and info.v6):
        top.add(Item(f.tcp_seq, seq, off + 4, 4, f"Sequence Number: {seq}"))
    if not whole:
        return top
    _, _, _, ack, offflags, win, csum, urp = HEADER(data, off)
    hl, fl = offflags >> 12, offflags & 0x0FFF
    top.label += f", Seq: {seq}" + (f", Ack: {ack}" if fl & 0x10 else "")
    _conversation_items(top, off, t)
    if info.v6:
        top.add(Item(f.tcp_seq, seq, off + 4, 4, f"Sequence Number: {seq}    (relative sequence number)"))
        top.add(Item(f.tcp_seq_raw, seq, off + 4, 4, f"Sequence Number (raw): {seq}"))
    _ack_to_window(top, off, ack, hl, fl, sport, dport, win, t)
    top.add(Item(f.tcp_checksum, csum, off + 16, 2, f"Checksum: 0x{csum:04x} [unverified]"))
    top.add(Item(f.tcp_checksum_status, 2, off + 16, 0, "[Checksum Status: Unverified]", generated=True))
    top.add(Item(f.tcp_urgent_pointer, urp, off + 18, 2, f"Urgent Pointer: {urp}"))
    if hl > 5 and off + hl * 4 <= end:
        options_item(top, data, off + 20, off + hl * 4, bool(fl & 0x02))
        top.length = hl * 4                 # (tshark's TCP item spans the header with its options)
    _timestamps(top, off, t)
    if hl >= 5 and off + hl * 4 < end:
        n = end - off - hl * 4
        top.add(Item(f.tcp_payload, data[off + hl * 4:end], off + hl * 4, n,
                     f"TCP payload ({n} byte{'s' if n != 1 else ''})"))
    return top


def _port_items(top: Item, off: int, sport: int, dport: int) -> None:
    """Source and destination port and the two hidden tcp.port items (the layers no template makes)."""
    top.add(Item(f.tcp_srcport, sport, off, 2, f"Source Port: {sport}"))
    top.add(Item(f.tcp_dstport, dport, off + 2, 2, f"Destination Port: {dport}"))
    top.add(HiddenItem(f.tcp_port, sport, off, 2))
    top.add(HiddenItem(f.tcp_port, dport, off + 2, 2))


def _conversation_items(top: Item, off: int, t) -> None:
    """[Stream index] and [Conversation completeness], built by hand (the layers no template makes)."""
    c = t.completeness
    top.add(Item(f.tcp_stream, t.stream, off, 0, f"[Stream index: {t.stream}]", generated=True))
    top.add(Item(f.tcp_completeness, c, off, 0, f"[Conversation completeness: {COMPLETENESS.get(c, 'Incomplete')}"
                                                 f" ({c})]", generated=True))


def _ack_to_window(top: Item, off: int, ack: int, hl: int, fl: int, sport: int, dport: int, win: int, t) -> None:
    """The raw acknowledgment number to the window of a header tshark shows unanalysed (a short or quoted
    segment): the ACK-less note, header length, flags with their experts, the unscaled window."""
    rel = "    (relative ack number)" if fl & 0x10 else ""
    ack_item = top.add(Item(f.tcp_ack, ack, off + 8, 4, f"Acknowledgment Number: {ack}{rel}"))
    if ack and not fl & 0x10:
        tcp_expert(ack_item, "tcp.ack.nonzero")
    top.add(Item(f.tcp_ack_raw, ack, off + 8, 4, f"Acknowledgment number (raw): {ack}"))
    top.add(hdr_len_item(off, hl))
    server = (dport if fl & 0x10 == 0 else sport) if fl & 0x02 else None
    top.add(flags_item((server, t.fin_role) if t is not None else None, off, fl))
    if t is not None:
        _window_items(top, off, win, t.win_scale)
    else:
        top.add(Item(f.tcp_window_size_value, win, off + 14, 2, f"Window: {win}"))


def _window_items(top: Item, off: int, win: int, sc) -> None:
    """Window, [Calculated window size] (unscaled: tshark did not reach its scaling) and the scaling factor."""
    top.add(Item(f.tcp_window_size_value, win, off + 14, 2, f"Window: {win}"))
    top.add(Item(f.tcp_window_size, win, off + 14, 2, f"[Calculated window size: {win}]", generated=True))
    if sc != -3:
        top.add(scale_factor_item(off, sc))


def _timestamps(top: Item, off: int, t) -> None:
    stamps = top.add(TextItem(None, None, off, 0, "Timestamps", generated=True))
    stamps.add(Item(f.tcp_time_relative, ns_text(t.rel_ns), off, 0, f"[Time since first frame in this TCP stream: "
                                                                   f"{ns_text(t.rel_ns)} seconds]", generated=True))
    stamps.add(Item(f.tcp_time_delta, ns_text(t.delta_ns), off, 0, f"[Time since previous frame in this TCP stream: "
                                                                  f"{ns_text(t.delta_ns)} seconds]", generated=True))


def short_layer(d, data: bytes, off: int, length: int, short: str) -> Layer:
    """A data offset past the segment's end: tshark 4.0 says "Short segment" and shows the header with raw
    sequence numbers and window, its options as far as the bytes go (then an exception: [Malformed Packet]),
    and no length, analysis or payload."""
    sport, dport, seq, ack, offflags, win, csum, urp = HEADER(data, off)
    hl, fl, t = offflags >> 12, offflags & 0x0FFF, d.tcp
    top = proto_item(f.tcp, off, length, f"Transmission Control Protocol, Src Port: {sport}, Dst Port: {dport}, "
                                         f"Seq: {seq}" + (f", Ack: {ack}" if fl & 0x10 else ""))
    _port_items(top, off, sport, dport)
    if t is not None:
        _conversation_items(top, off, t)
    tcp_expert(top.add(TextItem(None, None, off, 0, f.TCP_EXPERTS["tcp.short_segment"][2])), "tcp.short_segment")
    top.add(Item(f.tcp_seq, seq, off + 4, 4, f"Sequence Number: {seq}    (relative sequence number)"))
    top.add(Item(f.tcp_seq_raw, seq, off + 4, 4, f"Sequence Number (raw): {seq}"))
    _ack_to_window(top, off, ack, hl, fl, sport, dport, win, t)
    top.add(Item(f.tcp_checksum, csum, off + 16, 2, f"Checksum: 0x{csum:04x} [unverified]"))
    top.add(Item(f.tcp_checksum_status, 2, off + 16, 0, "[Checksum Status: Unverified]", generated=True))
    top.add(Item(f.tcp_urgent_pointer, urp, off + 18, 2, f"Urgent Pointer: {urp}"))
    there = off + length
    if hl > 5:
        opts = data[off + 20:there]
        item = top.add(Item(f.tcp_options, opts, off + 20, len(opts), f"Options: ({hl * 4 - 20} bytes)"))
    if t is not None:
        _timestamps(top, off, t)
    if hl > 5:
        names: list[str] = []
        try:             # the walk ends at the first byte it cannot read (tshark's exception)
            option_items(item, data[:there], off + 20, off + hl * 4, bool(fl & 0x02), names)
        except (IndexError, struct.error):
            if short and names:       # an option cut inside its own bytes: not named
                names.pop()
        if names:
            item.label += ", " + ", ".join(names)
    return Layer("tcp", top)


def cut_layer(d, data: bytes, off: int, hl: int) -> Layer:
    """Options cut by the snap length: tshark 4.0 analyses the segment with its length on the wire and shows the
    header as usual, the options as far as they were captured, the times, and then (capture/layers/__init__.py)
    "[Packet size limited during capture: TCP truncated]": no analysis tree, no payload."""
    there = len(data) - off              # captured bytes of the header: from 4 (the ports) on
    sport, dport = struct.unpack_from("!HH", data, off)
    t = d.tcp
    if t is None:                        # cut before the window: tshark read the ports only
        top = proto_item(f.tcp, off, there, f"Transmission Control Protocol, Src Port: {sport}, Dst Port: {dport}")
        _port_items(top, off, sport, dport)
        return Layer("tcp", top)
    seq, ack, offflags, win = struct.unpack_from("!IIHH", data, off + 4)
    fl = offflags & 0x0FFF
    seglen = d.cut
    top = proto_item(f.tcp, off, hl, f"Transmission Control Protocol, Src Port: {sport}, Dst Port: {dport}, "
                                     f"Seq: {t.seq}" + (f", Ack: {t.ack}" if fl & 0x10 else "") + f", Len: {seglen}")
    _port_items(top, off, sport, dport)
    _conversation_items(top, off, t)
    top.add(Item(f.tcp_len, seglen, off, 0, f"[TCP Segment Len: {seglen}]", generated=True))
    top.add(Item(f.tcp_seq, t.seq, off + 4, 4, f"Sequence Number: {t.seq}    (relative sequence number)"))
    top.add(Item(f.tcp_seq_raw, seq, off + 4, 4, f"Sequence Number (raw): {seq}"))
    top.add(Item(f.tcp_nxtseq, t.nxtseq, off, 0, f"[Next Sequence Number: {t.nxtseq}    (relative sequence number)]",
                 generated=True))
    rel = "    (relative ack number)" if fl & 0x10 else ""
    ack_item = top.add(Item(f.tcp_ack, t.ack, off + 8, 4, f"Acknowledgment Number: {t.ack}{rel}"))
    if ack and not fl & 0x10:
        tcp_expert(ack_item, "tcp.ack.nonzero")
    top.add(Item(f.tcp_ack_raw, ack, off + 8, 4, f"Acknowledgment number (raw): {ack}"))
    top.add(hdr_len_item(off, hl // 4))
    top.add(flags_item((t.server_port if fl & 0x02 else None, t.fin_role), off, fl))
    top.add(Item(f.tcp_window_size_value, win, off + 14, 2, f"Window: {win}"))
    top.add(Item(f.tcp_window_size, t.window, off + 14, 2, f"[Calculated window size: {t.window}]", generated=True))
    sc = t.win_scale
    if sc != -3:
        top.add(scale_factor_item(off, sc))
    if there < 18:
        return Layer("tcp", top)
    csum = struct.unpack_from("!H", data, off + 16)[0]
    top.add(Item(f.tcp_checksum, csum, off + 16, 2, f"Checksum: 0x{csum:04x} [unverified]"))
    top.add(Item(f.tcp_checksum_status, 2, off + 16, 0, "[Checksum Status: Unverified]", generated=True))
    if there < 20:
        return Layer("tcp", top)
    urp = struct.unpack_from("!H", data, off + 18)[0]
    top.add(Item(f.tcp_urgent_pointer, urp, off + 18, 2, f"Urgent Pointer: {urp}"))
    if hl > 20:
        options_item(top, data, off + 20, off + hl, bool(fl & 0x02), mp=d.mptcp.options if d.mptcp else None)
    _timestamps(top, off, t)
    return Layer("tcp", top)
