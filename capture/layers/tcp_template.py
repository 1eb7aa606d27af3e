"""The template of a TCP layer (engine.template): the static items of a tree of one shape, with slots for the
values tcp.py's tcp_layer fills in each frame (ports, numbers, analysis values, timestamps option, payload)."""
from __future__ import annotations

from ...engine.template import Slot, TemplateCache
from ...engine.tree import HiddenItem, Item, TextItem
from .. import fields as f
from . import mptcp as mptcp_option
from .tcp_header import flags_item, hdr_len_item, scale_factor_item, tcp_expert
from .tcp_options import options_item

# The layer is a template (engine.template) chosen by what shapes the tree: the header's offset, length and flags,
# what the conversation analysis has to say, the options' layout, the payload's PDUs. Everything that depends only
# on those is a static item of the template; the values that change from frame to frame fill its slots.
TEMPLATES = TemplateCache()
_G = True        # generated


def tcp_nodes(d, data: bytes, off: int, hl: int, fl: int, sc, tkey, opts_key, ts_at, seglen: int) -> list:
    """The template of a TCP layer of this shape (tcp_layer's key)."""
    nodes = _head_slots(tkey, off, hl, fl, sc, bool(d.ack) and not fl & 0x10)
    sack, cut = opts_key[1:] if isinstance(opts_key, tuple) else (None, False)
    mp = d.mptcp
    if opts_key is not None:
        nodes.append(_options_node(data, off + 20, off + hl * 4, None if ts_at is None else off + 20 + ts_at,
                                   bool(fl & 0x02), sack, mp.options if mp is not None else None))
    if cut:              # an exception in the options (a SACK too short for tshark's D-SACK read): no more
        return nodes + (_analysis_slots(tkey, off)[:1] if tkey else [])
    if tkey:
        nodes += _analysis_slots(tkey, off)
    if mp is not None and mp.analysis is not None:
        nodes.append(mptcp_option.analysis_item(mp.analysis, off))
    if seglen:
        nodes += _payload_slots(d, seglen, hl)
    return nodes


def _head_slots(t, off: int, hl: int, fl: int, sc, ack_nonzero: bool = False) -> list:
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
                  Slot(f.tcp_ack, "Acknowledgment Number: %(ack)d" + rel, "ack", 8, 4, kids=_ack_nonzero(off)
                       if ack_nonzero else ())]
    else:
        nodes.append(Slot(f.tcp_seq_raw, "Sequence Number (raw): %(seq_raw)d", "seq_raw", 4, 4))
    nodes += [Slot(f.tcp_ack_raw, "Acknowledgment number (raw): %(ack_raw)d", "ack_raw", 8, 4),
              hdr_len_item(off, hl),
              flags_item(t, off, fl),
              Slot(f.tcp_window_size_value, "Window: %(win)d", "win", 14, 2)]
    if t:
        nodes.append(Slot(f.tcp_window_size, "[Calculated window size: %(window)d]", "window", 14, 2, _G))
        if sc != -3:
            nodes.append(scale_factor_item(off, sc))
    nodes += [Slot(f.tcp_checksum, "Checksum: 0x%(csum)04x [unverified]", "csum", 16, 2),
              Item(f.tcp_checksum_status, 2, off + 16, 0, "[Checksum Status: Unverified]", generated=True),
              Slot(f.tcp_urgent_pointer, "Urgent Pointer: %(urp)d", "urp", 18, 2)]
    return nodes


def _ack_nonzero(off: int) -> list:
    """tshark's note on an acknowledgment number without the ACK flag."""
    holder = Item(None, None, off + 8, 4, None)
    tcp_expert(holder, "tcp.ack.nonzero")
    return holder.children


def _analysis_slots(t, off: int) -> list:
    """[Timestamps] and the SEQ/ACK analysis: `t` = (server port, FIN role, ACKed frame (0 no, 1 with an RTT of
    0, 2 with its RTT), iRTT?, bytes in flight?, PSH bytes?, analysis flags, RTO?, duplicate ACK number, an
    analysis record with nothing else to show?)."""
    nodes = [Slot(None, "Timestamps", None, 0, 0, _G, TextItem, (
        Slot(f.tcp_time_relative, "[Time since first frame in this TCP stream: %(rel)s seconds]", "rel", 0, 0, _G,
             plain=True),
        Slot(f.tcp_time_delta, "[Time since previous frame in this TCP stream: %(delta)s seconds]", "delta", 0, 0,
             _G, plain=True)))]
    _, _, acked, irtt, bif, push, kinds, rto, dupacks, record = t
    kids = []
    if acked:
        kids.append(Slot(f.tcp_analysis_acks_frame, "[This is an ACK to the segment in frame: %(acks_frame)d]",
                         "acks_frame", 0, 0, _G))
    if acked == 2:              # an RTT of 0 is not shown (tcp.c: only a non-zero ta->ts)
        kids.append(Slot(f.tcp_analysis_ack_rtt, "[The RTT to ACK the segment was: %(ack_rtt)s seconds]", "ack_rtt",
                         0, 0, _G, plain=True))
    if irtt:
        kids.append(Slot(f.tcp_analysis_initial_rtt, "[iRTT: %(irtt)s seconds]", "irtt", 0, 0, _G, plain=True))
    if bif:
        kids.append(Slot(f.tcp_analysis_bytes_in_flight, "[Bytes in flight: %(bif)d]", "bif", 0, 0, _G))
    if bif and push:            # (tcp.c prints the PSH count only beside a non-zero bytes in flight)
        kids.append(Slot(f.tcp_analysis_push_bytes_sent, "[Bytes sent since last PSH flag: %(push)d]", "push",
                         0, 0, _G))
    if kinds:
        kids += _flags_slots(kinds, off, rto, dupacks)
    if acked or bif or push or kinds or record:   # tshark shows the tree (and the iRTT) for an analysis record
        nodes.append(Slot(f.tcp_analysis, "SEQ/ACK analysis", None, 0, 0, _G, kids=kids))
    return nodes


def _flags_slots(kinds, off: int, rto: bool, dupacks) -> list:
    """TCP Analysis Flags, as tshark prints them: each flag's expert on the item (a retransmission with its RTO
    items, a spurious or fast one with the retransmission expert too, a duplicate ACK's own item), then, after
    it in the analysis tree, a duplicate ACK's number and frame (its expert there)."""
    flags = Item(f.tcp_analysis_flags, None, off, 0, "TCP Analysis Flags", generated=True)
    rto_at = None               # the RTO items follow the retransmission's expert, before any later flag's
    for kind in kinds:
        if kind == "duplicate_ack":
            flags.add(Item(f.tcp_analysis_duplicate_ack, None, off, 0, "This is a TCP duplicate ack", generated=True))
            continue
        tcp_expert(flags, "tcp.analysis." + kind)
        if kind == "fast_retransmission":
            tcp_expert(flags, "tcp.analysis.retransmission")
        if kind == "retransmission" and rto and "spurious_retransmission" not in kinds:
            rto_at = len(flags.children)
    if rto_at is None:
        out = [flags]
    else:
        rto_slots = (Slot(f.tcp_analysis_rto, "[The RTO for this segment was: %(rto)s seconds]", "rto", 0, 0, _G,
                          plain=True),
                     Slot(f.tcp_analysis_rto_frame, "[RTO based on delta from frame: %(rto_frame)d]", "rto_frame",
                          0, 0, _G))
        kids = flags.children
        out = [Slot(f.tcp_analysis_flags, "TCP Analysis Flags", None, 0, 0, _G,
                    kids=(*kids[:rto_at], *rto_slots, *kids[rto_at:]))]
    if dupacks is not None:
        holder = Item(None)
        tcp_expert(holder, "tcp.analysis.duplicate_ack", dupacks)
        out += [Item(f.tcp_analysis_duplicate_ack_num, dupacks, off, 0, f"[Duplicate ACK #: {dupacks}]",
                     generated=True),
                Slot(f.tcp_analysis_duplicate_ack_frame, "[Duplicate to the ACK in frame: %(dupack_frame)d]",
                     "dupack_frame", 0, 0, _G, kids=holder.children)]
    return out


def _options_node(data: bytes, off: int, end: int, ts_at: int | None, syn: bool, sack=None, mp=None):
    """The options item: static, but for a timestamps option's values (slots), the one that changes in every
    segment of a connection."""
    holder = Item(None)
    options_item(holder, data, off, end, syn, sack, mp)
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


def _payload_slots(d, seglen: int, hl: int) -> list:
    """The payload, and what a tcp_dissect_pdus framing (websocket) adds after it, in desegment_tcp's order: the
    [PDU Size] of each PDU in a buffer reassembled here, "TCP segment data" for the bytes of this segment that
    completed it (d.reassembled); then, from the second round over the rest of the segment, the [PDU Size] of each
    PDU in it, and "TCP segment data" for the bytes kept for a later PDU (d.segment_data)."""
    a = hl * 4
    nodes = [Slot(f.tcp_payload, f"TCP payload (%(seglen)d byte{'s' if seglen != 1 else ''})", "payload", a,
                  "captured")]
    pdus = getattr(d, "pdu_sizes", None) or ()
    done = completed_here(d)
    first_round = reassembled_pdus(pdus) if done else -1
    for i in range(len(pdus)):
        if i == first_round:
            nodes.append(_completed_slot(done))
        # each over its PDU's bytes, as tcp_dissect_pdus adds it (empty when the PDU runs past the segment)
        nodes.append(Slot(f.tcp_pdu_size, f"[PDU Size: %(pdu{i})d]", f"pdu{i}", f"pduat{i}", f"pdulen{i}", _G,
                          source=f"pdusrc{i}"))
    if first_round == len(pdus):
        nodes.append(_completed_slot(done))
    if d.reassembled_in is not None:          # -2: the later frame that completes this segment's PDU
        nodes.append(Slot(f.tcp_reassembled_in, "[Reassembled PDU in frame: %(rin)d]", "rin", 0, 0, _G))
    t = d.tcp
    if not d.cut and (d.repeats_pdu_start or (t is not None and "retransmission" in t.flags
                                              and "spurious_retransmission" not in t.flags)):
        # desegment_tcp: a segment TCP's analysis calls a retransmission goes to no subdissector; any late one
        # (spurious, out-of-order, fast) where a multi-segment PDU of tshark's own reassembly starts shows so too
        # (a segment cut by the snap length is not desegmented: dissect_tcp_payload has no can_desegment)
        label = f"Retransmitted TCP segment data (%(seglen)d byte{'s' if seglen != 1 else ''})"
        nodes.append(Slot(f.tcp_segment_data, label, "payload", a, "captured"))
        return nodes
    n = getattr(d, "segment_data", 0)
    if n:
        nodes.append(Slot(f.tcp_segment_data, f"TCP segment data (%(keptn)d byte{'s' if n != 1 else ''})", "keptdata",
                          "keptat", "keptn"))
    return nodes


def _completed_slot(n: int) -> Slot:
    return Slot(f.tcp_segment_data, f"TCP segment data (%(segn)d byte{'s' if n != 1 else ''})", "segdata", "segat",
                "segn")


def completed_here(d) -> int:
    """How many of the segment's first bytes complete a PDU reassembled from several segments (its last part), or
    went to one that stays incomplete (d.segment_head): desegment_tcp's first round."""
    return d.reassembled[-1][0][-1][1] if getattr(d, "reassembled", None) else getattr(d, "segment_head", 0)


def reassembled_pdus(pdus) -> int:
    """How many of the segment's PDUs lie in a buffer reassembled here (its own ones are plain sizes)."""
    return sum(1 for size in pdus if size.__class__ is tuple)
