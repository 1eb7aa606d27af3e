"""TCP's Info column (tshark's col_* calls in packet-tcp.c): ports, flags, relative numbers, window, length, the
options tshark lists, and the analysis tags it puts in front (also before a game protocol's Info)."""
from __future__ import annotations

import struct

from .tcp_header import flag_names
from .tcp_option_spans import NOP_NOP_TS, TSVAL_TSECR, option_spans

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


def cut_header_info(d) -> str:
    """A header the snap length cut before its flags: the ports, and tshark's note."""
    return f"{d.sport} \u2192 {d.dport}[Packet size limited during capture]"


def info(d) -> str:
    """TCP's own Info column: ports, flags, relative Seq/Ack, window, length, the options tshark lists."""
    fl, t = d.flags or 0, getattr(d, "tcp", None)
    seq, ack, win = (t.seq, t.ack, t.window) if t is not None else (d.seq, d.ack, d.window)
    text = f"{d.sport} \u2192 {d.dport} [{flag_names(fl)}] Seq={seq}"
    if fl & 0x10:
        text += f" Ack={ack}"
    text += f" Win={win}"
    short = any(len(s) > 4 and s[0] == "tcp" for s in d.spans)     # a short segment: no length
    data = d.transport_data()
    tcp_at = next((s[1] for s in reversed(d.spans) if s[0] == "tcp"), 0)
    if not short and len(data) >= tcp_at + 20:          # (a header cut before its end: tshark got no further)
        text += f" Len={len(d.payload) + d.cut}"
    span = None
    for s in reversed(d.spans):
        if s[0] == "tcp":
            span = s
            break
    if span is not None and len(data) >= span[1] + 20:
        off = span[1]
        if fl & 0x20:
            text += f" Urg={struct.unpack_from('!H', data, off + 18)[0]}"
        if span[2] == 32 and data[off + 20:off + 24] == NOP_NOP_TS and len(data) >= off + 32:
            text += " TSval=%d TSecr=%d" % TSVAL_TSECR(data, off + 24)     # Linux's options (as _option_infos)
        elif span[2] > 20:
            base = (d.ack - t.ack) & 0xFFFFFFFF if t is not None and d.ack is not None else 0
            for option in _option_infos(data, off + 20, off + span[2], base):
                text += " " + option
    if d.problems:
        bogus = next((p.message for _, p in d.problems if p.abbrev == "tcp.bogus_header_length"), None)
        if bogus is not None:                 # tshark stops after the window: no length, no options
            return info_prefix(d) + text.split(" Len=")[0] + ", " + bogus[0].lower() + bogus[1:]
    if d.segment_data or d.segment_head:
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
