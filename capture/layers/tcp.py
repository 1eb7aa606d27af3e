"""TCP (tshark's packet-tcp.c): header, options, conversation analysis, reassembled-PDU summary."""
from __future__ import annotations

import struct

from ...engine import tree
from ...engine.template import Slot, SlotLayer, TemplateCache
from ...engine.tree import ExpertInfo, HiddenItem, Item, Layer, TextItem
from .. import fields as f
from .common import bits, full, ns_text, proto_item, set_text

FLAG_SUMMARY = [(0x01, "FIN"), (0x02, "SYN"), (0x04, "RST"), (0x08, "PSH"), (0x10, "ACK"), (0x20, "URG"),
                (0x40, "ECE"), (0x80, "CWR"), (0x100, "AE"), (0xE00, "Reserved")]
FLAG_LETTERS = "RRRACEUAPRSF"
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
            _tcp_expert(shift, "tcp.options.wscale.shift.invalid")
        m = 1 << min(data[p + 2], 14)
        o.add(Item(f.tcp_wscale_multiplier, m, p + 2, 1, f"[Multiplier: {m}]", generated=True))
    elif kind == 8:
        tsval, tsecr = struct.unpack_from("!II", data, p + 2)
        o.add(Item(f.tcp_tsval, tsval, p + 2, 4, f"Timestamp value: {tsval}"))
        o.add(Item(f.tcp_tsecr, tsecr, p + 6, 4, f"Timestamp echo reply: {tsecr}"))
    elif kind not in f.TCP_OPTIONS and n > 2:
        payload = data[p + 2:p + n]
        o.add(Item(f.tcp_option_unknown_payload, payload, p + 2, n - 2, f"Payload: {payload.hex()}"))


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


def _bad_option(item: Item, p: int, n: int, message: str) -> None:
    """tshark's text item for an option whose length is unusable, with the expert on it (the walk stops)."""
    _tcp_expert(item.add(TextItem(None, None, p, n, message)), "tcp.option.len.invalid", message)


def _tcp_options(top: Item, data: bytes, off: int, end: int, syn: bool = False) -> None:
    """The options item, as tshark 4.0's tcp_dissect_options makes it (_option_items), and after a walk that
    reached the end, the expert of a SYN without MSS."""
    opts = data[off:end]
    item = top.add(Item(f.tcp_options, opts, off, len(opts), ""))
    names, whole = _option_items(item, data, off, end, syn)
    if whole and syn and f.TCP_OPTIONS[2][1] not in names:
        _tcp_expert(item, "tcp.options.mss.absent")
    item.label = f"Options: ({len(opts)} bytes), " + ", ".join(names) if names else f"Options: ({len(opts)} bytes)"


def _option_items(item: Item, data: bytes, p: int, end: int, syn: bool) -> tuple[list[str], bool]:
    """Each option's item under `item`; (the names of the options shown, whether the walk reached the end). An
    option whose length byte is missing, too short or runs past the header ends the walk with an expert; a
    fixed-length option of another length is shown without its values, with an expert on its length; after an
    End of Option List, non-zero padding ends it too."""
    names: list[str] = []
    nops = 0
    while p < end:
        kind = data[p]
        nops = nops + 1 if kind == 1 else 0
        if kind in (0, 1):
            name = f.TCP_OPTIONS[kind][1]
            if nops == 4:
                _tcp_expert(item, "tcp.nop")
            o = item.add(Item(f.tcp_option[kind], data[p:p + 1], p, 1, f"TCP Option - {name}"))
            o.add(Item(f.tcp_option_kind, kind, p, 1, f"Kind: {OPTION_KINDS[kind]} ({kind})"))
            names.append(name)
            p += 1
            if kind == 0 and any(data[p:end]):
                _tcp_expert(item.add(TextItem(None, None, p, end - p, "Non-zero header padding")),
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
        names.append(name)
        want = OPTION_LENGTHS.get(kind, n)
        o = item.add(Item(f.tcp_option.get(kind, f.tcp_option_unknown), data[p:p + n], p, n,
                          _option_label(data, p, kind, n == want)))
        if kind == 2 and not syn:
            _tcp_expert(o, "tcp.options.mss.present")
        o.add(Item(f.tcp_option_kind, kind, p, 1, f"Kind: {OPTION_KINDS.get(kind, 'Unknown')} ({kind})"))
        length = o.add(Item(f.tcp_option_len, n, p + 1, 1, f"Length: {n}"))
        if n != want:
            _tcp_expert(length, "tcp.option.len.invalid", f"option length should be {want}")
        else:
            _option_values(o, data, p, kind, n)
        p += n
    return names, True


def _tcp_expert(item: Item, abbrev: str, *args) -> None:
    group, severity, message = f.TCP_EXPERTS[abbrev]
    item.expert(ExpertInfo(abbrev, getattr(tree, group), getattr(tree, severity), message.format(*args)))


COMPLETENESS = {1: "Incomplete, SYN_SENT", 3: "Incomplete, CLIENT_ESTABLISHED", 7: "Incomplete, ESTABLISHED",
                15: "Incomplete, DATA", 31: "Complete, WITH_DATA", 47: "Complete, WITH_DATA",
                63: "Complete, WITH_DATA", 23: "Complete, NO_DATA", 39: "Complete, NO_DATA",
                55: "Complete, NO_DATA"}


# The layer is a template (engine.template) chosen by what shapes the tree: the header's offset, length and flags,
# what the conversation analysis has to say, the options' layout, the payload's PDUs. Everything that depends only
# on those is a static item of the template; the values that change from frame to frame fill its slots.
TEMPLATES = TemplateCache()
_G = True        # generated


def _head_slots(t, off: int, hl: int, fl: int, sc) -> list:
    """Ports to the urgent pointer."""
    nodes = [Slot(f.tcp_srcport, "Source Port: %(sport)d", "sport", 0, 2),
             Slot(f.tcp_dstport, "Destination Port: %(dport)d", "dport", 2, 2),
             Slot(f.tcp_port, None, "sport", 0, 2, cls=HiddenItem),
             Slot(f.tcp_port, None, "dport", 2, 2, cls=HiddenItem)]
    if t:
        nodes += [Slot(f.tcp_stream, "[Stream index: %(stream)d]", "stream", 0, 0, _G),
                  Slot(f.tcp_completeness, "[Conversation completeness: %(ctext)s (%(c)d)]", "c", 0, 0, _G)]
    nodes.append(Slot(f.tcp_len, "[TCP Segment Len: %(seglen)d]", "seglen", 0, 0, _G))
    if t:
        rel = "    (relative ack number)" if fl & 0x10 else ""
        nodes += [Slot(f.tcp_seq, "Sequence Number: %(seq)d    (relative sequence number)", "seq", 4, 4),
                  Slot(f.tcp_seq_raw, "Sequence Number (raw): %(seq_raw)d", "seq_raw", 4, 4),
                  Slot(f.tcp_nxtseq, "[Next Sequence Number: %(nxtseq)d    (relative sequence number)]", "nxtseq", 0, 0,
                       _G),
                  Slot(f.tcp_ack, "Acknowledgment Number: %(ack)d" + rel, "ack", 8, 4)]
    else:
        nodes.append(Slot(f.tcp_seq_raw, "Sequence Number (raw): %(seq_raw)d", "seq_raw", 4, 4))
    nodes += [Slot(f.tcp_ack_raw, "Acknowledgment number (raw): %(ack_raw)d", "ack_raw", 8, 4),
              _hdr_len_item(off, hl),
              _flags_item(t, off, fl),
              Slot(f.tcp_window_size_value, "Window: %(win)d", "win", 14, 2)]
    if t:
        nodes.append(Slot(f.tcp_window_size, "[Calculated window size: %(window)d]", "window", 14, 2, _G))
        if sc != -3:
            text = {-1: "-1 (unknown)", -2: "-2 (no window scaling used)"}.get(sc, str(1 << sc) if sc >= 0 else str(sc))
            nodes.append(Item(f.tcp_window_size_scalefactor, (1 << sc) if sc >= 0 else sc, off + 14, 2,
                              f"[Window size scaling factor: {text}]", generated=True))
    nodes += [Slot(f.tcp_checksum, "Checksum: 0x%(csum)04x [unverified]", "csum", 16, 2),
              Item(f.tcp_checksum_status, 2, off + 16, 0, "[Checksum Status: Unverified]", generated=True),
              Slot(f.tcp_urgent_pointer, "Urgent Pointer: %(urp)d", "urp", 18, 2)]
    return nodes


def _hdr_len_item(off: int, hl: int) -> Item:
    return Item(f.tcp_hdr_len, hl * 4, off + 12, 1, f"{bits(hl << 4, 0xF0, 8)} = Header Length: {hl * 4} bytes ({hl})")


def _flags_item(t, off: int, fl: int) -> Item:
    """tcp.flags and its bits (static: they depend on the flags, and their experts on the conversation's
    server port and FIN role, all in the template's key)."""
    flags = Item(f.tcp_flags, fl, off + 12, 2, f"Flags: 0x{fl:03x} ({_flag_names(fl)})")
    for fld, mask, _, _ in f.TCP_FLAG_BITS:
        # Wireshark trims a bit field's bytes to those its mask touches.
        o, n = (off + 12, 2) if mask & 0xF00 and mask & 0xFF else (off + 12, 1) if mask & 0xF00 else (off + 13, 1)
        bit = flags.add(Item(fld, bool(fl & mask), o, n, f"{bits(fl, mask, 12)} = {fld.name}: {set_text(fl & mask)}"))
        if t and fl & mask:
            _flag_expert(bit, mask, fl, t)
    s = "".join(FLAG_LETTERS[11 - i] if fl >> i & 1 else "\u00b7" for i in range(11, -1, -1))
    fstr = flags.add(Item(f.tcp_flags_str, s, off + 12, 2, f"[TCP Flags: {s}]", generated=True))
    if t and t[1]:
        _tcp_expert(fstr, "tcp.connection.fin_" + t[1])
    return flags


def _analysis_slots(t, off: int) -> list:
    """[Timestamps] and the SEQ/ACK analysis: `t` = (server port, FIN role, ACKed frame?, iRTT?, bytes in
    flight?, PSH bytes?, analysis flags)."""
    nodes = [Slot(None, "Timestamps", None, 0, 0, _G, TextItem, (
        Slot(f.tcp_time_relative, "[Time since first frame in this TCP stream: %(rel)s seconds]", "rel", 0, 0, _G),
        Slot(f.tcp_time_delta, "[Time since previous frame in this TCP stream: %(delta)s seconds]", "delta", 0, 0,
             _G)))]
    _, _, acked, irtt, bif, push, kinds = t
    kids = []
    if acked:
        kids += [Slot(f.tcp_analysis_acks_frame, "[This is an ACK to the segment in frame: %(acks_frame)d]",
                      "acks_frame", 0, 0, _G),
                 Slot(f.tcp_analysis_ack_rtt, "[The RTT to ACK the segment was: %(ack_rtt)s seconds]", "ack_rtt",
                      0, 0, _G)]
    if irtt:
        kids.append(Slot(f.tcp_analysis_initial_rtt, "[iRTT: %(irtt)s seconds]", "irtt", 0, 0, _G))
    if bif:
        kids.append(Slot(f.tcp_analysis_bytes_in_flight, "[Bytes in flight: %(bif)d]", "bif", 0, 0, _G))
    if push:
        kids.append(Slot(f.tcp_analysis_push_bytes_sent, "[Bytes sent since last PSH flag: %(push)d]", "push",
                         0, 0, _G))
    if kinds:
        flags = Item(f.tcp_analysis_flags, None, off, 0, "TCP Analysis Flags", generated=True)
        for kind in kinds:
            _tcp_expert(flags, "tcp.analysis." + kind)
        kids.append(flags)
    if acked or bif or push or kinds:   # tshark shows the tree (and the iRTT) only with something to say
        nodes.append(Slot(f.tcp_analysis, "SEQ/ACK analysis", None, 0, 0, _G, kids=kids))
    return nodes


def _options_node(data: bytes, off: int, end: int, ts_at: int | None, syn: bool):
    """The options item: static, but for a timestamps option's values (slots), the one that changes in every
    segment of a connection."""
    holder = Item(None)
    _tcp_options(holder, data, off, end, syn)
    opts = holder.children[0]
    if ts_at is None:
        return opts
    kids = []
    for o in opts.children:
        if o.offset != ts_at:
            kids.append(o)
            continue
        a = ts_at - off + 20         # relative to the TCP header
        kids.append(Slot(o.field, "TCP Option - Timestamps: TSval %(tsval)d, TSecr %(tsecr)d", "ts_opt", a, 10, kids=(
            o.children[0], o.children[1],
            Slot(f.tcp_tsval, "Timestamp value: %(tsval)d", "tsval", a + 2, 4),
            Slot(f.tcp_tsecr, "Timestamp echo reply: %(tsecr)d", "tsecr", a + 6, 4))))
    return Slot(f.tcp_options, opts.label.replace("%", "%%"), "opts", 20, end - off, kids=kids)


NOP_NOP_TS = b"\x01\x01\x08\x0a"     # what Linux puts in every segment of a connection
NOP_NOP_TS_KEY = b"\x01\x01\x02"     # its template key: the options without the timestamps, and where they are


def option_spans(data: bytes, p: int, end: int):
    """(offset, kind, length) of each option of data[p:end] up to an End of Option List, as tshark's walk finds
    them; the walk ends before an option whose length byte is missing, under 2 or runs past `end` (yielded as
    (offset, kind, None))."""
    while p < end:
        kind = data[p]
        if kind == 0:
            return
        if kind == 1:
            yield p, 1, 1
            p += 1
            continue
        n = data[p + 1] if p + 1 < end else 0
        if n < 2 or p + n > end:
            yield p, kind, None
            return
        yield p, kind, n
        p += n


def _ts_option_at(options: bytes) -> int | None:
    """Where the one well-formed timestamps option of a well-formed option list starts (None: no such option)."""
    at = None
    for p, kind, n in option_spans(options, 0, len(options)):
        if n is None or kind == 8 and (at is not None or n != 10):
            return None
        if kind == 8:
            at = p
    return at


def _payload_slots(d, seglen: int, hl: int) -> list:
    """The payload, and what a tcp_dissect_pdus framing (websocket) adds after it: each PDU's [PDU Size], and
    "TCP segment data" for the bytes that went into a reassembly (those that complete a PDU reassembled from
    several segments, d.reassembled; or a whole segment kept for one, d.segment_data)."""
    a = hl * 4
    nodes = [Slot(f.tcp_payload, f"TCP payload (%(seglen)d byte{'s' if seglen != 1 else ''})", "payload", a, "seglen")]
    for i, _ in enumerate(getattr(d, "pdu_sizes", None) or ()):
        # each over its PDU's bytes, as tcp_dissect_pdus adds it (empty when the PDU runs past the segment)
        nodes.append(Slot(f.tcp_pdu_size, f"[PDU Size: %(pdu{i})d]", f"pdu{i}", f"pduat{i}", f"pdulen{i}", _G))
    n = _segment_data_length(d)
    if n:
        nodes.append(Slot(f.tcp_segment_data, f"TCP segment data (%(segn)d byte{'s' if n != 1 else ''})", "segdata",
                          "segat", "segn"))
    return nodes


def _segment_data_length(d) -> int:
    return d.reassembled[-1][0][-1][1] if getattr(d, "reassembled", None) else getattr(d, "segment_data", 0)


def _bogus_layer(d, data: bytes, off: int, hl: int, segment: int) -> Layer:
    """A data offset under 5 words: tshark 4.0 gives up after the header length (the expert goes on that item,
    from Decoded.problems), and the segment's length counts from the bogus offset."""
    sport, dport, seq = struct.unpack_from("!HHI", data, off)
    t = getattr(d, "tcp", None)
    shown = t.seq if t is not None else seq
    top = proto_item(f.tcp, off, 20,
                     f"Transmission Control Protocol, Src Port: {sport}, Dst Port: {dport}, Seq: {shown}")
    top.add(Item(f.tcp_srcport, sport, off, 2, f"Source Port: {sport}"))
    top.add(Item(f.tcp_dstport, dport, off + 2, 2, f"Destination Port: {dport}"))
    top.add(HiddenItem(f.tcp_port, sport, off, 2))
    top.add(HiddenItem(f.tcp_port, dport, off + 2, 2))
    if t is not None:
        top.add(Item(f.tcp_stream, t.stream, off, 0, f"[Stream index: {t.stream}]", generated=True))
        c = t.completeness
        top.add(Item(f.tcp_completeness, c, off, 0, f"[Conversation completeness: {COMPLETENESS.get(c, 'Incomplete')}"
                                                     f" ({c})]", generated=True))
    seglen = segment - hl * 4
    top.add(Item(f.tcp_len, seglen, off + 12, 1, f"[TCP Segment Len: {seglen}]", generated=True))
    if t is not None:
        top.add(Item(f.tcp_seq, t.seq, off + 4, 4, f"Sequence Number: {t.seq}    (relative sequence number)"))
    top.add(Item(f.tcp_seq_raw, seq, off + 4, 4, f"Sequence Number (raw): {seq}"))
    top.add(_hdr_len_item(off, hl))
    return Layer("tcp", top)


_HEADER = struct.Struct("!HHIIHHHH").unpack_from
_TS = struct.Struct("!II").unpack_from


def tcp_layer(d, data: bytes, off: int, length: int, segment: int | None = None):
    if not full(data, off, length, 20):
        return Layer("tcp", proto_item(f.tcp, off, length, "Transmission Control Protocol"))
    sport, dport, seq, ack, offflags, win, csum, urp = _HEADER(data, off)
    hl = offflags >> 12
    fl = offflags & 0x0FFF
    if hl < 5:
        return _bogus_layer(d, data, off, hl, segment if segment is not None else length)
    payload = d.payload
    seglen = len(payload) if d.transport == "tcp" else 0
    t = d.tcp
    if t is not None:
        shown_seq, shown_ack, sc, c = t.seq, t.ack, t.win_scale, t.completeness
        tkey = (t.server_port if fl & 0x02 else None, t.fin_role, t.acks_frame is not None, t.irtt_ns is not None,
                t.bif is not None, t.push is not None, tuple(t.flags) if t.flags else ())
        vals = {"sport": sport, "dport": dport, "seglen": seglen, "seq_raw": seq, "ack_raw": ack, "win": win,
                "csum": csum, "urp": urp, "stream": t.stream, "c": c, "ctext": COMPLETENESS.get(c, "Incomplete"),
                "seq": shown_seq, "nxtseq": t.nxtseq, "ack": shown_ack, "window": t.window,
                "rel": ns_text(t.rel_ns), "delta": ns_text(t.delta_ns), "acks_frame": t.acks_frame, "bif": t.bif,
                "push": t.push}
        if t.acks_frame is not None:
            vals["ack_rtt"] = ns_text(t.ack_rtt_ns)
        if t.irtt_ns is not None:
            vals["irtt"] = ns_text(t.irtt_ns)
    else:
        shown_seq, shown_ack, tkey, sc = seq, ack, None, None
        vals = {"sport": sport, "dport": dport, "seglen": seglen, "seq_raw": seq, "ack_raw": ack, "win": win,
                "csum": csum, "urp": urp}
    opts_key = ts_at = None
    if hl > 5 and length >= hl * 4 and len(data) >= off + hl * 4:
        options = data[off + 20:off + hl * 4]
        vals["opts"] = options
        if hl == 8 and options[:4] == NOP_NOP_TS:       # Linux's options in every segment of a connection
            ts_at, opts_key = 2, NOP_NOP_TS_KEY
        else:
            ts_at = _ts_option_at(options)
            opts_key = options if ts_at is None else options[:ts_at] + options[ts_at + 10:] + bytes((ts_at,))
        if ts_at is not None:
            vals["ts_opt"] = options[ts_at:ts_at + 10]
            vals["tsval"], vals["tsecr"] = _TS(options, ts_at + 2)
    pdus = d.pdu_sizes or ()
    segn = 0
    if seglen:
        vals["payload"] = payload
        if pdus:
            at = hl * 4
            for i, size in enumerate(pdus):
                vals[f"pdu{i}"], vals[f"pduat{i}"] = size, at
                vals[f"pdulen{i}"] = size if at + size <= hl * 4 + seglen else 0
                at += size
        segn = d.reassembled[-1][0][-1][1] if d.reassembled else d.segment_data
        if segn:
            at = d.segment_data_at
            vals["segn"], vals["segat"] = segn, hl * 4 + at
            vals["segdata"] = payload if segn == seglen else payload[at:at + segn]
    key = (off, hl, fl, sc, tkey, opts_key, seglen > 0, seglen == 1, len(pdus), segn > 0, segn == 1)
    tpl = TEMPLATES.memo.get(key)
    if tpl is None:
        tpl = TEMPLATES.get(key, lambda: _tcp_nodes(d, data, off, hl, fl, sc, tkey, opts_key, ts_at, seglen))
    label = (f"Transmission Control Protocol, Src Port: {sport}, Dst Port: {dport}, Seq: {shown_seq}" +
             (f", Ack: {shown_ack}" if fl & 0x10 else "") + f", Len: {seglen}")
    return SlotLayer("tcp", f.tcp, off, length, label, tpl, vals)


def _tcp_nodes(d, data: bytes, off: int, hl: int, fl: int, sc, tkey, opts_key, ts_at, seglen: int) -> list:
    """The template of a TCP layer of this shape (tcp_layer's key)."""
    nodes = _head_slots(tkey, off, hl, fl, sc)
    if opts_key is not None:
        nodes.append(_options_node(data, off + 20, off + hl * 4, None if ts_at is None else off + 20 + ts_at,
                                   bool(fl & 0x02)))
    if tkey:
        nodes += _analysis_slots(tkey, off)
    if seglen:
        nodes += _payload_slots(d, seglen, hl)
    return nodes


def _flag_expert(bit: Item, mask: int, fl: int, t) -> None:
    if mask == 0x02:
        _tcp_expert(bit, "tcp.connection.synack" if fl & 0x10 else "tcp.connection.syn", t[0])
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


def _flag_names(fl: int) -> str:
    """The flags as the Info column and the tcp.flags label list them ("SYN, ACK"; "<None>")."""
    names = FLAG_NAMES.get(fl)
    if names is None:
        names = FLAG_NAMES[fl] = ", ".join(n for b, n in FLAG_SUMMARY if fl & b) or "<None>"
    return names


FLAG_NAMES: dict[int, str] = {}      # 4,096 values at most


def info(d) -> str:
    """TCP's own Info column: ports, flags, relative Seq/Ack, window, length, the options tshark lists."""
    fl, t = d.flags or 0, getattr(d, "tcp", None)
    seq, ack, win = (t.seq, t.ack, t.window) if t is not None else (d.seq, d.ack, d.window)
    text = f"{d.sport} \u2192 {d.dport} [{_flag_names(fl)}] Seq={seq}"
    if fl & 0x10:
        text += f" Ack={ack}"
    text += f" Win={win} Len={len(d.payload)}"
    span = None
    for s in reversed(d.spans):
        if s[0] == "tcp":
            span = s
            break
    data = d.frame.data
    if span is not None and len(data) >= span[1] + 20:
        off = span[1]
        if fl & 0x20:
            text += f" Urg={struct.unpack_from('!H', data, off + 18)[0]}"
        if span[2] > 20:
            base = (d.ack - t.ack) & 0xFFFFFFFF if t is not None and d.ack is not None else 0
            for option in _option_infos(data, off + 20, off + span[2], base):
                text += " " + option
    if d.problems:
        bogus = next((p.message for _, p in d.problems if p.abbrev == "tcp.bogus_header_length"), None)
        if bogus is not None:                 # tshark stops after the window: no length, no options
            return info_prefix(d) + text.split(" Len=")[0] + ", " + bogus[0].lower() + bogus[1:]
    if d.segment_data:
        text += " [TCP segment of a reassembled PDU]"
    return info_prefix(d) + text if t is not None and t.flags else text


def _option_infos(data: bytes, p: int, end: int, ack_base: int):
    """The options' Info texts, in option order; SACK edges relative to the acknowledged side's base."""
    for p, kind, n in option_spans(data, p, min(end, len(data))):
        if n is None:
            return
        if kind == 2 and n == 4:
            yield f"MSS={struct.unpack_from('!H', data, p + 2)[0]}"
        elif kind == 4:
            yield "SACK_PERM"
        elif kind == 8 and n == 10:
            yield "TSval={} TSecr={}".format(*struct.unpack_from("!II", data, p + 2))
        elif kind == 3 and n == 3:
            yield f"WS={1 << min(data[p + 2], 14)}"
        elif kind == 5 and n >= 10:
            for q in range(p + 2, p + n - 7, 8):
                left, right = struct.unpack_from("!II", data, q)
                yield f"SLE={(left - ack_base) & 0xFFFFFFFF} SRE={(right - ack_base) & 0xFFFFFFFF}"
