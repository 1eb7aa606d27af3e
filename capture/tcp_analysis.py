"""TCP conversation state, as tshark's TCP dissector keeps it (epan/dissectors/packet-tcp.c, tshark 4.0, one pass):
stream index, conversation completeness, relative sequence numbers, window scaling, timestamps and the SEQ/ACK
analysis (ACKed frame, RTT, iRTT, bytes in flight, bytes since PSH, lost / out-of-order / ACKed-unseen segments).

State lives in a per-capture `TcpTable` and is recorded in decode order (`TcpTable.analyze(d)` sets `d.tcp`), so
the lazily built layers (capture/layers.py) print what tshark printed for that frame. Bounded: at most
MAX_CONNECTIONS connections and MAX_UNACKED unacknowledged segments per direction (as tshark's
TCP_MAX_UNACKED_SEGMENTS).
"""
from __future__ import annotations

MAX_CONNECTIONS = 4096
MAX_UNACKED = 1000
FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10
M32 = 0xFFFFFFFF
OOO_THRESHOLD_NS = 3_000_000          # tshark's out-of-order threshold when no iRTT is known

# completeness bits (tcp.completeness)
C_SYN, C_SYNACK, C_ACK, C_DATA, C_FIN, C_RST = 1, 2, 4, 8, 16, 32


def _gt(a: int, b: int) -> bool:
    """a > b in 32-bit sequence space."""
    return 0 < ((a - b) & M32) < 0x80000000


def _lt(a: int, b: int) -> bool:
    return _gt(b, a)


class Flow:
    """One direction of a connection."""

    __slots__ = ("base", "nextseq", "nextseq_ns", "maxseqtobeacked", "segments", "win_scale", "push_bytes",
                 "push_last", "valid_bif", "lastack")

    def __init__(self):
        self.base: int | None = None
        self.nextseq: int | None = None
        self.nextseq_ns = 0
        self.maxseqtobeacked: int | None = None
        self.segments: list[list] = []      # unacked [seq, nextseq, frame, ts_ns]
        self.win_scale = -1                 # -1 unknown, -2 no scaling, else the shift
        self.push_bytes = 0
        self.push_last = False
        self.valid_bif = True
        self.lastack: int | None = None


class Connection:
    __slots__ = ("stream", "flows", "completeness", "first_ns", "last_ns", "syn_ns", "irtt_ns", "fin_by",
                 "server_port")

    def __init__(self, stream: int, first_ns: int):
        self.stream = stream
        self.flows: dict[tuple, Flow] = {}
        self.completeness = 0
        self.first_ns = self.last_ns = first_ns
        self.syn_ns: int | None = None
        self.irtt_ns: int | None = None
        self.fin_by: tuple | None = None        # the endpoint that sent the first FIN
        self.server_port: int | None = None


class TcpInfo:
    """What tshark shows for one segment beyond its header (filled in decode order)."""

    __slots__ = ("stream", "completeness", "seq", "nxtseq", "ack", "win_scale", "window", "rel_ns", "delta_ns",
                 "acks_frame", "ack_rtt_ns", "irtt_ns", "bif", "push", "flags", "fin_role", "server_port")

    def __init__(self):
        self.acks_frame = self.ack_rtt_ns = self.irtt_ns = self.bif = self.push = None
        self.flags: list[str] = []          # analysis flags: "lost_segment", "out_of_order", "ack_lost_segment"
        self.fin_role: str | None = None    # "active" / "passive"
        self.server_port: int | None = None


def _scale(flow: Flow, rev: Flow, win: int, syn: bool) -> tuple[int, int]:
    if syn:
        return -3, win                      # -3: not shown (tshark applies no scaling to SYN windows)
    if flow.win_scale >= 0 and rev.win_scale == -2:
        return -2, win
    return flow.win_scale, win << flow.win_scale if flow.win_scale >= 0 else win


class TcpTable:
    """Every TCP connection of one capture, in first-seen order (stream indexes)."""

    def __init__(self):
        self.connections: dict[frozenset, Connection] = {}
        self.streams = 0

    def _connection(self, key: frozenset, ts: int, syn_only: bool) -> Connection:
        conn = self.connections.get(key)
        if conn is None or (syn_only and conn.completeness & (C_FIN | C_RST)):
            if len(self.connections) >= MAX_CONNECTIONS:
                self.connections.pop(next(iter(self.connections)))
            conn = self.connections[key] = Connection(self.streams, ts)
            self.streams += 1
        return conn

    def analyze(self, d, wscale: int | None) -> None:
        """Record tshark's view of TCP segment `d` (capture.decode.Decoded) as `d.tcp`. `wscale`: the window scale
        option's shift, if the segment has one."""
        ts = d.frame.ts_ns
        me, peer = (d.src, d.sport), (d.dst, d.dport)
        fl, seq, ack = d.flags, d.seq, d.ack
        conn = self._connection(frozenset((me, peer)), ts, fl & (SYN | ACK) == SYN)
        flows = conn.flows
        fwd = flows.get(me)
        if fwd is None:
            fwd = flows[me] = Flow()
        rev = flows.get(peer)
        if rev is None:
            rev = flows[peer] = Flow()
        info = TcpInfo()
        info.stream = conn.stream
        info.completeness = conn.completeness
        info.rel_ns, info.delta_ns = ts - conn.first_ns, ts - conn.last_ns
        conn.last_ns = ts
        seglen = len(d.payload)
        if fl & SYN:
            fwd.base = seq
            fwd.win_scale = wscale if wscale is not None else -2
            if fl & ACK:
                if rev.win_scale == -1:
                    rev.win_scale = -2
                conn.server_port = d.sport
            else:
                conn.syn_ns = ts
                conn.server_port = d.dport
            info.server_port = conn.server_port
        if fwd.base is None:
            fwd.base = (seq - 1) & M32
        if fl & ACK and rev.base is None:
            rev.base = (ack - 1) & M32
        info.seq = (seq - fwd.base) & M32
        nextseq = (seq + seglen + (1 if fl & (SYN | FIN) else 0)) & M32
        info.nxtseq = (nextseq - fwd.base) & M32
        info.ack = (ack - rev.base) & M32 if fl & ACK else ack
        info.win_scale, info.window = _scale(fwd, rev, d.window, bool(fl & SYN))
        self._sequence(d, conn, fwd, rev, info, seq, ack, nextseq, seglen, ts)
        if fl & FIN:
            if conn.fin_by is None:
                conn.fin_by = me
            info.fin_role = "active" if conn.fin_by == me else "passive"
        self._complete(conn, fl, seglen)
        d.tcp = info

    def header_only(self, d) -> None:
        """A segment whose header tshark gives up on (a bogus data offset): it still finds or opens the connection
        (stream index, completeness, times) and shows the sequence number relative to it; nothing else changes."""
        ts = d.frame.ts_ns
        me, peer = (d.src, d.sport), (d.dst, d.dport)
        fl, seq = d.flags, d.seq
        conn = self._connection(frozenset((me, peer)), ts, fl & (SYN | ACK) == SYN)
        fwd = conn.flows.get(me)
        info = TcpInfo()
        info.stream, info.completeness = conn.stream, conn.completeness
        info.rel_ns, info.delta_ns = ts - conn.first_ns, ts - conn.last_ns
        conn.last_ns = ts
        base = fwd.base if fwd is not None and fwd.base is not None else seq if fl & SYN else (seq - 1) & M32
        info.seq = (seq - base) & M32
        info.ack, info.window = d.ack, d.window      # the Info column's (tshark reads no further)
        d.tcp = info

    @staticmethod
    def _complete(conn: Connection, fl: int, seglen: int) -> None:
        if fl & SYN:
            conn.completeness |= C_SYNACK if fl & ACK else C_SYN
        elif fl & ACK and not seglen:        # measured: a pure ACK, even without a handshake seen
            conn.completeness |= C_ACK
        if seglen and conn.completeness & C_ACK:   # measured: data before any pure ACK sets nothing
            conn.completeness |= C_DATA
        if fl & FIN:
            conn.completeness |= C_FIN
        if fl & RST:
            conn.completeness |= C_RST

    def _sequence(self, d, conn, fwd: Flow, rev: Flow, info: TcpInfo, seq, ack, nextseq, seglen, ts) -> None:
        fl = d.flags
        if fwd.nextseq is not None and _gt(seq, fwd.nextseq) and not fl & RST:
            info.flags.append("lost_segment")
            fwd.valid_bif = False
        if (seglen or fl & (SYN | FIN)) and fwd.nextseq is not None and _lt(seq, fwd.nextseq):
            threshold = conn.irtt_ns if conn.irtt_ns is not None else OOO_THRESHOLD_NS
            if ts - fwd.nextseq_ns < threshold and fwd.nextseq != nextseq:
                info.flags.append("out_of_order")
            else:
                info.flags.append("retransmission")
        if (rev.maxseqtobeacked is not None and fl & ACK and _gt(ack, rev.maxseqtobeacked)):
            info.flags.append("ack_lost_segment")
            rev.maxseqtobeacked = rev.nextseq
        if (seglen or fl & (SYN | FIN)) and len(fwd.segments) < MAX_UNACKED:
            fwd.segments.append([seq, nextseq, d.frame.number, ts])
        if fwd.nextseq is None or _gt(nextseq, fwd.nextseq):
            fwd.nextseq, fwd.nextseq_ns = nextseq, ts
        if fwd.maxseqtobeacked is None or seq == fwd.maxseqtobeacked:
            fwd.maxseqtobeacked = fwd.nextseq     # the highest continuous sequence number seen
        if fl & ACK:
            self._acked(rev, info, ack, ts)
            fwd.lastack = ack
            if (conn.irtt_ns is None and conn.syn_ns is not None and not fl & SYN
                    and conn.completeness & C_SYNACK):
                conn.irtt_ns = ts - conn.syn_ns
        info.irtt_ns = conn.irtt_ns
        if seglen and fwd.segments and fwd.valid_bif:
            base = fwd.base
            first = min([(s[0] - base) & M32 for s in fwd.segments])
            last = max([(s[1] - base) & M32 for s in fwd.segments])
            if 0 < last - first < 2_000_000_000:
                info.bif = last - first
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
    def _acked(rev: Flow, info: TcpInfo, ack: int, ts: int) -> None:
        keep = []
        for seg in rev.segments:
            if ack == seg[1]:
                info.acks_frame, info.ack_rtt_ns = seg[2], ts - seg[3]
            elif _gt(ack, seg[0]) and not _gt(ack, seg[1]):
                seg[0] = ack
                keep.append(seg)
                continue
            elif _gt(seg[1], ack):
                keep.append(seg)
                continue
        if len(keep) < len(rev.segments) and not rev.valid_bif and not keep:
            rev.valid_bif = True
        rev.segments = keep
