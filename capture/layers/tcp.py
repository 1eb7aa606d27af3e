"""TCP (tshark's packet-tcp.c): header, options, conversation analysis, reassembled-PDU summary."""
from __future__ import annotations

import struct

from ...engine import tree
from ...engine.tree import ExpertInfo, HiddenItem, Item, Layer, TextItem
from .. import fields as f
from .common import bits, full, ns_text, proto_item, set_text

FLAG_SUMMARY = [(0x01, "FIN"), (0x02, "SYN"), (0x04, "RST"), (0x08, "PSH"), (0x10, "ACK"), (0x20, "URG"),
                (0x40, "ECE"), (0x80, "CWR"), (0x100, "AE"), (0xE00, "Reserved")]
FLAG_LETTERS = "RRRACEUAPRSF"
OPTION_KINDS = {0: "End of Option List", 1: "No-Operation", 2: "Maximum Segment Size", 3: "Window Scale",
                4: "SACK Permitted", 5: "SACK", 8: "Time Stamp Option"}


def _option_values(o: Item, data: bytes, p: int, kind: int, n: int) -> None:
    """The decoded values of the options tshark decodes (MSS, window scale, timestamps)."""
    if kind == 2 and n == 4:
        v = struct.unpack_from("!H", data, p + 2)[0]
        o.add(Item(f.tcp_mss_val, v, p + 2, 2, f"MSS Value: {v}"))
    elif kind == 3 and n == 3:
        o.add(Item(f.tcp_wscale_shift, data[p + 2], p + 2, 1, f"Shift count: {data[p + 2]}"))
        m = 1 << min(data[p + 2], 14)
        o.add(Item(f.tcp_wscale_multiplier, m, p + 2, 1, f"[Multiplier: {m}]", generated=True))
    elif kind == 8 and n == 10:
        tsval, tsecr = struct.unpack_from("!II", data, p + 2)
        o.add(Item(f.tcp_tsval, tsval, p + 2, 4, f"Timestamp value: {tsval}"))
        o.add(Item(f.tcp_tsecr, tsecr, p + 6, 4, f"Timestamp echo reply: {tsecr}"))


def _tcp_options(top: Item, data: bytes, off: int, end: int) -> None:
    opts = data[off:end]
    names = []
    item = top.add(Item(f.tcp_options, opts, off, len(opts), ""))
    p = off
    while p < end:
        kind = data[p]
        name = f.TCP_OPTIONS.get(kind, ("", f"Unknown ({kind})"))[1]
        if kind in (0, 1):
            n = 1
        elif p + 1 < end and data[p + 1] >= 2 and p + data[p + 1] <= end:
            n = data[p + 1]
        else:
            n = end - p                  # a bad option length: the rest is one undecodable option
        names.append(name)
        label = f"TCP Option - {name}"
        if kind == 2 and n == 4:
            label += f": {struct.unpack_from('!H', data, p + 2)[0]} bytes"
        elif kind == 3 and n == 3:
            label += f": {data[p + 2]} (multiply by {1 << data[p + 2]})"
        elif kind == 8 and n == 10:
            label += ": TSval {}, TSecr {}".format(*struct.unpack_from("!II", data, p + 2))
        o = item.add(Item(f.tcp_option.get(kind, f.tcp_option_unknown), data[p:p + n], p, n, label))
        o.add(Item(f.tcp_option_kind, kind, p, 1, f"Kind: {OPTION_KINDS.get(kind, 'Unknown')} ({kind})"))
        if n > 1:
            o.add(Item(f.tcp_option_len, data[p + 1], p + 1, 1, f"Length: {data[p + 1]}"))
        _option_values(o, data, p, kind, n)
        p += n
        if kind == 0:
            break
    item.label = f"Options: ({len(opts)} bytes), " + ", ".join(names) if names else f"Options: ({len(opts)} bytes)"


def _tcp_expert(item: Item, abbrev: str, *args) -> None:
    group, severity, message = f.TCP_EXPERTS[abbrev]
    item.expert(ExpertInfo(abbrev, getattr(tree, group), getattr(tree, severity), message.format(*args)))


COMPLETENESS = {1: "Incomplete, SYN_SENT", 3: "Incomplete, CLIENT_ESTABLISHED", 7: "Incomplete, ESTABLISHED",
                15: "Incomplete, DATA", 31: "Complete, WITH_DATA", 47: "Complete, WITH_DATA",
                63: "Complete, WITH_DATA", 23: "Complete, NO_DATA", 39: "Complete, NO_DATA",
                55: "Complete, NO_DATA"}


def _tcp_head(top: Item, t, off: int, seglen: int) -> None:
    """Stream index and completeness (before the segment length, as tshark)."""
    top.add(Item(f.tcp_stream, t.stream, off, 0, f"[Stream index: {t.stream}]", generated=True))
    c = t.completeness
    top.add(Item(f.tcp_completeness, c, off, 0, f"[Conversation completeness: {COMPLETENESS.get(c, 'Incomplete')}"
                                                 f" ({c})]", generated=True))


def _tcp_numbers(top: Item, t, off: int, seq: int, ack: int, fl: int) -> None:
    top.add(Item(f.tcp_seq, t.seq, off + 4, 4, f"Sequence Number: {t.seq}    (relative sequence number)"))
    top.add(Item(f.tcp_seq_raw, seq, off + 4, 4, f"Sequence Number (raw): {seq}"))
    top.add(Item(f.tcp_nxtseq, t.nxtseq, off, 0, f"[Next Sequence Number: {t.nxtseq}    (relative sequence number)]",
                 generated=True))
    rel = "    (relative ack number)" if fl & 0x10 else ""
    top.add(Item(f.tcp_ack, t.ack, off + 8, 4, f"Acknowledgment Number: {t.ack}{rel}"))


def _tcp_window(top: Item, t, off: int) -> None:
    if t is None or t.win_scale == -3:
        if t is not None:
            top.add(Item(f.tcp_window_size, t.window, off + 14, 2, f"[Calculated window size: {t.window}]",
                         generated=True))
        return
    top.add(Item(f.tcp_window_size, t.window, off + 14, 2, f"[Calculated window size: {t.window}]", generated=True))
    sc = t.win_scale
    text = {-1: "-1 (unknown)", -2: "-2 (no window scaling used)"}.get(sc, str(1 << sc) if sc >= 0 else str(sc))
    top.add(Item(f.tcp_window_size_scalefactor, (1 << sc) if sc >= 0 else sc, off + 14, 2,
                 f"[Window size scaling factor: {text}]", generated=True))


def _tcp_analysis(top: Item, t, off: int) -> None:
    ts = top.add(TextItem(None, None, off, 0, "Timestamps", generated=True))
    ts.add(Item(f.tcp_time_relative, ns_text(t.rel_ns), off, 0,
                f"[Time since first frame in this TCP stream: {ns_text(t.rel_ns)} seconds]", generated=True))
    ts.add(Item(f.tcp_time_delta, ns_text(t.delta_ns), off, 0,
                f"[Time since previous frame in this TCP stream: {ns_text(t.delta_ns)} seconds]", generated=True))
    if t.acks_frame is None and t.bif is None and t.push is None and not t.flags:
        return                          # tshark shows the tree (and the iRTT) only with something to say
    kids = []
    if t.acks_frame is not None:
        kids.append(Item(f.tcp_analysis_acks_frame, t.acks_frame, off, 0,
                         f"[This is an ACK to the segment in frame: {t.acks_frame}]", generated=True))
        kids.append(Item(f.tcp_analysis_ack_rtt, ns_text(t.ack_rtt_ns), off, 0,
                         f"[The RTT to ACK the segment was: {ns_text(t.ack_rtt_ns)} seconds]", generated=True))
    if t.irtt_ns is not None:
        kids.append(Item(f.tcp_analysis_initial_rtt, ns_text(t.irtt_ns), off, 0, f"[iRTT: {ns_text(t.irtt_ns)} seconds]",
                         generated=True))
    if t.bif is not None:
        kids.append(Item(f.tcp_analysis_bytes_in_flight, t.bif, off, 0, f"[Bytes in flight: {t.bif}]",
                         generated=True))
    if t.push is not None:
        kids.append(Item(f.tcp_analysis_push_bytes_sent, t.push, off, 0, f"[Bytes sent since last PSH flag: {t.push}]",
                         generated=True))
    if t.flags:
        flags = Item(f.tcp_analysis_flags, None, off, 0, "TCP Analysis Flags", generated=True)
        for kind in t.flags:
            _tcp_expert(flags, "tcp.analysis." + kind)
        kids.append(flags)
    if kids:
        a = top.add(Item(f.tcp_analysis, None, off, 0, "SEQ/ACK analysis", generated=True))
        for k in kids:
            a.add(k)


def tcp_layer(d, data: bytes, off: int, length: int) -> Layer:
    if not full(data, off, length, 20):
        return Layer("tcp", proto_item(f.tcp, off, length, "Transmission Control Protocol"))
    sport, dport, seq, ack, offflags, win, csum, urp = struct.unpack_from("!HHIIHHHH", data, off)
    hl = offflags >> 12
    fl = offflags & 0x0FFF
    seglen = len(d.payload) if d.transport == "tcp" else 0
    t = getattr(d, "tcp", None)
    shown_seq, shown_ack = (t.seq, t.ack) if t is not None else (seq, ack)
    top = proto_item(f.tcp, off, length, f"Transmission Control Protocol, Src Port: {sport}, Dst Port: {dport},"
                                      f" Seq: {shown_seq}" + (f", Ack: {shown_ack}" if fl & 0x10 else "") +
                 f", Len: {seglen}")
    top.add(Item(f.tcp_srcport, sport, off, 2, f"Source Port: {sport}"))
    top.add(Item(f.tcp_dstport, dport, off + 2, 2, f"Destination Port: {dport}"))
    top.add(HiddenItem(f.tcp_port, sport, off, 2))
    top.add(HiddenItem(f.tcp_port, dport, off + 2, 2))
    if t is not None:
        _tcp_head(top, t, off, seglen)
    top.add(Item(f.tcp_len, seglen, off, 0, f"[TCP Segment Len: {seglen}]", generated=True))
    if t is not None:
        _tcp_numbers(top, t, off, seq, ack, fl)
    else:
        top.add(Item(f.tcp_seq_raw, seq, off + 4, 4, f"Sequence Number (raw): {seq}"))
    top.add(Item(f.tcp_ack_raw, ack, off + 8, 4, f"Acknowledgment number (raw): {ack}"))
    top.add(Item(f.tcp_hdr_len, hl * 4, off + 12, 1,
                 f"{bits(hl << 4, 0xF0, 8)} = Header Length: {hl * 4} bytes ({hl})"))
    summary = ", ".join(n for b, n in FLAG_SUMMARY if fl & b) or "<None>"
    flags = top.add(Item(f.tcp_flags, fl, off + 12, 2, f"Flags: 0x{fl:03x} ({summary})"))
    for fld, mask, _, _ in f.TCP_FLAG_BITS:
        # Wireshark trims a bit field's bytes to those its mask touches.
        o, n = (off + 12, 2) if mask & 0xF00 and mask & 0xFF else (off + 12, 1) if mask & 0xF00 else (off + 13, 1)
        bit = flags.add(Item(fld, bool(fl & mask), o, n, f"{bits(fl, mask, 12)} = {fld.name}: {set_text(fl & mask)}"))
        if t is not None and fl & mask:
            _flag_expert(bit, mask, fl, t)
    s = "".join(FLAG_LETTERS[11 - i] if fl >> i & 1 else "\u00b7" for i in range(11, -1, -1))
    fstr = flags.add(Item(f.tcp_flags_str, s, off + 12, 2, f"[TCP Flags: {s}]", generated=True))
    if t is not None and t.fin_role:
        _tcp_expert(fstr, "tcp.connection.fin_" + t.fin_role)
    top.add(Item(f.tcp_window_size_value, win, off + 14, 2, f"Window: {win}"))
    _tcp_window(top, t, off)
    top.add(Item(f.tcp_checksum, csum, off + 16, 2, f"Checksum: 0x{csum:04x} [unverified]"))
    top.add(Item(f.tcp_checksum_status, 2, off + 16, 0, "[Checksum Status: Unverified]", generated=True))
    top.add(Item(f.tcp_urgent_pointer, urp, off + 18, 2, f"Urgent Pointer: {urp}"))
    if hl > 5 and length >= hl * 4 and len(data) >= off + hl * 4:
        _tcp_options(top, data, off + 20, off + hl * 4)
    if t is not None:
        _tcp_analysis(top, t, off)
    if seglen:
        top.add(Item(f.tcp_payload, d.payload, d.payload_offset, seglen, f"TCP payload ({seglen} byte"
                                                                           f"{'s' if seglen != 1 else ''})"))
        _pdus(top, d, seglen)
    return Layer("tcp", top)


def _pdus(top: Item, d, seglen: int) -> None:
    """What tshark's tcp_dissect_pdus (a C dissector's framing: websocket) adds after the payload: each PDU's
    [PDU Size], and "TCP segment data" for the bytes that went into a reassembly (those that complete a PDU
    reassembled from several segments, d.reassembled; or a whole segment kept for one, d.segment_data)."""
    for size in getattr(d, "pdu_sizes", None) or ():
        top.add(Item(f.tcp_pdu_size, size, d.payload_offset, 0, f"[PDU Size: {size}]", generated=True))
    n = d.reassembled[-1][0][-1][1] if getattr(d, "reassembled", None) else getattr(d, "segment_data", 0)
    if n:
        top.add(Item(f.tcp_segment_data, d.payload[:n], d.payload_offset, n,
                     f"TCP segment data ({n} byte{'s' if n != 1 else ''})"))


def _flag_expert(bit: Item, mask: int, fl: int, t) -> None:
    if mask == 0x02:
        _tcp_expert(bit, "tcp.connection.synack" if fl & 0x10 else "tcp.connection.syn", t.server_port)
    elif mask == 0x01:
        _tcp_expert(bit, "tcp.connection.fin")
    elif mask == 0x04:
        _tcp_expert(bit, "tcp.connection.rst")


def tcp_segments_layer(pieces, whole: bytes) -> Layer:
    """tshark's summary of a PDU reassembled from segments, shown in the frame that completed it."""
    parts = ", ".join(f"#{frame}({length})" for frame, length in pieces)
    top = Item(f.tcp_segments, None, 0, 0, f"[{len(pieces)} Reassembled TCP Segments ({len(whole)} bytes): {parts}]",
               generated=True)
    at = 0
    for frame, length in pieces:
        top.add(Item(f.tcp_segment, frame, 0, 0, f"[Frame: {frame}, payload: {at}-{at + length - 1} ({length} bytes)]",
                     generated=True))
        at += length
    top.add(Item(f.tcp_segment_count, len(pieces), 0, 0, f"[Segment count: {len(pieces)}]", generated=True))
    top.add(Item(f.tcp_reassembled_length, len(whole), 0, 0, f"[Reassembled TCP length: {len(whole)}]",
                 generated=True))
    top.add(Item(f.tcp_reassembled_data, whole, 0, 0, None, generated=True))     # tshark's bytes label (cut)
    return Layer("tcp.segments", top)


# -- the Info column --------------------------------------------------------------------------------------------

# analysis flag -> the tag tshark puts in front of the Info column (col_prepend_fence: also before a game's Info)
ANALYSIS_TAGS = {"lost_segment": "[TCP Previous segment not captured] ", "out_of_order": "[TCP Out-Of-Order] ",
                 "retransmission": "[TCP Retransmission] ", "ack_lost_segment": "[TCP ACKed unseen segment] ",
                 "spurious_retransmission": "[TCP Spurious Retransmission] "}


def info_prefix(d) -> str:
    t = getattr(d, "tcp", None)
    if t is None or not t.flags:
        return ""
    spurious = "spurious_retransmission" in t.flags      # tagged as spurious only, though flagged as both
    return "".join(ANALYSIS_TAGS.get(kind, "") for kind in reversed(t.flags)
                   if not (spurious and kind == "retransmission"))


def info(d) -> str:
    """TCP's own Info column: ports, flags, relative Seq/Ack, window, length, the options tshark lists."""
    fl, t = d.flags or 0, getattr(d, "tcp", None)
    names = ", ".join(n for b, n in FLAG_SUMMARY if fl & b) or "<None>"
    seq, ack, win = (t.seq, t.ack, t.window) if t is not None else (d.seq, d.ack, d.window)
    out = [f"{d.sport} \u2192 {d.dport} [{names}] Seq={seq}"]
    if fl & 0x10:
        out.append(f"Ack={ack}")
    out.append(f"Win={win} Len={len(d.payload)}")
    span = next((s for s in reversed(d.spans) if s[0] == "tcp"), None)
    data = d.frame.data
    if span is not None and len(data) >= span[1] + 20:
        off = span[1]
        if fl & 0x20:
            out.append(f"Urg={struct.unpack_from('!H', data, off + 18)[0]}")
        base = (d.ack - t.ack) & 0xFFFFFFFF if t is not None and d.ack is not None else 0
        out.extend(_option_infos(data, off + 20, off + span[2], base))
    text = " ".join(out)
    bogus = next((p.message for _, p in d.problems if p.abbrev == "tcp.hdr_len.bad"), None)
    if bogus is not None:                 # tshark stops after the window: no length, no options
        return info_prefix(d) + text.split(" Len=")[0] + ", " + bogus[0].lower() + bogus[1:]
    if getattr(d, "segment_data", 0):
        text += " [TCP segment of a reassembled PDU]"
    return info_prefix(d) + text


def _option_infos(data: bytes, p: int, end: int, ack_base: int):
    """The options' Info texts, in option order; SACK edges relative to the acknowledged side's base."""
    end = min(end, len(data))
    while p < end:
        kind = data[p]
        if kind == 0:
            return
        if kind == 1:
            p += 1
            continue
        if p + 1 >= end or data[p + 1] < 2 or p + data[p + 1] > end:
            return
        n = data[p + 1]
        if kind == 2 and n == 4:
            yield f"MSS={struct.unpack_from('!H', data, p + 2)[0]}"
        elif kind == 4 and n == 2:
            yield "SACK_PERM"
        elif kind == 8 and n == 10:
            yield "TSval={} TSecr={}".format(*struct.unpack_from("!II", data, p + 2))
        elif kind == 3 and n == 3:
            yield f"WS={1 << min(data[p + 2], 14)}"
        elif kind == 5 and n >= 10:
            for q in range(p + 2, p + n - 7, 8):
                left, right = struct.unpack_from("!II", data, q)
                yield f"SLE={(left - ack_base) & 0xFFFFFFFF} SRE={(right - ack_base) & 0xFFFFFFFF}"
        p += n
