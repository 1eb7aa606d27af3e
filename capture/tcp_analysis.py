"""TCP conversation state, as tshark's TCP dissector keeps it (epan/dissectors/packet-tcp.c, tshark 4.0, one pass):
stream index, conversation completeness, relative sequence numbers, window scaling, timestamps and the SEQ/ACK
analysis (ACKed frame, RTT, iRTT, bytes in flight, bytes since PSH, lost / out-of-order / ACKed-unseen segments).

State lives in a per-capture `TcpTable` and is recorded in decode order (`TcpTable.analyze(d)` sets `d.tcp`), so
the lazily built layers (capture/layers.py) print what tshark printed for that frame. Bounded: at most
MAX_CONNECTIONS connections and MAX_UNACKED unacknowledged segments per direction (tshark's TCP_MAX_UNACKED_SEGMENTS:
a capture of one direction only never sees the ACKs, and tshark's bytes in flight grow until that many).
"""
from __future__ import annotations

import struct
from collections import OrderedDict

MAX_CONNECTIONS = 4096
MAX_UNACKED = 10000
# all connections' unacknowledged segments together (about 130 bytes each, by tracemalloc: about 26 MB): a flood of
# one-direction connections stops storing new ones there (as one direction at MAX_UNACKED does) rather than grow
MAX_UNACKED_TOTAL = 200_000
RETIRED_LIMIT = 65536        # forgotten connections whose base sequence numbers are kept (TcpTable.retired)
FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10
M32 = 0xFFFFFFFF
OOO_THRESHOLD_NS = 3_000_000          # tshark's out-of-order threshold when no iRTT is known

# the analysis flags in the order tshark prints them (tcp_print_sequence_number_analysis): experts in this order,
# Info tags each put in front of the column, so in the reverse order
# ("spurious_retransmission" comes with "retransmission", its second expert: protodump's mark that tshark hands
# the segment to no subdissector)
PRINT_ORDER = ["reused_ports", "spurious_retransmission", "retransmission", "fast_retransmission", "out_of_order",
               "lost_segment", "ack_lost_segment", "window_update", "window_full", "keep_alive", "keep_alive_ack",
               "duplicate_ack", "zero_window_probe", "zero_window", "zero_window_probe_ack"]

# completeness bits (tcp.completeness)
C_SYN, C_SYNACK, C_ACK, C_DATA, C_FIN, C_RST = 1, 2, 4, 8, 16, 32


def seq_gt(a: int, b: int) -> bool:
    """a > b in 32-bit sequence space (tshark's GT_SEQ)."""
    return 0 < ((a - b) & M32) < 0x80000000


def seq_lt(a: int, b: int) -> bool:
    """a < b in 32-bit sequence space (tshark's LT_SEQ)."""
    return seq_gt(b, a)



def _sacked(data: bytes, p: int, end: int) -> int:
    """The bytes the SACK blocks of a segment's options (data[p:end]) report delivered, as tcp.c stores them for
    the bytes in flight: the first three blocks (MAX_TCP_SACK_RANGES less the unused slot 0)."""
    if 5 not in data[p:end]:
        return 0
    from .layers.tcp_option_spans import option_spans
    for at, kind, n in option_spans(data, p, min(end, len(data))):
        if kind == 5 and n is not None:
            total = 0
            for q in range(at + 2, at + 2 + min((n - 2) // 8, 3) * 8, 8):
                left, right = struct.unpack_from("!II", data, q)
                total += (right - left) & M32
            return total & M32
    return 0


class Flow:
    """One direction of a connection."""

    __slots__ = ("base", "nextseq", "nextseq_ns", "nextseq_frame", "maxseqtobeacked", "segments", "win_scale",
                 "push_bytes", "push_last", "valid_bif", "lastack", "lastack_ns", "window", "dupacks", "nondup_frame",
                 "lastflags", "first_ack", "sacked", "span")

    def __init__(self):
        self.base: int | None = None
        self.nextseq: int | None = None
        self.nextseq_ns = 0
        self.maxseqtobeacked: int | None = None
        self.segments: list[list] = []      # unacked [seq, nextseq, frame, ts_ns]
        self.span: tuple | None = None      # (segments, their count, base, first, last) of the last bytes in flight
        self.win_scale = -1                 # -1 unknown, -2 no scaling, else the shift
        self.push_bytes = 0
        self.push_last = False
        self.valid_bif = True
        self.lastack: int | None = None
        self.lastack_ns = 0
        self.nextseq_frame = 0
        self.window: int | None = None      # the raw window of its last segment
        self.dupacks = 0                    # duplicate ACKs in a row (-1: one that acked unseen data came first)
        self.nondup_frame = 0               # the last frame whose ACK moved on
        self.lastflags: tuple = ()          # the analysis flags of its last segment
        self.first_ack = False              # a SYN seen, no pure ACK yet: the window is not scaled yet
        self.sacked = 0                     # bytes its last segment's SACK blocks report delivered


class Connection:
    __slots__ = ("stream", "flows", "completeness", "first_ns", "last_ns", "syn_ns", "irtt_ns", "fin_by",
                 "server_port", "seen", "first_bits")

    def __init__(self, stream: int, first_ns: int):
        self.stream = stream
        self.flows: dict[tuple, Flow] = {}
        self.completeness = 0
        self.first_ns = self.last_ns = first_ns
        self.syn_ns: int | None = None
        self.irtt_ns: int | None = None
        self.fin_by: tuple | None = None        # the endpoint that sent the first FIN
        self.server_port: int | None = None
        self.seen = False                       # a frame of it was analysed already
        self.first_bits = 0                     # what its first frame counts once it is no longer new (-2)


class TcpInfo:
    """What tshark shows for one segment beyond its header (filled in decode order)."""

    __slots__ = ("stream", "completeness", "seq", "nxtseq", "ack", "win_scale", "window", "rel_ns", "delta_ns",
                 "acks_frame", "ack_rtt_ns", "irtt_ns", "bif", "push", "flags", "fin_role", "server_port",
                 "rto_ns", "rto_frame", "dupack_num", "dupack_frame", "record")

    def __init__(self):
        self.acks_frame = self.ack_rtt_ns = self.irtt_ns = self.bif = self.push = None
        self.rto_ns = self.rto_frame = None  # a retransmission: the time since the segment it repeats, its frame
        self.dupack_num = self.dupack_frame = None
        self.flags: list[str] = []          # analysis flags: "lost_segment", "out_of_order", "ack_lost_segment"
        self.fin_role: str | None = None    # "active" / "passive"
        self.server_port: int | None = None
        self.record = False     # tshark made the frame's analysis record though it may hold nothing to show


class _Quoted:
    """The header values of a quoted TCP segment, as header_only reads them from a Decoded."""

    __slots__ = ("frame", "src", "sport", "dst", "dport", "flags", "seq", "ack", "window", "tcp")

    def __init__(self, frame, src, sport, dst, dport, flags, seq, ack, window):
        self.frame, self.src, self.sport, self.dst, self.dport = frame, src, sport, dst, dport
        self.flags, self.seq, self.ack, self.window, self.tcp = flags, seq, ack, window, None


def _flows(conn: Connection, me: tuple, peer: tuple, fl: int, seq: int, ack: int) -> tuple[Flow, Flow]:
    """The sender's and the peer's flows of `conn`, with their base sequence numbers set as tshark sets them: a
    SYN's (or SYN/ACK's) own, else the first segment's minus one; the peer's from the first ACK."""
    flows = conn.flows
    fwd = flows.get(me)
    if fwd is None:
        fwd = flows[me] = Flow()
    rev = flows.get(peer)
    if rev is None:
        rev = flows[peer] = Flow()
    if fl & SYN:
        fwd.base = seq
    elif fwd.base is None:
        fwd.base = (seq - 1) & M32
    if fl & ACK and rev.base is None:
        rev.base = (ack - 1) & M32
    return fwd, rev


def _verify_scaling(fwd: Flow, rev: Flow, wscale: int | None, synack: bool) -> None:
    """A SYN's window scale option (its shift, or None), then tshark's verify_tcp_window_scaling: a SYN or SYN-ACK
    without one when none was seen before means no scaling either way; a SYN-ACK's when the SYN had none is void.
    A SYN-ACK's own with its SYN not in the capture stays (a capture of one direction scales the window)."""
    if wscale is not None:
        fwd.win_scale = wscale
    if fwd.win_scale == -1:
        fwd.win_scale = rev.win_scale = -2
    elif synack and rev.win_scale == -2:
        fwd.win_scale = -2


def _scale(flow: Flow, rev: Flow, win: int, syn: bool) -> tuple[int, int]:
    if syn:
        return -3, win                      # -3: not shown (tshark applies no scaling to SYN windows)
    if flow.win_scale >= 0 and rev.win_scale == -2:
        return -2, win
    return flow.win_scale, win << flow.win_scale if flow.win_scale >= 0 else win


class TcpTable:
    """Every TCP connection of one capture, in first-seen order (stream indexes)."""

    def __init__(self):
        self.connections: OrderedDict[frozenset, Connection] = OrderedDict()   # (oldest out: popitem)
        self.streams = 0
        # endpoints of connections freed after their end (forget) -> each sender's base sequence number: a SYN
        # there with another initial sequence number is still "TCP Port numbers reused", as tshark says
        self.retired: OrderedDict[frozenset, dict] = OrderedDict()
        self.reused = False          # the last _connection call started a new connection on reused ports
        self.unacked = 0             # unacknowledged segments stored over all connections (MAX_UNACKED_TOTAL)
        self.mptcp = None            # capture.mptcp_analysis.MptcpTable, made at the first MPTCP option
        self.mp_dupack = False       # MPTCP tolerates a duplicate ACK in the segment under analysis
        # -2 (cli/two_pass_opts.py): the first pass keeps every connection by stream index (`record`); the second
        # shows what the first learnt (`learnt`: stream -> (completeness, iRTT)) from the first frame on, as tshark
        self.record: dict[int, Connection] | None = None
        self.learnt: dict[int, tuple] | None = None

    def _connection(self, key: frozenset, ts: int, me: tuple, syn_seq: int | None) -> Connection:
        """The connection of a segment from `me`; `syn_seq`: the sequence number of a SYN without ACK (else None).
        As tshark 4.0 (dissect_tcp): a SYN whose sequence number is not its sender's base sequence number starts
        a new connection on the same endpoints (a SYN sent again keeps the connection)."""
        conn = self.connections.get(key)
        if conn is not None and not (syn_seq is not None and self._reuses(conn, me, syn_seq)):
            self.reused = False
            return conn
        self.reused = self._reopens(conn, key, me, syn_seq)
        if conn is None and len(self.connections) >= MAX_CONNECTIONS:
            self._drop(self.connections.popitem(last=False)[1])
        elif conn is not None:
            self._drop(conn)
        conn = self.connections[key] = Connection(self.streams, ts)
        if self.record is not None:
            self.record[self.streams] = conn
        self.streams += 1
        return conn

    @staticmethod
    def _reuses(conn: Connection, me: tuple, syn_seq: int) -> bool:
        """Whether a SYN from `me` starts a new connection where `conn` was: its sender's base sequence number
        is known and another."""
        fwd = conn.flows.get(me)
        return fwd is not None and fwd.base is not None and fwd.base != syn_seq

    def _reopens(self, conn: Connection | None, key: frozenset, me: tuple, syn_seq: int | None) -> bool:
        """Whether the new connection of endpoints `key` reuses them (tshark's "TCP Port numbers reused"): `conn`
        was there (a SYN with a new sequence number replaces it), or one was forgotten there (`forget`) whose
        sender had another base sequence number."""
        if conn is not None:
            return True
        bases = self.retired.pop(key, None) if self.retired else None
        return syn_seq is not None and bases is not None and bases.get(me) not in (None, syn_seq)

    def learnt_facts(self) -> dict[int, tuple]:
        """What a first pass learnt of each connection (`record`): stream -> (completeness, iRTT or None, its
        MPTCP connection's (stream, master, subflows) or None)."""
        mptcp = self.mptcp.final() if self.mptcp is not None else {}
        return {stream: (conn.completeness, conn.irtt_ns, mptcp.get(stream))
                for stream, conn in (self.record or {}).items()}

    def _second_pass(self, info: TcpInfo, conn: Connection, first: bool) -> None:
        """A second pass (tshark -2) shows the conversation's final completeness and its iRTT on every frame; the
        first frame, no longer new then, adds what it counts for the frames after it (Connection.first_bits)."""
        facts = self.learnt.get(info.stream)
        if facts is not None:
            info.completeness = facts[0] if first else facts[0] | conn.first_bits
            if facts[1] is not None:
                info.irtt_ns = facts[1]

    def _drop(self, conn: Connection) -> None:
        """A connection leaves the table: its unacknowledged segments no longer count."""
        for flow in conn.flows.values():
            self.unacked -= len(flow.segments)

    def forget(self, key: frozenset) -> None:
        """Free a connection's state (engine.lifetime freed its endpoints after its end): its senders' base
        sequence numbers are kept (bounded) to tell a later SYN there reuses the ports."""
        conn = self.connections.pop(key, None)
        if conn is not None:
            self._drop(conn)
            self.retired[key] = {ep: flow.base for ep, flow in conn.flows.items()}
            if len(self.retired) > RETIRED_LIMIT:
                self.retired.popitem(last=False)

    def stream_of(self, d) -> int:
        """Only the stream index of segment `d` (and the base sequence numbers that decide it): the planning
        pass of -j (api/planning.py) numbers connections as analyze does."""
        me, peer = (d.src, d.sport), (d.dst, d.dport)
        fl = d.flags
        conn = self._connection(frozenset((me, peer)), d.frame.ts_ns, me, d.seq if fl & (SYN | ACK) == SYN else None)
        _flows(conn, me, peer, fl, d.seq, d.ack)
        return conn.stream

    def quoted_stream(self, d) -> int:
        """Only the stream index of the TCP segment an ICMP error quotes (a whole header), as quoted finds it."""
        t, src, sport, dst, dport = d.icmp.quoted_tcp
        seq, offflags = struct.unpack_from("!I4xH", d.frame.data, t + 4)
        me = (src, sport)
        syn = offflags & (SYN | ACK) == SYN
        return self._connection(frozenset((me, (dst, dport))), d.frame.ts_ns, me, seq if syn else None).stream

    def analyze(self, d, wscale: int | None) -> None:
        """Record tshark's view of TCP segment `d` (capture.decode.Decoded) as `d.tcp`. `wscale`: the window scale
        option's shift, if the segment has one."""
        ts = d.frame.ts_ns
        me, peer = (d.src, d.sport), (d.dst, d.dport)
        fl, seq, ack = d.flags, d.seq, d.ack
        conn = self._connection(frozenset((me, peer)), ts, me, seq if fl & (SYN | ACK) == SYN else None)
        fwd, rev = _flows(conn, me, peer, fl, seq, ack)
        info = self._info(conn) if self.reused else TcpInfo()
        info.stream = conn.stream
        info.completeness = conn.completeness
        info.rel_ns, info.delta_ns = ts - conn.first_ns, ts - conn.last_ns
        span = d.spans[-1]
        conn.last_ns = ts
        seglen = len(d.payload) + d.cut
        if fl & SYN:
            if wscale != -1:        # (-1: the options cut by the snap length, tshark never gets to the check)
                _verify_scaling(fwd, rev, wscale, bool(fl & ACK))
            if fl & ACK:
                conn.server_port = d.sport
            else:
                conn.syn_ns = ts
                conn.server_port = d.dport
            info.server_port = conn.server_port
        info.seq = (seq - fwd.base) & M32
        nextseq = (seq + seglen + (1 if fl & (SYN | FIN) else 0)) & M32
        info.nxtseq = (nextseq - fwd.base) & M32
        info.ack = (ack - rev.base) & M32 if fl & ACK else ack
        info.win_scale, info.window = _scale(fwd, rev, d.window, bool(fl & SYN))
        self.mp_dupack = (self.mptcp is not None or span[2] > 20
                          and 30 in d.transport_data()[span[1] + 20:span[1] + span[2]]) and self._mptcp(d, conn.stream)
        self._sequence(d, conn, fwd, rev, info, seq, ack, nextseq, seglen, ts)
        # tshark dissects the options after the analysis: this segment's SACK blocks count for the peer's next
        # bytes in flight
        fwd.sacked = _sacked(d.transport_data(), span[1] + 20, span[1] + span[2]) if span[2] > 20 else 0
        if fl & FIN:
            if conn.fin_by is None:
                conn.fin_by = me
            info.fin_role = "active" if conn.fin_by == me else "passive"
        first = not conn.seen
        self._complete(conn, fl, seglen)
        if self.learnt:
            self._second_pass(info, conn, first)
        d.tcp = info

    def _mptcp(self, d, stream: int) -> bool:
        """MPTCP's part (capture.mptcp_analysis) of segment `d` with an MPTCP option, or of a subflow's; whether
        MPTCP tolerates a duplicate ACK here (an address or priority signalled since the sender's last one)."""
        # tshark's sequence analysis (which asks this) comes before the segment's own options are dissected
        tolerates = self.mptcp is not None and self.mptcp.tolerates_dupack(d, stream)
        span = d.spans[-1]
        p, end = span[1] + 20, span[1] + span[2]
        data = d.transport_data()
        if end > p and 30 in data[p:end]:              # maybe an MPTCP option
            from .mptcp_analysis import MptcpTable, mptcp_spans
            spans = mptcp_spans(data, p, end)
            if spans:
                if self.mptcp is None:
                    self.mptcp = MptcpTable(self.learnt)
                self.mptcp.analyze(d, stream, data, spans)
        return tolerates

    def _info(self, conn: Connection) -> TcpInfo:
        info = TcpInfo()
        if self.reused:
            # tshark flags the SYN and opens the new conversation as SYN_SENT at once (its completeness shows 1)
            info.flags.append("reused_ports")
            if not conn.seen:
                conn.completeness, conn.seen = C_SYN, True
        return info

    def header_only(self, d, short: bool = False) -> None:
        """A segment whose header tshark gives up on: it still finds or opens the connection (stream index,
        completeness, times). A bogus data offset (under 5 words) shows the sequence number relative to the
        connection and changes nothing else; a short segment (the data offset past its end) shows raw sequence
        numbers and the raw window, and counts for the conversation's completeness."""
        ts = d.frame.ts_ns
        me, peer = (d.src, d.sport), (d.dst, d.dport)
        fl, seq = d.flags, d.seq
        conn = self._connection(frozenset((me, peer)), ts, me, seq if fl & (SYN | ACK) == SYN else None)
        fwd = conn.flows.get(me)
        info = self._info(conn)
        info.stream, info.completeness = conn.stream, conn.completeness
        info.rel_ns, info.delta_ns = ts - conn.first_ns, ts - conn.last_ns
        conn.last_ns = ts
        info.ack, info.window = d.ack, d.window      # the Info column's (tshark reads no further)
        first = not conn.seen
        if short:
            info.seq = seq
            rev = conn.flows.get(peer)
            if fl & SYN:
                info.win_scale = -3
            elif fwd is None:
                info.win_scale = -1
            else:
                info.win_scale = -2 if fwd.win_scale >= 0 and rev is not None and rev.win_scale == -2 \
                    else fwd.win_scale
            if fl & FIN:
                if conn.fin_by is None:
                    conn.fin_by = me
                info.fin_role = "active" if conn.fin_by == me else "passive"
            self._complete(conn, fl, 0)
        else:
            base = fwd.base if fwd is not None and fwd.base is not None else seq if fl & SYN else (seq - 1) & M32
            info.seq = (seq - base) & M32
        if self.learnt:
            self._second_pass(info, conn, first)
        d.tcp = info

    def quoted(self, d) -> None:
        """The TCP segment an ICMP error quotes (a whole header): tshark finds or opens its conversation and shows
        it as for a short segment (raw numbers, no analysis); the result goes to d.icmp.tcp."""
        info = d.icmp
        t, src, sport, dst, dport = info.quoted_tcp
        data = d.frame.data
        seq, ack, offflags, win = struct.unpack_from("!IIHH", data, t + 4)
        q = _Quoted(d.frame, src, sport, dst, dport, offflags & 0x0FFF, seq, ack, win)
        self.header_only(q, short=True)
        info.tcp = q.tcp
        conn = self.connections.get(frozenset(((src, sport), (dst, dport))))
        info.server_port = None if conn is None else conn.server_port

    @staticmethod
    def _complete(conn: Connection, fl: int, seglen: int) -> None:
        # as tshark 4.0 (dissect_tcp): a pure SYN counts only as a new conversation's first frame (with TCP Fast
        # Open data, DATA too), and the first frame counts for nothing else (a SYN-ACK before the SYN, an ACK or
        # data starting the capture); later, a SYN-ACK, an ACK with data or without, FIN-ACK and RST count
        bits, syn_ack = 0, fl & (SYN | ACK)
        if syn_ack == SYN | ACK:
            bits = C_SYNACK
        elif syn_ack == ACK:
            bits = C_DATA if seglen else C_ACK
        if fl & (FIN | ACK) == FIN | ACK:
            bits |= C_FIN
        if fl & RST:
            bits |= C_RST
        if conn.seen:
            conn.completeness |= bits
            return
        conn.seen = True
        # tshark -2's second pass counts the first frame as any other (a SYN-ACK starting a capture of the
        # server's side only: SYNACK from its second frame on); _second_pass adds it
        conn.first_bits = bits
        if syn_ack == SYN:
            conn.completeness |= C_SYN | (C_DATA if seglen else 0)

    def _sequence(self, d, conn, fwd: Flow, rev: Flow, info: TcpInfo, seq, ack, nextseq, seglen, ts) -> None:
        """tcp_analyze_sequence_number (tshark 4.0), in its order; `info.flags` then sorted as tshark prints them."""
        fl, win, flags = d.flags, d.window, info.flags
        plain = not fl & (SYN | FIN | RST)
        same = seq == fwd.nextseq and ack == fwd.lastack and not seglen and plain
        frame = d.frame.number
        if fl & ACK:
            rev.valid_bif = True        # an ACK from this side counts the other's bytes in flight again
        if seglen == 1 and seq == fwd.nextseq and rev.window == 0:
            flags.append("zero_window_probe")
        else:
            if win == 0 and plain:
                flags.append("zero_window")
            if fwd.nextseq is not None and seq_gt(seq, fwd.nextseq) and not fl & RST:
                flags.append("lost_segment")
                fwd.valid_bif = False
            if seglen < 2 and fwd.nextseq is not None and seq == (fwd.nextseq - 1) & M32 and plain:
                flags.append("keep_alive")
            if same and win and win != fwd.window:
                flags.append("window_update")
            if seglen and rev.win_scale != -1 and plain:
                shift = 0 if rev.first_ack or rev.win_scale == -2 else rev.win_scale
                edge = (rev.lastack or 0) + (((M32 if rev.window is None else rev.window) << shift) & M32)
                if (seq + seglen) & M32 == edge & M32:
                    flags.append("window_full")
            if same and win and win == fwd.window and "keep_alive" in rev.lastflags:
                flags.append("keep_alive_ack")
            elif same and win == 0 and fwd.window == 0 and "zero_window_probe" in rev.lastflags:
                flags.append("zero_window_probe_ack")
            elif same and win and win == fwd.window and not self.mp_dupack:
                fwd.dupacks = 1 if fwd.dupacks == -1 else fwd.dupacks + 1
                flags.append("duplicate_ack")
                info.dupack_num, info.dupack_frame = fwd.dupacks, fwd.nondup_frame
        if ack != fwd.lastack:
            fwd.nondup_frame, fwd.dupacks = frame, 0
        if rev.maxseqtobeacked is not None and fl & ACK and seq_gt(ack, rev.maxseqtobeacked):
            if rev.nextseq is not None and seq_lt(rev.maxseqtobeacked, rev.nextseq):
                rev.maxseqtobeacked = rev.nextseq
                flags.append("ack_lost_segment")
            else:
                if rev.dupacks == 0:
                    flags.append("ack_lost_segment")
                rev.dupacks = -1
                info.record = True      # (tshark shows an empty SEQ/ACK analysis when that says nothing)
        if (seglen or fl & (SYN | FIN)) and "keep_alive" not in flags:
            self._resent(conn, fwd, rev, info, seq, nextseq, seglen, ts)
        if (seglen or fl & (SYN | FIN)) and len(fwd.segments) < MAX_UNACKED and self.unacked < MAX_UNACKED_TOTAL:
            fwd.segments.append([seq, nextseq, frame, ts])
            self.unacked += 1
        probe = "zero_window_probe" in flags
        if (fwd.nextseq is None or seq_gt(nextseq, fwd.nextseq)) and not probe:
            fwd.nextseq, fwd.nextseq_ns, fwd.nextseq_frame = nextseq, ts, frame
        if (fwd.maxseqtobeacked is None or seq == fwd.maxseqtobeacked) and not probe:
            fwd.maxseqtobeacked = fwd.nextseq     # the highest continuous sequence number seen
        fwd.window, fwd.lastack, fwd.lastack_ns, fwd.lastflags = win, ack, ts, tuple(flags) if flags else ()
        # every segment walks the peer's unacknowledged list with its acknowledgement number, ACK flag or not
        # (tcp.c): a SYN's zero can take the list for old and empty it
        stored = len(rev.segments)
        if stored:
            self._acked(rev, info, ack, ts)
            self.unacked -= stored - len(rev.segments)
        if fl & ACK:
            # the first pure ACK after a SYN, SYN-ACK seen or not (tcp.c: a capture of the client's side only)
            if conn.irtt_ns is None and conn.syn_ns is not None and not fl & SYN:
                conn.irtt_ns = ts - conn.syn_ns
        if fl & SYN:
            fwd.first_ack = True
        elif fl & ACK:
            fwd.first_ack = False
        if len(flags) > 1:
            flags.sort(key=PRINT_ORDER.index)
        info.irtt_ns = conn.irtt_ns
        if seglen and fwd.segments and fwd.valid_bif:
            base, segments = fwd.base, fwd.segments
            count, span = len(segments), fwd.span
            if count == 1:       # (the common case: one unacknowledged segment)
                first, last = (segments[0][0] - base) & M32, (segments[0][1] - base) & M32
            elif span is not None and span[0] is segments and span[2] == base and count - span[1] in (0, 1):
                # the same list, grown by at most this segment (_acked makes a new one): no walk of up to
                # MAX_UNACKED segments per frame when the ACKs are not in the capture
                first, last = span[3], span[4]
                if count > span[1]:
                    first = min(first, (segments[-1][0] - base) & M32)
                    last = max(last, (segments[-1][1] - base) & M32)
            else:
                first = min([(s[0] - base) & M32 for s in segments])
                last = max([(s[1] - base) & M32 for s in segments])
            fwd.span = (segments, count, base, first, last)
            in_flight = (last - first - rev.sacked) & M32       # (a guint32 in tcp.c)
            if 0 < in_flight < 2_000_000_000:
                if fl & (SYN | FIN):        # (their sequence number is only virtual: tcp.c takes it off again)
                    in_flight -= 1
                info.bif = in_flight or None
            push = bool(fl & PSH)
            if push and not fwd.push_last:
                fwd.push_bytes += seglen
            elif push or fwd.push_last:
                fwd.push_bytes = seglen
            else:
                fwd.push_bytes += seglen
            fwd.push_last = push
            info.push = fwd.push_bytes

    @staticmethod
    def _resent(conn, fwd: Flow, rev: Flow, info: TcpInfo, seq, nextseq, seglen, ts) -> None:
        """A segment with data (or SYN/FIN) that does not move the sequence on: spurious (the peer has ACKed it
        already), fast (after two duplicate ACKs, within 20 ms), out of order (within the iRTT), or else a
        retransmission (with the time since the oldest unacknowledged segment)."""
        flags = info.flags
        behind = fwd.nextseq is not None and seq_lt(seq, fwd.nextseq)
        if seglen > 1 and fwd.nextseq is not None and (fwd.nextseq - 1) & M32 == seq:
            behind = False
        if seglen and rev.lastack and not seq_gt((seq + seglen) & M32, rev.lastack):
            # (data the peer has acknowledged already, even though new to us: tshark hands it to no subdissector)
            flags += ["spurious_retransmission", "retransmission"]
            return
        # (tcp.c's dupacknum is unsigned: the -1 an ACK of unseen data leaves there counts as >= 2)
        dupacks = rev.dupacks >= 2 or rev.dupacks == -1
        if behind and dupacks and rev.lastack == seq and ts - rev.lastack_ns < 20_000_000:
            flags.append("fast_retransmission")
            return
        threshold = conn.irtt_ns if conn.irtt_ns is not None else OOO_THRESHOLD_NS
        if behind and ts - fwd.nextseq_ns < threshold and fwd.nextseq != nextseq:
            flags.append("out_of_order")
            return
        if behind:
            flags.append("retransmission")
            info.rto_ns, info.rto_frame = ts - fwd.nextseq_ns, fwd.nextseq_frame
            if fwd.segments:
                info.rto_ns, info.rto_frame = ts - fwd.segments[0][3], fwd.segments[0][2]

    @staticmethod
    def _acked(rev: Flow, info: TcpInfo, ack: int, ts: int) -> None:
        keep = []
        for seg in rev.segments:
            if ack == seg[1]:
                if info.acks_frame is None:       # tshark walks newest first: the oldest match is the one shown
                    info.acks_frame, info.ack_rtt_ns = seg[2], ts - seg[3]
            elif seq_gt(ack, seg[0]) and not seq_gt(ack, seg[1]):
                seg[0] = ack
                keep.append(seg)
                continue
            elif seq_gt(seg[1], ack):
                keep.append(seg)
                continue
        rev.segments = keep
