"""TCP (tshark's packet-tcp.c): the layer of a segment, a template of its shape filled with its values, and the
summary of a PDU reassembled from segments. Its parts, one concept a module:

  tcp_header.py        the header's items shared by every kind of layer (flags, header length, window scaling)
  tcp_options.py       the options item and each option's items (MSS, window scale, SACK/D-SACK, timestamps)
  tcp_option_spans.py  where the options lie, without items (the template key, the Info column, the decoder)
  tcp_template.py      the template of a layer of one shape (header, options, analysis, payload slots)
  tcp_partial.py       the layers built by hand: bogus header length, short segment, cut options, ICMP-quoted
  tcp_info.py          the Info column
"""
from __future__ import annotations

from ...engine.template import SlotLayer
from ...engine.tree import Item, Layer
from .. import fields as f
from .common import full, ns_text, proto_item
from .tcp_header import COMPLETENESS, HEADER
from .tcp_option_spans import NOP_NOP_TS, NOP_NOP_TS_KEY, TSVAL_TSECR, ts_option_at
from .tcp_partial import bogus_layer, cut_layer, short_layer
from .tcp_template import TEMPLATES, completed_here, reassembled_pdus, tcp_nodes


def tcp_layer(d, data: bytes, off: int, length: int, segment: int | None = None, short: str | None = None):
    if short is not None:
        return short_layer(d, data, off, length, short)
    if segment == "cut":
        return cut_layer(d, data, off, length)
    if not full(data, off, length, 20):
        return Layer("tcp", proto_item(f.tcp, off, length, "Transmission Control Protocol"))
    sport, dport, seq, ack, offflags, win, csum, urp = HEADER(data, off)
    hl = offflags >> 12
    fl = offflags & 0x0FFF
    if hl < 5:
        return bogus_layer(d, data, off, hl, segment if segment is not None else length)
    payload = d.payload
    seglen = len(payload) + d.cut if d.transport == "tcp" else 0
    t = d.tcp
    if t is not None:
        shown_seq, shown_ack, sc, c = t.seq, t.ack, t.win_scale, t.completeness
        acked = 0 if t.acks_frame is None else 2 if t.ack_rtt_ns else 1      # tshark shows no RTT of 0
        tkey = (t.server_port if fl & 0x02 else None, t.fin_role, acked, t.irtt_ns is not None,
                t.bif is not None, t.push is not None, tuple(t.flags) if t.flags else (), t.rto_ns is not None,
                t.dupack_num, t.record)
        vals = {"sport": sport, "dport": dport, "seglen": seglen, "seq_raw": seq, "ack_raw": ack, "win": win,
                "csum": csum, "urp": urp, "stream": t.stream, "c": c, "ctext": COMPLETENESS.get(c, "Incomplete"),
                "seq": shown_seq, "nxtseq": t.nxtseq, "ack": shown_ack, "window": t.window,
                "rel": ns_text(t.rel_ns), "delta": ns_text(t.delta_ns), "acks_frame": t.acks_frame, "bif": t.bif,
                "push": t.push}
        if t.rto_ns is not None:
            vals["rto"], vals["rto_frame"] = ns_text(t.rto_ns), t.rto_frame
        if t.dupack_num is not None:
            vals["dupack_frame"] = t.dupack_frame
        if acked == 2:
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
            ts_at = ts_option_at(options)
            opts_key = options if ts_at is None else options[:ts_at] + options[ts_at + 10:] + bytes((ts_at,))
        if ts_at is not None:
            vals["ts_opt"] = options[ts_at:ts_at + 10]
            vals["tsval"], vals["tsecr"] = TSVAL_TSECR(options, ts_at + 2)
        if 5 in options or 30 in options:   # SACK edges are relative to the acknowledged side: in the key
            sack = ((ack - t.ack) & 0xFFFFFFFF if t is not None and fl & 0x10 else 0, shown_ack)
            opts_key = (opts_key, sack, bool(d.problems) and d.problems[-1][1].abbrev == "_ws.malformed.expert")
    pdus = d.pdu_sizes or ()
    done = kept = 0
    if seglen:
        vals["payload"], vals["captured"] = payload, len(payload)   # (an item's bytes: those captured, as proto.c)
        done, kept = completed_here(d), d.segment_data      # (the first bytes complete a PDU; the last start one)
        if pdus:
            at = hl * 4 + done         # the segment's own PDUs follow the bytes that completed one, if any
            for i, size in enumerate(pdus):
                if size.__class__ is tuple:    # a PDU in a reassembled buffer (source, offset): its item spans it there
                    size, src, pos = size
                    vals[f"pdu{i}"], vals[f"pdusrc{i}"], vals[f"pduat{i}"], vals[f"pdulen{i}"] = size, src, pos - off, size
                    continue
                vals[f"pdu{i}"], vals[f"pduat{i}"], vals[f"pdusrc{i}"] = size, at, 0
                vals[f"pdulen{i}"] = size if at + size <= hl * 4 + seglen else 0
                at += size
        if done:
            vals["segn"], vals["segat"] = done, hl * 4
            vals["segdata"] = payload if done == seglen else payload[:done]
        if kept:
            at = d.segment_data_at
            vals["keptn"], vals["keptat"] = kept, hl * 4 + at
            vals["keptdata"] = payload if kept == seglen else payload[at:at + kept]
    if d.reassembled_in is not None:
        vals["rin"] = d.reassembled_in
    shown = seglen if payload else 0        # no payload item when the snap length left none of it
    key = (off, hl, fl, sc, tkey, opts_key, shown > 0, seglen == 1, len(pdus), done > 0, done == 1, kept > 0,
           kept == 1, done and reassembled_pdus(pdus),
           bool(ack) and not fl & 0x10, d.mptcp.key() if d.mptcp is not None else None, d.reassembled_in is not None,
           d.repeats_pdu_start, d.cut > 0)
    tpl = TEMPLATES.memo.get(key)
    if tpl is None:
        tpl = TEMPLATES.get(key, lambda: tcp_nodes(d, data, off, hl, fl, sc, tkey, opts_key, ts_at, shown))
    label = (f"Transmission Control Protocol, Src Port: {sport}, Dst Port: {dport}, Seq: {shown_seq}" +
             (f", Ack: {shown_ack}" if fl & 0x10 else "") + f", Len: {seglen}")
    return SlotLayer("tcp", f.tcp, off, length, label, tpl, vals)


def tcp_segments_layer(pieces, whole: bytes, source: int = 0, conflicts: tuple[bool, ...] = ()) -> Layer:
    """tshark's summary of a PDU reassembled from segments, shown in the frame that completed it: its items span
    their bytes in the reassembled buffer (data source `source`), each segment its own share; `conflicts`, per
    piece, whether its data differs from the bytes it overlaps (reassembly/tcp.py SegmentReassembly)."""
    parts = ", ".join(f"#{frame}({length})" for frame, length, _ in pieces)
    n = len(whole)
    top = Item(f.tcp_segments, None, 0, n, f"[{len(pieces)} Reassembled TCP Segments ({n} bytes): {parts}]",
               True, source)
    covered = 0
    for i, (frame, length, at) in enumerate(pieces):
        conflict = bool(conflicts) and conflicts[i]        # (reassemble.c shows such a one as an error item)
        item = top.add(Item(f.tcp_segment_error if conflict else f.tcp_segment, frame, at, length,
                            f"[Frame: {frame}, payload: {at}-{at + length - 1} ({length} bytes)]", True, source))
        if at < covered:        # a retransmitted part: reassemble.c flags the bytes it covers again
            item.add(Item(f.tcp_segment_overlap, True, 0, 0, "[Segment overlap: True]", True, source))
            if conflict:
                item.add(Item(f.tcp_segment_overlap_conflict, True, 0, 0,
                              "[Conflicting data in segment overlap: True]", True, source))
        covered = max(covered, at + length)
    top.add(Item(f.tcp_segment_count, len(pieces), 0, 0, f"[Segment count: {len(pieces)}]", True, source))
    top.add(Item(f.tcp_reassembled_length, n, 0, 0, f"[Reassembled TCP length: {n}]", True, source))
    top.add(Item(f.tcp_reassembled_data, whole, 0, n, None, True, source))     # tshark's bytes label (cut)
    return Layer("tcp.segments", top)
