"""Decode one RawFrame: link layer -> IPv4/IPv6 -> UDP/TCP, into a flat `Decoded` record.

The hot path (every packet of a 100k capture) only unpacks headers with precompiled structs and fills slots.
The packet tree (engine.tree Layers/Items) is built later and only on demand, by `Decoded.layers()`, from the
header spans recorded here; summary outputs never pay for it.

Nothing here raises on bad input: a header that does not fit or has impossible values becomes a MALFORMED
ExpertInfo on the layer where it broke, and the decode stops there with what it had.
"""
from __future__ import annotations

import struct

from ..engine.tree import ERROR, MALFORMED, PROTOCOL, REASSEMBLE, WARN, ExpertInfo, Layer
from ..reassembly.budget import over_budget
from .files import RawFrame
from .link import LINK_DECODERS
from .fields import IP_PROTOS, REASSEMBLY_ERROR
from .network import TTL_NOTE_MIN, sack_throws, transport, v4_cached, v4_text


# problems tshark files under PI_PROTOCOL (not PI_MALFORMED)
PROTOCOL_PROBLEMS = {"ip.bogus_header_length", "ip.bogus_ip_length", "ip.len.past_end", "tcp.bogus_header_length",
                     "ip.version.bad", "ipv6.version.bad"}
# problems whose Info column is not "[Malformed: ...]": the message itself, or the layer's own Info
PROBLEM_INFO = {"ip.bogus_header_length", "ip.bogus_ip_length", "ip.len.past_end", "tcp.bogus_header_length",
                "udp.length.bad"}
COLUMN_NAMES = {"ip": "IPv4", "ipv6": "IPv6", "ethertype": "ETHERTYPE", "frame": "FRAME", "ipv6.hopopts": "IPv6",
                "ipv6.dstopts": "IPv6", "ipv6.routing": "IPv6", "ipv6.fraghdr": "IPv6", "ieee8021ad": "802.1ad"}
# what an IPv6 extension header (by next-header number) puts in the Info column
EXT_INFO = {0: "IPv6 hop-by-hop options", 60: "IPv6 destination options", 43: "IPv6 routing"}
# The Info of a frame whose decode ended in an exception (tshark appends "[Malformed Packet]" to it)
EXCEPTION_INFO = {"ipv6.hopopts": "IPv6 hop-by-hop options", "ipv6.dstopts": "IPv6 destination options"}
# the IP protocols whose fragments are reassembled (_defragment): UDP, TCP, SCTP, ICMP, ICMPv6
DEFRAGMENTED = frozenset((17, 6, 132, 1, 58))


class Decoded:
    """What the standard layers say about one frame."""

    __slots__ = ("frame", "error", "network", "src", "dst", "ip_proto", "fragment", "transport", "sport",
                 "dport", "payload", "payload_offset", "seq", "ack", "flags", "window", "protocols",
                 "spans", "problems", "_layers", "reassembled", "chunks", "tcp", "tsn_bases", "chunk_marks",
                 "times", "clock", "udp", "sctp_fragments", "pdu_sizes",
                 "segment_data", "segment_data_at", "segment_head", "reassembled_in", "icmp",
                 "unclaimed", "dropped", "mptcp", "cut", "truncated", "repeats_pdu_start", "round_at",
                 "defragmented", "header_dst")

    def __init__(self, frame: RawFrame):
        self.frame = frame
        self.error: str | None = None        # first problem, as text ("unknown link type 147", ...)
        self.network: str | None = None      # "ip" / "ipv6"
        self.src: str | None = None          # network addresses, as tshark prints them
        self.dst: str | None = None
        # an IPv6 routing header's: the destination its header holds (`dst`: where the route ends, what the
        # Destination column and the conversations show; tshark's IPv6 tap counts this one: ip_tap())
        self.header_dst: str | None = None
        self.ip_proto: int | None = None     # IPv4 protocol / IPv6 last next-header
        self.fragment = False                # an IP fragment that completes no datagram: no transport decode
        self.transport: str | None = None    # "udp" / "tcp"
        self.sport: int | None = None
        self.dport: int | None = None
        self.payload = b""                   # transport payload (or the IP payload of a fragment/other proto)
        self.payload_offset = 0              # where `payload` starts in frame.data
        self.seq: int | None = None          # TCP raw sequence / ack numbers, flags (12 bits), window
        self.ack: int | None = None
        self.flags: int | None = None
        self.window: int | None = None
        self.protocols: list[str] = []       # frame.protocols, e.g. ["eth", "ethertype", "ip", "udp"]
        self.spans: list[tuple] = []         # (proto, offset, length, *extra) per header, for layers()
        self.problems: list[tuple[str, ExpertInfo]] = []  # (proto of the layer it belongs to, info)
        # TCP PDUs completed in this frame from several segments: (pieces ((frame, length), ...), data), set by
        # engine.streams; shown as tshark's "tcp.segments" layer before the game layers
        self.reassembled: list | None = None
        self.chunks: list | None = None      # SCTP: capture.sctp.Chunk per chunk
        self.tcp = None                      # TCP: capture.tcp_analysis.TcpInfo (set when decoded with a TcpTable)
        self.mptcp = None                    # TCP: capture.mptcp_analysis.FrameMptcp (a segment with MPTCP options)
        self.cut = 0                         # TCP: payload bytes on the wire past the captured ones (snap length)
        self.truncated = None                # a cut payload ended its dissector in an exception: tshark's name
                                             # of the protocol ("[Packet size limited during capture: UDP ...]")
        self.chunk_marks = None              # SCTP: per DATA chunk, how many game layers came before it (engine.streams)
        self.tsn_bases = None                # SCTP: (sender's, receiver's) relative TSN bases (capture.sctp.TsnTable)
        self.times = None                    # (first, previous, previous displayed) frame times (capture.clock)
        self.clock = None                    # the capture's capture.clock.FrameClock, if any
        self.sctp_fragments = None           # SCTP: {chunk index: [(frame, length)]} of messages completed here
        self.pdu_sizes = None                # TCP: sizes of the PDUs a tcp_dissect_pdus framing found (websocket)
        self.segment_data = 0                # TCP: bytes a tcp_dissect_pdus framing kept for a later PDU
        self.segment_data_at = 0             # ... from this offset in the payload (after the PDUs it held)
        self.segment_head = 0                # TCP: the first bytes, stored in a PDU from segments still incomplete
        # TCP: late bytes (a spurious, out-of-order or fast retransmission) where a PDU of tshark's own
        # reassembly starts (engine.streams): "Retransmitted TCP segment data", as for any other retransmission
        self.repeats_pdu_start = False
        self.round_at = None                 # TCP: the layer a second round of desegment_tcp starts at (io,phs)
        self.reassembled_in = None           # -2: the later frame that completes the TCP PDU this segment went
                                             # into, or the IP datagram of this fragment
        self.icmp = None                     # ICMP/ICMPv6: capture.icmp.IcmpInfo
        self.unclaimed = False               # a UDP payload no dissector took: tshark's "data" layer
        self.dropped = False                 # TCP's own reassembly dropped the payload (old bytes): no data layer
        self.udp = None                      # UDP: (udp.stream, ns since its first frame, since its previous one)
        # an IP datagram this frame's fragment completed (reassembly/ip_fragments.py): (pieces, its bytes, the
        # index of the first span read from those bytes, not the frame's); its payload_offset is in those bytes
        self.defragmented = None
        self._layers: list[Layer] | None = None

    def ip_tap(self) -> tuple | None:
        """(source, destination) as tshark's IP and IPv6 taps see the frame (conv, endpoints, the ip*,tree
        statistics): the addresses its header holds, not where a routing header's route ends; None without an IP
        header, or for an IPv6 fragment that completes no datagram (tshark 4.0 taps it nothing)."""
        if self.src is None or self.fragment and self.network == "ipv6":
            return None
        return self.src, self.header_dst or self.dst

    def transport_data(self) -> bytes:
        """The bytes the transport header's span and payload_offset refer to: the frame's, or those of the IP
        datagram its fragment completed."""
        return self.frame.data if self.defragmented is None else self.defragmented[1]

    def reassembled_source(self) -> str:
        """The data source name of the datagram its fragment completed."""
        return "Reassembled IPv6" if self.network == "ipv6" else "Reassembled IPv4"

    def displayed(self, shown: bool) -> None:
        """Report whether this frame was displayed (passed the display filter): frame.time_delta_displayed and
        `-t dd` of the next frames count from the last displayed one."""
        if self.clock is not None:
            self.clock.displayed(self.frame.ts_ns, shown)

    def plain_info(self) -> str:
        """The Info column of a frame no game dissector claimed (the innermost standard layer's)."""
        if self.error:
            return f"[Malformed: {self.error}]"
        if self.cut_before_ports():
            return (self._v6_ext_info() if self.network == "ipv6" else "") + "[Packet size limited during capture]"
        last = self.spans[-1] if self.spans else ()
        if last and last[0] in ("vlan", "ieee8021ad") and last[-1] == "cut":
            from .layers.eth import tag_info
            return (tag_info(last[0], self.frame.data, last[1]) if last[2] >= 2 else "") + \
                "[Packet size limited during capture]"
        for proto, problem in self.problems:
            if problem.abbrev == "_ws.malformed.expert":
                if proto == "udp" and self.sport is not None:     # (network._short_udp: its ports were read)
                    return (_UDP_INFO or _udp_info())(self)
                if proto == "sctp":                 # a chunk of length 0: the chunks before it, then the note
                    from .sctp import info
                    return info(self) + "[Malformed Packet]"
                if proto in ("tcp", "mptcp"):   # a short segment, an option: TCP's Info as far as it got
                    from .layers.tcp_info import info
                    why = self.exception_reason(proto)
                    return info(self) + (f"[Malformed Packet: {why}]" if why else "[Malformed Packet]")
                return EXCEPTION_INFO.get(proto, "") + "[Malformed Packet]"
            if problem.abbrev == "ip.bogus_header_length":
                return problem.message
            if problem.abbrev == "ip.bogus_ip_length":
                span = next(sp for sp in self.spans if sp[0] == "ip")
                tlen = struct.unpack_from("!H", self.frame.data, span[1] + 2)[0]
                hl = (self.frame.data[span[1]] & 15) * 4
                return f"Bogus IP length ({tlen}, less than header length {hl})"
        if self.transport == "tcp":
            if self.flags is not None:
                return (_TCP_INFO or _tcp_info())(self) + (self.reassembly_note() if self.dropped else "")
            from .layers.tcp_info import cut_header_info        # (rare: the snap length cut the header short)
            return cut_header_info(self)
        if self.transport == "udp" or self.spans and self.spans[-1][0] == "udp" and self.spans[-1][-1] == "cut":
            return (_UDP_INFO or _udp_info())(self)
        if self.transport == "sctp":
            from .sctp import info
            return info(self)
        if self.icmp is not None:
            from .icmp import info_column
            return info_column(self)
        if self.ip_proto == 59 and self.network == "ipv6" and not self.fragment:
            return "IPv6 no next header"
        if self.fragment:
            return self._v6_fragment_info() if self.network == "ipv6" else self._v4_fragment_info()
        if self.protocols and self.protocols[-1] == "arp":
            from .layers.arp import info
            return info(self.frame.data, next(sp[1] for sp in self.spans if sp[0] == "arp"))
        return ""

    def cut_before_ports(self) -> bool:
        """The snap length cut an IP header, or a UDP/TCP one before its ports (capture.network.cut): the Info
        column is tshark's note alone, the Protocol column the IP layer's."""
        last = self.spans[-1] if self.spans else ()
        return bool(last) and last[-1] == "cut" and (last[0] in ("ip", "ipv6", "ipv6.ext") or last[0] in ("udp", "tcp")
                                                     and last[2] < 4 or last[0] == "sctp" and last[2] < 12)

    def address_columns(self) -> tuple[str, str]:
        """The Source and Destination columns: network addresses, else (as tshark) the Ethernet ones (each on
        its own: a cut IP header may have given its source only)."""
        if self.dst is not None or self.frame.linktype != 1 or len(self.frame.data) < 12:
            return self.src or "", self.dst or ""
        from . import manuf
        data = self.frame.data
        src, dst = (manuf.resolved(a) or a.hex(":") for a in (data[6:12], data[0:6]))
        return self.src or src, dst

    def protocol_column(self) -> str:
        """The Protocol column of a frame no game dissector claimed: its innermost standard protocol's short name
        (an ICMP error's quoted datagram does not count)."""
        if self.icmp is not None:
            return "ICMPv6" if self.icmp.v6 else "ICMP"
        if self.fragment or self.cut_before_ports() or self.spans and self.spans[-1][-1] == "bad" and \
                self.sport is None:
            if self.spans[-1][0] == "sctp" and self.sport is not None:
                return "SCTP"               # (its ports were read)
            return "IPv6" if self.network == "ipv6" else "IPv4"
        name = self.protocols[-1] if self.protocols else "frame"
        if name == "arp" and self.frame.data[20:22] in (b"\x00\x03", b"\x00\x04"):    # reverse ARP (Ethernet)
            return "RARP"
        return COLUMN_NAMES.get(name, name.upper())

    def _v6_ext_info(self) -> str:
        """What IPv6's extension headers put in the Info column: each one's name after " , ", a whole fragment
        header its own text instead of what came before."""
        text = ""
        for span in self.spans:
            if span[0] != "ipv6.ext":
                continue
            if span[3] == 44:
                if span[-1] != "cut":
                    text = self._v6_fragment_info()
            elif span[3] in EXT_INFO:
                text += (" , " if text else "") + EXT_INFO[span[3]]
        return text

    def _v4_fragment_info(self) -> str:
        """An IPv4 fragment's Info: one that completes no datagram (-2: with the frame that completes it)."""
        span = next(s for s in self.spans if s[0] == "ip")
        ident, frag = struct.unpack_from("!HH", self.frame.data, span[1] + 4)
        proto = self.ip_proto
        return (f"Fragmented IP protocol (proto={IP_PROTOS.get(proto, 'Unknown')} {proto}, off={(frag & 0x1FFF) * 8},"
                f" ID={ident:04x})" + (f" [Reassembled in #{self.reassembled_in}]" if self.reassembled_in else ""))

    def _v6_fragment_info(self) -> str:
        span = next((s for s in self.spans if s[0] == "ipv6.ext" and s[3] == 44), None)
        if span is None or len(self.frame.data) < span[1] + 8:
            return ""
        nxt, fo, ident = struct.unpack_from("!BxHI", self.frame.data, span[1])
        return f"IPv6 fragment (off={(fo >> 3) * 8} more={'y' if fo & 1 else 'n'} ident=0x{ident:08x} nxt={nxt})"

    def no_dissector(self) -> None:
        """No game dissector took this frame's payload: tshark hands a UDP payload to its data dissector, and a
        TCP one too unless TCP's analysis calls the segment retransmitted or out of order (decode_tcp_ports), or
        it went into a reassembly ("TCP segment data")."""
        if self.cut and self.transport == "udp" and (not self.payload or len(self.payload) < 4 <= len(self.payload)
                                                         + self.cut):
            # a cut payload: UDP's hand-off throws on one with no byte captured; on 1 to 3, the first heuristic
            # that reads 4 bytes, WireGuard's (tshark 4.0 tries its UDP heuristics in reverse name order)
            if self.payload:
                self.protocols.append("wg")
            self.truncated = "WireGuard" if self.payload else "UDP"
            return
        if not self.payload or self.error:
            return
        if self.transport == "tcp":
            t = self.tcp
            if (t is None or self.segment_data or self.reassembled or self.dropped or "retransmission" in t.flags
                    or "out_of_order" in t.flags):
                return
        elif self.transport != "udp":
            return
        self.unclaimed = True
        self.protocols.append("data")

    def exception_reason(self, proto: str) -> str:
        """The text of the exception that ended `proto`'s decode, when tshark shows one (a short TCP segment's
        ContainedBoundsError), else ""."""
        return next((s[4] for s in self.spans if s[0] == proto and len(s) > 4 and s[4] and s[4] not in ("cut", "bad")),
                    "")

    def around_data(self) -> tuple[str, str]:
        """SCTP: the Info texts of the chunks before the first DATA chunk and after the last (capture.sctp)."""
        from .sctp import around_data
        return around_data(self)

    def info_prefix(self) -> str:
        """What the standard layers put before any Info column (TCP analysis tags)."""
        if self.tcp is None or not self.tcp.flags:      # no analysis flag: no tag (and no import)
            return ""
        from .layers.tcp_info import info_prefix
        return info_prefix(self)

    def bad(self, proto: str, message: str, abbrev: str = "_ws.malformed") -> None:
        """Record a malformed header (never raises). tshark files some under PI_PROTOCOL, and sets the Info
        column its own way for some (PROBLEM_INFO); the others make the Info "[Malformed: ...]"."""
        self.problems.append((proto, ExpertInfo(abbrev, PROTOCOL if abbrev in PROTOCOL_PROBLEMS else MALFORMED,
                                                ERROR, message)))
        if self.error is None and abbrev not in PROBLEM_INFO:
            self.error = message

    def reassembly_error(self, message: str) -> None:
        """tshark's TCP reassembly threw (show_reassembly_exception): a top-level "[Reassembly error, protocol
        TCP: ...]" item with its error, and the same text after the Info column."""
        self.problems.append(("tcp", ExpertInfo("_ws.malformed.reassembly", MALFORMED, ERROR, message)))

    def reassembly_note(self) -> str:
        for _, problem in self.problems:
            if problem.abbrev == "_ws.malformed.reassembly":
                return REASSEMBLY_ERROR.format(problem.message)
        return ""

    @property
    def experts(self) -> list[ExpertInfo]:
        return [info for _, info in self.problems]

    def layers(self) -> list[Layer]:
        """The standard layers as engine.tree Layers ("frame", "eth"/"sll"/..., "ip"/"ipv6", "udp"/"tcp").

        Built on first call and cached. The frame.protocols item is made from `protocols` at that moment.
        """
        if self._layers is None:
            self._layers = (_BUILD or _layer_builder())(self)
        return self._layers

    def layers_for(self, roots, names=None) -> list[Layer]:
        """The standard layers a run reading fields under `roots` needs (capture.layers.build), uncached. `names`:
        the fields it reads; when those of the frame are only capture-record facts (frame.number ...), the frame
        layer holds only them (capture.layers.frame.frame_fields_layer)."""
        if self._layers is not None:
            return self._layers
        build = _BUILD or _layer_builder()
        if names is not None and "frame" in roots and not self.frame.comments:
            makers = (_LIGHT or _light())(names)
            if makers is not None:
                return [_FRAME_FIELDS(self, makers), *build(self, roots - _FRAME_ROOT)]
        return build(self, roots)

    def __repr__(self) -> str:
        return (f"Decoded(#{self.frame.number} {self.src}:{self.sport} -> {self.dst}:{self.dport}"
                f" {self.transport} payload={len(self.payload)}@{self.payload_offset}"
                f"{' error=' + repr(self.error) if self.error else ''})")


_BUILD = None      # capture.layers.build, imported on first use (a summary never builds a tree)
_LIGHT = _FRAME_FIELDS = None    # capture.layers.frame's light_makers and frame_fields_layer, the same way
_FRAME_ROOT = frozenset(("frame",))


def _light():
    global _LIGHT, _FRAME_FIELDS
    from .layers.frame import frame_fields_layer, light_makers
    _LIGHT, _FRAME_FIELDS = light_makers, frame_fields_layer
    return light_makers


_TCP_INFO = None   # capture.layers.tcp_info.info, imported on first use (an import statement per call costs a lookup)


def _tcp_info():
    global _TCP_INFO
    from .layers.tcp_info import info
    _TCP_INFO = info
    return info


_UDP_INFO = None   # capture.layers.udp.info, the same way


def _udp_info():
    global _UDP_INFO
    from .layers.udp import info
    _UDP_INFO = info
    return info


def _layer_builder():
    global _BUILD
    from .layers import build
    _BUILD = build
    return build


# The common case in one unpack: Ethernet + IPv4 without options + UDP header (42 bytes).
_EIU = struct.Struct("!12xHBxHxxHxBxx4s4sHHH").unpack_from
_new = object.__new__
_EIU_SPANS = (("eth", 0, 14), ("ip", 14, 20), ("udp", 34, 8))


def decode(frame: RawFrame, tcp_table=None, tsn_table=None, clock=None, udp_table=None, fragments=None) -> Decoded:
    """Decode the standard layers of one frame. Never raises for any frame content. `tcp_table`: the capture's
    capture.tcp_analysis.TcpTable, which records this frame's TCP conversation state (relative sequence numbers,
    analysis) in decode order; without one, TCP layers show only what the header says. `tsn_table`: the
    capture's capture.sctp.TsnTable (relative SCTP TSNs), likewise. `fragments`: the capture's
    reassembly.ip_fragments.IpFragments; without one, no IP datagram is reassembled."""
    data = frame.data
    if frame.linktype == 1 and len(data) >= 42:
        # Fast path, taken only when every check the general decoders make would pass; else fall through.
        # It fills each slot once (no __init__ defaults first): this is most of a summary run's decode time.
        etype, vihl, tlen, frag, proto, src, dst, sport, dport, ulen = _EIU(data)
        if (etype == 0x0800 and vihl == 0x45 and proto == 17 and not frag & 0x3FFF
                and 28 <= tlen and tlen + 14 == len(data) <= frame.length     # no trailer: link.trailer
                and 8 <= ulen <= tlen - 20 and data[22] >= TTL_NOTE_MIN and dst[0] < 224):   # (ttl_note: none)
            d = _fast_decoded(frame, src, dst, 17, sport, dport)
            d.transport = "udp"
            d.payload = data[42:34 + ulen]
            d.payload_offset = 42
            d.seq = d.ack = d.flags = d.window = None
            d.protocols = ["eth", "ethertype", "ip", "udp"]
            d.spans = list(_EIU_SPANS)
            d.clock = clock
            d.times = clock.stamp(frame.ts_ns) if clock is not None else None
            if udp_table is not None:
                udp_table.analyze(d)
            if frame.comments:
                _comment_problems(d)
            return d
        if (etype == 0x0800 and vihl == 0x45 and proto == 6 and not frag & 0x3FFF
                and 40 <= tlen and tlen + 14 == len(data) <= frame.length
                and data[22] >= TTL_NOTE_MIN and dst[0] < 224):
            d = _tcp_fast(frame, data, tlen, src, dst, tcp_table, clock)
            if d is not None:
                return d
    d = Decoded(frame)
    if frame.comments:
        _comment_problems(d)
    if clock is not None:
        d.clock = clock
        d.times = clock.stamp(frame.ts_ns)
    fn = LINK_DECODERS.get(frame.linktype)
    if fn is None:
        d.error = f"unknown link type {frame.linktype}"
        return d
    fn(d, data)
    if d.fragment and fragments is not None:
        _defragment(d, data, fragments)
    if tcp_table is not None and d.transport == "tcp" and d.window is not None and d.payload_offset:
        tcp_table.analyze(d, _wscale(d, data) if d.flags & 0x02 else None)
    elif (tcp_table is not None and d.transport == "tcp" and d.problems
          and d.problems[-1][1].abbrev in ("tcp.bogus_header_length", "_ws.malformed.expert")):
        # tshark still finds the conversation (a bogus data offset, or a short segment)
        tcp_table.header_only(d, d.problems[-1][1].abbrev != "tcp.bogus_header_length")
    elif tsn_table is not None and d.transport == "sctp":
        tsn_table.analyze(d, data)
    elif udp_table is not None and d.transport == "udp":
        udp_table.analyze(d)
    elif d.icmp is not None:
        info = d.icmp
        if (tcp_table is not None and info.quoted_tcp is not None
                and info.quoted_tcp[0] + 20 <= d.payload_offset + len(d.payload)):
            tcp_table.quoted(d)          # tshark's TCP finds the quoted segment's conversation
        if udp_table is not None:
            udp_table.icmp(d)
    return d


def _defragment(d: Decoded, data: bytes, fragments) -> None:
    """An IPv4 or IPv6 fragment of a UDP, TCP, SCTP or ICMP(v6) datagram into the capture's fragments (as tshark's
    ip.defragment and ipv6.defragment: all its bytes captured); when it completes the datagram, the frame's transport
    layer and payload are read from the whole one (`transport_data()`: the bytes its spans and offsets refer to)."""
    if d.ip_proto not in DEFRAGMENTED or not d.payload:
        return
    span = d.spans[-1]
    if d.network == "ip" and span[0] == "ip":
        off, hl = span[1], span[2]
        tlen, ident, frag = struct.unpack_from("!2xHHH", data, off)
        captured = len(d.payload) == tlen - hl
        key, offset, more = (d.src, d.dst, d.ip_proto, ident), (frag & 0x1FFF) * 8, bool(frag & 0x2000)
    elif d.network == "ipv6" and span[0] == "ipv6.ext" and span[3] == 44:
        top = next(sp for sp in d.spans if sp[0] == "ipv6")[1]
        plen = struct.unpack_from("!H", data, top + 4)[0]
        fo, ident = struct.unpack_from("!2xHI", data, span[1])
        captured = len(d.payload) == top + 40 + plen - d.payload_offset
        key, offset, more = (d.src, d.dst, 44, ident), fo & 0xFFF8, bool(fo & 1)
    else:
        return
    if not captured:
        return
    refused = fragments.refused
    done = fragments.add(key, offset, d.payload, more, d.frame.number)
    if fragments.refused != refused:     # the global reassembly budget is spent: the datagram is given up
        d.problems.append((d.network, ExpertInfo(f"{d.network}.reassembly.budget", REASSEMBLE, WARN,
                                                 over_budget())))
    if done is None:
        if fragments.learnt:             # -2: the frame the first pass saw complete it
            d.reassembled_in = fragments.learnt.get(d.frame.number)
        return
    pieces, whole = done
    d.fragment = False
    d.defragmented = (pieces, whole, len(d.spans))
    del d.protocols[-1]                  # ("data": the fragment's bytes)
    d.payload, d.payload_offset = b"", 0
    transport(d, whole, 0, len(whole), d.ip_proto)


def _fast_decoded(frame: RawFrame, src: bytes, dst: bytes, ip_proto: int, sport: int, dport: int) -> Decoded:
    """The slots the fast paths fill alike (an IPv4 datagram, not a fragment, with no problem so far)."""
    d = _new(Decoded)
    d.frame = frame
    d.error = None
    d.network = "ip"
    d.src = v4_cached(src) or v4_text(src)
    d.dst = v4_cached(dst) or v4_text(dst)
    d.ip_proto = ip_proto
    d.fragment = False
    d.sport = sport
    d.dport = dport
    d._layers = d.reassembled = d.chunks = d.tcp = d.tsn_bases = d.chunk_marks = d.udp = d.sctp_fragments = \
        d.pdu_sizes = d.icmp = d.mptcp = d.reassembled_in = d.round_at = d.defragmented = d.header_dst = None
    d.cut = 0
    d.truncated = None
    d.unclaimed = d.dropped = d.repeats_pdu_start = False
    d.segment_data = d.segment_data_at = d.segment_head = 0
    d.problems = []
    return d


_TCP = struct.Struct("!HHIIHH").unpack_from
_EIT_SPANS = (("eth", 0, 14), ("ip", 14, 20))


def _tcp_fast(frame: RawFrame, data: bytes, tlen: int, src: bytes, dst: bytes, tcp_table, clock) -> Decoded | None:
    """decode's fast path for Ethernet + IPv4 without options + TCP, every check of the general decoders passed
    (None: take the general path). Fills each slot once, as the UDP one."""
    sport, dport, seq, ack, offflags, win = _TCP(data, 34)
    hl = (offflags >> 12) << 2
    if not 20 <= hl <= tlen - 20:
        return None
    if hl > 20 and sack_throws(data, 54, 34 + hl):     # tshark's D-SACK exception: the general path marks it
        return None
    d = _fast_decoded(frame, src, dst, 6, sport, dport)
    d.transport = "tcp"
    d.seq = seq
    d.ack = ack
    d.flags = flags = offflags & 0x0FFF
    d.window = win
    d.payload = data[34 + hl:]
    d.payload_offset = 34 + hl
    d.protocols = ["eth", "ethertype", "ip", "tcp"]
    d.spans = [*_EIT_SPANS, ("tcp", 34, hl)]
    if frame.comments:
        _comment_problems(d)
    d.clock = clock
    d.times = clock.stamp(frame.ts_ns) if clock is not None else None
    if tcp_table is not None:
        tcp_table.analyze(d, _wscale(d, data) if flags & 0x02 else None)
    return d


def _comment_problems(d: Decoded) -> None:
    """pcapng packet comments: tshark's Comment experts, first in the frame (the pkt_comment layer)."""
    from ..engine.tree import COMMENT, COMMENTS_GROUP
    d.problems[:0] = [("frame", ExpertInfo("frame.comment.expert", COMMENTS_GROUP, COMMENT, c))
                      for c in d.frame.comments]


def _wscale(d: Decoded, data: bytes) -> int | None:
    """The window scale option's shift count of a SYN segment (None: no such option)."""
    from .layers.tcp_option_spans import option_spans
    span = next(s for s in reversed(d.spans) if s[0] == "tcp")
    end = span[1] + span[2]
    for p, kind, n in option_spans(data, span[1] + 20, min(end, len(data))):
        if kind == 3 and n == 3:
            return min(data[p + 2], 14)
    return -1 if end > len(data) else None      # options cut by the snap length: the scaling stays unknown
