"""TCP (tshark's packet-tcp.c): header, options, conversation analysis, reassembled-PDU summary."""
from __future__ import annotations

import struct

from ...engine import tree
from ...engine.template import Slot, SlotLayer, TemplateCache
from ...engine.tree import ExpertInfo, HiddenItem, Item, Layer, TextItem
from .. import fields as f
from . import mptcp as mptcp_option
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
            _tcp_expert(o.add(TextItem(None, None, q, left, f.TCP_EXPERTS["tcp.suboption_malformed"][2])),
                        "tcp.suboption_malformed")
            break
        le = (struct.unpack_from("!I", data, q)[0] - base) & 0xFFFFFFFF
        o.add(Item(f.tcp_sack_le, le, q, 4, f"left edge = {le} (relative)"))
        left -= 4
        if left < 4:
            _tcp_expert(o.add(TextItem(None, None, q, left, f.TCP_EXPERTS["tcp.suboption_malformed"][2])),
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
    _tcp_expert(o.add(TextItem(None, None, p + 2, 8, "D-SACK Sequence")), "tcp.options.sack.dsack")
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
    _tcp_expert(item.add(TextItem(None, None, p, n, message)), "tcp.option.len.invalid", message)


def _tcp_options(top: Item, data: bytes, off: int, end: int, syn: bool = False, sack=None, mp=None) -> None:
    """The options item, as tshark 4.0's tcp_dissect_options makes it (_option_items), and after a walk that
    reached the end, the expert of a SYN without MSS."""
    opts = data[off:end]
    item = top.add(Item(f.tcp_options, opts, off, end - off, ""))
    names: list[str] = []
    try:
        _, whole = _option_items(item, data, off, end, syn, names, sack=sack, mp=mp)
    except _CutBeforeOption:    # the snap length cut the options before an option began
        whole = False
    except (IndexError, struct.error):  # tshark's exception in an option (capture.network: the layer ends there)
        names.pop()             # (the option's name is appended after its own dissection)
        whole = False
    if whole and syn and f.TCP_OPTIONS[2][1] not in names:
        _tcp_expert(item, "tcp.options.mss.absent")
    item.label = f"Options: ({end - off} bytes), " + ", ".join(names) if names else f"Options: ({end - off} bytes)"


def _option_items(item: Item, data: bytes, p: int, end: int, syn: bool,
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
            _tcp_expert(o, "tcp.options.mss.present")
        o.add(Item(f.tcp_option_kind, kind, p, 1, f"Kind: {OPTION_KINDS.get(kind, 'Unknown')} ({kind})"))
        length = o.add(Item(f.tcp_option_len, n, p + 1, 1, f"Length: {n}"))
        if n != want:
            _tcp_expert(length, "tcp.option.len.invalid", f"option length should be {want}")
        elif kind == 5:
            if not _sack_values(o, data, p, n, sack or (0, 0)):
                raise IndexError("a D-SACK edge past the option")    # tshark's exception (network.sack_throws)
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


def _ack_nonzero(off: int) -> list:
    """tshark's note on an acknowledgment number without the ACK flag."""
    holder = Item(None, None, off + 8, 4, None)
    _tcp_expert(holder, "tcp.ack.nonzero")
    return holder.children


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
    _, _, acked, irtt, bif, push, kinds, rto, dupacks = t
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
        kids += _flags_slots(kinds, off, rto, dupacks)
    if acked or bif or push or kinds:   # tshark shows the tree (and the iRTT) only with something to say
        nodes.append(Slot(f.tcp_analysis, "SEQ/ACK analysis", None, 0, 0, _G, kids=kids))
    return nodes


def _flags_slots(kinds, off: int, rto: bool, dupacks) -> list:
    """TCP Analysis Flags, as tshark prints them: each flag's expert on the item (a retransmission with its RTO
    items, a spurious or fast one with the retransmission expert too, a duplicate ACK's own item), then, after
    it in the analysis tree, a duplicate ACK's number and frame (its expert there)."""
    flags = Item(f.tcp_analysis_flags, None, off, 0, "TCP Analysis Flags", generated=True)
    rto_slots = []
    for kind in kinds:
        if kind == "duplicate_ack":
            flags.add(Item(f.tcp_analysis_duplicate_ack, None, off, 0, "This is a TCP duplicate ack", generated=True))
            continue
        _tcp_expert(flags, "tcp.analysis." + kind)
        if kind == "fast_retransmission":
            _tcp_expert(flags, "tcp.analysis.retransmission")
        if kind == "retransmission" and rto and "spurious_retransmission" not in kinds:
            rto_slots = [Slot(f.tcp_analysis_rto, "[The RTO for this segment was: %(rto)s seconds]", "rto", 0, 0, _G),
                         Slot(f.tcp_analysis_rto_frame, "[RTO based on delta from frame: %(rto_frame)d]", "rto_frame",
                              0, 0, _G)]
    out = [Slot(f.tcp_analysis_flags, "TCP Analysis Flags", None, 0, 0, _G, kids=(*flags.children, *rto_slots))
           if rto_slots else flags]
    if dupacks is not None:
        holder = Item(None)
        _tcp_expert(holder, "tcp.analysis.duplicate_ack", dupacks)
        out += [Item(f.tcp_analysis_duplicate_ack_num, dupacks, off, 0, f"[Duplicate ACK #: {dupacks}]",
                     generated=True),
                Slot(f.tcp_analysis_duplicate_ack_frame, "[Duplicate to the ACK in frame: %(dupack_frame)d]",
                     "dupack_frame", 0, 0, _G, kids=holder.children)]
    return out


def _options_node(data: bytes, off: int, end: int, ts_at: int | None, syn: bool, sack=None, mp=None):
    """The options item: static, but for a timestamps option's values (slots), the one that changes in every
    segment of a connection."""
    holder = Item(None)
    _tcp_options(holder, data, off, end, syn, sack, mp)
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
        nodes.append(Slot(f.tcp_pdu_size, f"[PDU Size: %(pdu{i})d]", f"pdu{i}", f"pduat{i}", f"pdulen{i}", _G,
                          source=f"pdusrc{i}"))
    t = d.tcp
    if t is not None and "retransmission" in t.flags and "spurious_retransmission" not in t.flags:
        # desegment_tcp: a segment TCP's analysis calls a retransmission goes to no subdissector
        label = f"Retransmitted TCP segment data (%(seglen)d byte{'s' if seglen != 1 else ''})"
        nodes.append(Slot(f.tcp_segment_data, label, "payload", a, "seglen"))
        return nodes
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
    _port_items(top, off, sport, dport)
    if t is not None:
        _conversation_items(top, off, t)
    seglen = segment - hl * 4
    top.add(Item(f.tcp_len, seglen, off + 12, 1, f"[TCP Segment Len: {seglen}]", generated=True))
    if t is not None:
        top.add(Item(f.tcp_seq, t.seq, off + 4, 4, f"Sequence Number: {t.seq}    (relative sequence number)"))
    top.add(Item(f.tcp_seq_raw, seq, off + 4, 4, f"Sequence Number (raw): {seq}"))
    top.add(_hdr_len_item(off, hl))
    return Layer("tcp", top)


_HEADER = struct.Struct("!HHIIHHHH").unpack_from
_TS = struct.Struct("!II").unpack_from


def quoted_tcp_item(d, info, data: bytes, end: int) -> Item:
    """The TCP segment an ICMP error quotes (tshark's TCP with in_error_pkt): its ports and raw sequence number
    first; with a whole header, the rest as for a short segment (no length, analysis), its options and the
    payload's bytes."""
    off, _, sport, _, dport = info.quoted_tcp
    top = proto_item(f.tcp, off, min(end, off + 20) - off, f"Transmission Control Protocol, Src Port: {sport}, "
                                                           f"Dst Port: {dport}")
    _port_items(top, off, sport, dport)
    if end < off + 8:
        return top
    seq = struct.unpack_from("!I", data, off + 4)[0]
    top.add(Item(f.tcp_seq, seq, off + 4, 4, f"Sequence Number: {seq}"))
    t = info.tcp
    if t is None or end < off + 20:
        return top
    _, _, _, ack, offflags, win, csum, urp = _HEADER(data, off)
    hl, fl = offflags >> 12, offflags & 0x0FFF
    top.label += f", Seq: {seq}" + (f", Ack: {ack}" if fl & 0x10 else "")
    _conversation_items(top, off, t)
    _ack_to_window(top, off, ack, hl, fl, sport, dport, win, t)
    top.add(Item(f.tcp_checksum, csum, off + 16, 2, f"Checksum: 0x{csum:04x} [unverified]"))
    top.add(Item(f.tcp_checksum_status, 2, off + 16, 0, "[Checksum Status: Unverified]", generated=True))
    top.add(Item(f.tcp_urgent_pointer, urp, off + 18, 2, f"Urgent Pointer: {urp}"))
    if hl > 5 and off + hl * 4 <= end:
        _tcp_options(top, data, off + 20, off + hl * 4, bool(fl & 0x02))
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
        _tcp_expert(ack_item, "tcp.ack.nonzero")
    top.add(Item(f.tcp_ack_raw, ack, off + 8, 4, f"Acknowledgment number (raw): {ack}"))
    top.add(_hdr_len_item(off, hl))
    server = (dport if fl & 0x10 == 0 else sport) if fl & 0x02 else None
    top.add(_flags_item((server, t.fin_role) if t is not None else None, off, fl))
    if t is not None:
        _window_items(top, off, win, t.win_scale)
    else:
        top.add(Item(f.tcp_window_size_value, win, off + 14, 2, f"Window: {win}"))


def _window_items(top: Item, off: int, win: int, sc) -> None:
    """Window, [Calculated window size] (unscaled: tshark did not reach its scaling) and the scaling factor."""
    top.add(Item(f.tcp_window_size_value, win, off + 14, 2, f"Window: {win}"))
    top.add(Item(f.tcp_window_size, win, off + 14, 2, f"[Calculated window size: {win}]", generated=True))
    if sc != -3:
        text = {-1: "-1 (unknown)", -2: "-2 (no window scaling used)"}.get(sc, str(1 << sc) if sc >= 0 else str(sc))
        top.add(Item(f.tcp_window_size_scalefactor, (1 << sc) if sc >= 0 else sc, off + 14, 2,
                     f"[Window size scaling factor: {text}]", generated=True))


def _timestamps(top: Item, off: int, t) -> None:
    stamps = top.add(TextItem(None, None, off, 0, "Timestamps", generated=True))
    stamps.add(Item(f.tcp_time_relative, ns_text(t.rel_ns), off, 0, f"[Time since first frame in this TCP stream: "
                                                                   f"{ns_text(t.rel_ns)} seconds]", generated=True))
    stamps.add(Item(f.tcp_time_delta, ns_text(t.delta_ns), off, 0, f"[Time since previous frame in this TCP stream: "
                                                                  f"{ns_text(t.delta_ns)} seconds]", generated=True))


def _short_layer(d, data: bytes, off: int, length: int, short: str) -> Layer:
    """A data offset past the segment's end: tshark 4.0 says "Short segment" and shows the header with raw
    sequence numbers and window, its options as far as the bytes go (then an exception: [Malformed Packet]),
    and no length, analysis or payload."""
    sport, dport, seq, ack, offflags, win, csum, urp = _HEADER(data, off)
    hl, fl, t = offflags >> 12, offflags & 0x0FFF, d.tcp
    top = proto_item(f.tcp, off, length, f"Transmission Control Protocol, Src Port: {sport}, Dst Port: {dport}, "
                                         f"Seq: {seq}" + (f", Ack: {ack}" if fl & 0x10 else ""))
    _port_items(top, off, sport, dport)
    if t is not None:
        _conversation_items(top, off, t)
    _tcp_expert(top.add(TextItem(None, None, off, 0, f.TCP_EXPERTS["tcp.short_segment"][2])), "tcp.short_segment")
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
            _option_items(item, data[:there], off + 20, off + hl * 4, bool(fl & 0x02), names)
        except (IndexError, struct.error):
            if short and names:       # an option cut inside its own bytes: not named
                names.pop()
        if names:
            item.label += ", " + ", ".join(names)
    return Layer("tcp", top)


def _cut_layer(d, data: bytes, off: int, hl: int) -> Layer:
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
        _tcp_expert(ack_item, "tcp.ack.nonzero")
    top.add(Item(f.tcp_ack_raw, ack, off + 8, 4, f"Acknowledgment number (raw): {ack}"))
    top.add(_hdr_len_item(off, hl // 4))
    top.add(_flags_item((t.server_port if fl & 0x02 else None, t.fin_role), off, fl))
    top.add(Item(f.tcp_window_size_value, win, off + 14, 2, f"Window: {win}"))
    top.add(Item(f.tcp_window_size, t.window, off + 14, 2, f"[Calculated window size: {t.window}]", generated=True))
    sc = t.win_scale
    if sc != -3:
        text = {-1: "-1 (unknown)", -2: "-2 (no window scaling used)"}.get(sc, str(1 << sc) if sc >= 0 else str(sc))
        top.add(Item(f.tcp_window_size_scalefactor, (1 << sc) if sc >= 0 else sc, off + 14, 2,
                     f"[Window size scaling factor: {text}]", generated=True))
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
        _tcp_options(top, data, off + 20, off + hl, bool(fl & 0x02), mp=d.mptcp.options if d.mptcp else None)
    _timestamps(top, off, t)
    return Layer("tcp", top)


def cut_protocol(data: bytes, off: int, hl: int) -> str:
    """The protocol whose dissection the snap length cut in TCP options data[off + 20:off + hl]: "MPTCP" when
    it is an MPTCP option whose kind and length were captured, else "TCP" ([Packet size limited during capture:
    X truncated])."""
    p, end = off + 20, off + hl
    while p + 1 < min(end, len(data)):
        kind = data[p]
        if kind in (0, 1):
            p += 1
            continue
        n = data[p + 1]
        if n < 2 or p + n > end:
            return "TCP"
        if p + n > len(data):
            return "MPTCP" if kind == 30 else "TCP"
        p += n
    return "TCP"


def sack_throws(data: bytes, p: int, end: int) -> bool:
    """Whether tshark's walk over the options data[p:end] meets a SACK option too short for one block, whose
    D-SACK read then runs past it (an exception: [Malformed Packet])."""
    for _, kind, n in option_spans(data, p, end):
        if n is None:
            return False
        if kind == 5 and n < 10:
            return True
    return False


def short_exception(data: bytes, p: int, end: int, there: int) -> str:
    """Why tshark's walk over the options data[p:end] of a short segment (bytes only up to `there`) throws:
    "" when it reads a kind or length byte past them (ReportedBoundsError: "[Malformed Packet]"), tshark's
    ContainedBoundsError text when an option whose length fits the options runs past them (its own dissector
    reads from a subset longer than the bytes)."""
    while p < end:
        if p >= there:
            return ""
        kind = data[p]
        if kind in (0, 1):
            p += 1
            continue
        if p + 1 >= min(end, there):
            return ""
        n = data[p + 1]
        if n < 2 or p + n > end:
            return ""
        if p + n > there:
            return "length of contained item exceeds length of containing item"
        p += n
    return ""


def tcp_layer(d, data: bytes, off: int, length: int, segment: int | None = None, short: str | None = None):
    if short is not None:
        return _short_layer(d, data, off, length, short)
    if segment == "cut":
        return _cut_layer(d, data, off, length)
    if not full(data, off, length, 20):
        return Layer("tcp", proto_item(f.tcp, off, length, "Transmission Control Protocol"))
    sport, dport, seq, ack, offflags, win, csum, urp = _HEADER(data, off)
    hl = offflags >> 12
    fl = offflags & 0x0FFF
    if hl < 5:
        return _bogus_layer(d, data, off, hl, segment if segment is not None else length)
    payload = d.payload
    seglen = len(payload) + d.cut if d.transport == "tcp" else 0
    t = d.tcp
    if t is not None:
        shown_seq, shown_ack, sc, c = t.seq, t.ack, t.win_scale, t.completeness
        tkey = (t.server_port if fl & 0x02 else None, t.fin_role, t.acks_frame is not None, t.irtt_ns is not None,
                t.bif is not None, t.push is not None, tuple(t.flags) if t.flags else (), t.rto_ns is not None,
                t.dupack_num)
        vals = {"sport": sport, "dport": dport, "seglen": seglen, "seq_raw": seq, "ack_raw": ack, "win": win,
                "csum": csum, "urp": urp, "stream": t.stream, "c": c, "ctext": COMPLETENESS.get(c, "Incomplete"),
                "seq": shown_seq, "nxtseq": t.nxtseq, "ack": shown_ack, "window": t.window,
                "rel": ns_text(t.rel_ns), "delta": ns_text(t.delta_ns), "acks_frame": t.acks_frame, "bif": t.bif,
                "push": t.push}
        if t.rto_ns is not None:
            vals["rto"], vals["rto_frame"] = ns_text(t.rto_ns), t.rto_frame
        if t.dupack_num is not None:
            vals["dupack_frame"] = t.dupack_frame
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
        if 5 in options or 30 in options:   # SACK edges are relative to the acknowledged side: in the key
            sack = ((ack - t.ack) & 0xFFFFFFFF if t is not None and fl & 0x10 else 0, shown_ack)
            opts_key = (opts_key, sack, bool(d.problems) and d.problems[-1][1].abbrev == "_ws.malformed.expert")
    pdus = d.pdu_sizes or ()
    segn = 0
    if seglen:
        vals["payload"] = payload
        if pdus:
            at = hl * 4
            for i, size in enumerate(pdus):
                if size.__class__ is tuple:    # a PDU in a reassembled buffer (source, offset): its item spans it there
                    size, src, pos = size
                    vals[f"pdu{i}"], vals[f"pdusrc{i}"], vals[f"pduat{i}"], vals[f"pdulen{i}"] = size, src, pos - off, size
                else:
                    vals[f"pdu{i}"], vals[f"pduat{i}"], vals[f"pdusrc{i}"] = size, at, 0
                    vals[f"pdulen{i}"] = size if at + size <= hl * 4 + seglen else 0
                at += size
        segn = d.reassembled[-1][0][-1][1] if d.reassembled else d.segment_data
        if segn:
            at = d.segment_data_at
            vals["segn"], vals["segat"] = segn, hl * 4 + at
            vals["segdata"] = payload if segn == seglen else payload[at:at + segn]
    shown = seglen if payload else 0        # no payload item when the snap length left none of it
    key = (off, hl, fl, sc, tkey, opts_key, shown > 0, seglen == 1, len(pdus), segn > 0, segn == 1,
           bool(ack) and not fl & 0x10, d.mptcp.key() if d.mptcp is not None else None)
    tpl = TEMPLATES.memo.get(key)
    if tpl is None:
        tpl = TEMPLATES.get(key, lambda: _tcp_nodes(d, data, off, hl, fl, sc, tkey, opts_key, ts_at, shown))
    label = (f"Transmission Control Protocol, Src Port: {sport}, Dst Port: {dport}, Seq: {shown_seq}" +
             (f", Ack: {shown_ack}" if fl & 0x10 else "") + f", Len: {seglen}")
    return SlotLayer("tcp", f.tcp, off, length, label, tpl, vals)


def _tcp_nodes(d, data: bytes, off: int, hl: int, fl: int, sc, tkey, opts_key, ts_at, seglen: int) -> list:
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


def _flag_expert(bit: Item, mask: int, fl: int, t) -> None:
    if mask == 0x02:
        _tcp_expert(bit, "tcp.connection.synack" if fl & 0x10 else "tcp.connection.syn", t[0])
    elif mask == 0x01:
        _tcp_expert(bit, "tcp.connection.fin")
    elif mask == 0x04:
        _tcp_expert(bit, "tcp.connection.rst")


def tcp_segments_layer(pieces, whole: bytes, source: int = 0) -> Layer:
    """tshark's summary of a PDU reassembled from segments, shown in the frame that completed it: its items span
    their bytes in the reassembled buffer (data source `source`), each segment its own share."""
    parts = ", ".join(f"#{frame}({length})" for frame, length in pieces)
    n = len(whole)
    top = Item(f.tcp_segments, None, 0, n, f"[{len(pieces)} Reassembled TCP Segments ({n} bytes): {parts}]",
               True, source)
    at = 0
    for frame, length in pieces:
        top.add(Item(f.tcp_segment, frame, at, length,
                     f"[Frame: {frame}, payload: {at}-{at + length - 1} ({length} bytes)]", True, source))
        at += length
    top.add(Item(f.tcp_segment_count, len(pieces), 0, 0, f"[Segment count: {len(pieces)}]", True, source))
    top.add(Item(f.tcp_reassembled_length, n, 0, 0, f"[Reassembled TCP length: {n}]", True, source))
    top.add(Item(f.tcp_reassembled_data, whole, 0, n, None, True, source))     # tshark's bytes label (cut)
    return Layer("tcp.segments", top)


# -- the Info column --------------------------------------------------------------------------------------------

# analysis flag -> the tag tshark puts in front of the Info column (col_prepend_fence: also before a game's Info)
ANALYSIS_TAGS = {"lost_segment": "[TCP Previous segment not captured] ", "out_of_order": "[TCP Out-Of-Order] ",
                 "retransmission": "[TCP Retransmission] ", "ack_lost_segment": "[TCP ACKed unseen segment] ",
                 "spurious_retransmission": "[TCP Spurious Retransmission] ",
                 "reused_ports": "[TCP Port numbers reused] ", "fast_retransmission": "[TCP Fast Retransmission] ",
                 "window_update": "[TCP Window Update] ", "window_full": "[TCP Window Full] ",
                 "keep_alive": "[TCP Keep-Alive] ", "keep_alive_ack": "[TCP Keep-Alive ACK] ",
                 "zero_window_probe": "[TCP ZeroWindowProbe] ", "zero_window": "[TCP ZeroWindow] ",
                 "zero_window_probe_ack": "[TCP ZeroWindowProbeAck] "}


def info_prefix(d) -> str:
    t = getattr(d, "tcp", None)
    if t is None or not t.flags:
        return ""
    spurious = "spurious_retransmission" in t.flags      # tagged as spurious only, though flagged as both
    return "".join(ANALYSIS_TAGS.get(kind, "") if kind != "duplicate_ack" else
                   f"[TCP Dup ACK {t.dupack_frame}#{t.dupack_num}] " for kind in reversed(t.flags)
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
    text += f" Win={win}"
    short = any(len(s) > 4 and s[0] == "tcp" for s in d.spans)     # a short segment: no length
    data = d.frame.data
    tcp_at = next((s[1] for s in reversed(d.spans) if s[0] == "tcp"), 0)
    if not short and len(data) >= tcp_at + 20:          # (a header cut before its end: tshark got no further)
        text += f" Len={len(d.payload) + d.cut}"
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
        if span[2] == 32 and data[off + 20:off + 24] == NOP_NOP_TS and len(data) >= off + 32:
            text += " TSval=%d TSecr=%d" % _TS(data, off + 24)       # Linux's options (_option_infos' result)
        elif span[2] > 20:
            base = (d.ack - t.ack) & 0xFFFFFFFF if t is not None and d.ack is not None else 0
            for option in _option_infos(data, off + 20, off + span[2], base):
                text += " " + option
    if d.problems:
        bogus = next((p.message for _, p in d.problems if p.abbrev == "tcp.bogus_header_length"), None)
        if bogus is not None:                 # tshark stops after the window: no length, no options
            return info_prefix(d) + text.split(" Len=")[0] + ", " + bogus[0].lower() + bogus[1:]
    if d.segment_data:
        text += " [TCP segment of a reassembled PDU]"
    if span is not None and len(span) == 4 and span[3] == "cut":
        # tshark's exception in the options came before the analysis was printed: no analysis tags
        return text + "[Packet size limited during capture]"
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
