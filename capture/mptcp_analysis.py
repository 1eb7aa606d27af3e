"""Multipath TCP conversation state, as tshark 4.0's TCP dissector keeps it with tcp.analyze_mptcp on (its default):
the keys a connection's MP_CAPABLE handshake exchanges, the tokens and initial data sequence numbers derived from
them (SHA-256 for version 1, SHA-1 for version 0: RFC 8684 3.1 / RFC 6824 3.2, hashlib), the MPTCP connections
(`mptcp.stream`) and the TCP subflows joined to them by token (MP_JOIN), and data ACKs and sequence numbers made
relative to the initial ones.

`MptcpTable.analyze` runs in decode order from capture.tcp_analysis.TcpTable.analyze for a segment that carries
an MPTCP option (kind 30) and records `d.mptcp` (a FrameMptcp) for capture/layers/mptcp.py. Bounded: at most
MAX_CONNECTIONS MPTCP connections and MAX_SUBFLOWS TCP connections remembered (the oldest forgotten).
"""
from __future__ import annotations

import hashlib
import struct

KIND = 30
MAX_CONNECTIONS = 4096
MAX_SUBFLOWS = 8192
M64 = (1 << 64) - 1
CAPABLE, JOIN, DSS = 0, 1, 2
DATA_ACK, DATA_ACK8, MAPPING, DSN8 = 0x01, 0x02, 0x04, 0x08


class Meta:
    """One direction of an MPTCP connection (tshark's mptcp_meta_flow_t): its key, token and initial DSN."""

    __slots__ = ("key", "token", "idsn", "has_key", "has_token")

    def __init__(self):
        self.key = self.token = self.idsn = 0
        self.has_key = self.has_token = False


class Connection:
    """One MPTCP connection: its stream index, its two directions, its TCP subflows (newest first, as tshark's
    list) and its master subflow (the TCP stream whose MP_CAPABLE carried a key)."""

    __slots__ = ("stream", "metas", "subflows", "master", "operations")

    def __init__(self, stream: int):
        self.stream = stream
        self.operations = 0         # ADD_ADDR, REMOVE_ADDR and MP_PRIO options seen (RFC 8684 4: dup ACKs)
        self.metas = (Meta(), Meta())
        self.subflows: list[int] = []
        self.master: int | None = None


class Subflow:
    """A TCP connection that carried an MPTCP option: its MPTCP connection, and each sender's direction in it."""

    __slots__ = ("conn", "meta", "operations")

    def __init__(self):
        self.conn: Connection | None = None
        self.meta: dict[tuple, int] = {}
        self.operations: dict[tuple, int] = {}      # sender -> its connection's operations at its last segment


class FrameMptcp:
    """What tshark shows of MPTCP in one segment: per MPTCP option (in order) its derived values
    (token/idsn of a sender's key, relative data ACK and DSN: None when unknown), and the analysis subtree's
    (stream, is master, master's TCP stream or None, subflows text), or None before any connection exists."""

    __slots__ = ("options", "analysis")

    def __init__(self):
        self.options: list[dict] = []
        self.analysis: tuple | None = None

    def key(self) -> tuple:
        """What the TCP layer's template must tell apart (capture/layers/tcp.py)."""
        return tuple(tuple(sorted(o.items())) for o in self.options), self.analysis


def crypto(version: int, flags: int, key: int) -> tuple[int, int]:
    """(token, initial DSN) of `key`: the most significant 32 bits and the least significant 64 bits of its
    SHA-256 (version 1) or SHA-1 (version 0) hash, whatever the algorithm flag says (as tshark); (0, 0) for
    another version."""
    if version > 1:
        return 0, 0
    digest = (hashlib.sha256 if version == 1 else hashlib.sha1)(key.to_bytes(8, "big")).digest()
    return int.from_bytes(digest[:4], "big"), int.from_bytes(digest[-8:], "big")


def relative(raw: int, meta: Meta | None, wide: bool, raw_unknown: bool = False) -> int | None:
    """A data ACK or DSN relative to the direction's initial DSN (a 32-bit one completed with its upper half,
    tshark's mptcp_convert_dsn); while that direction's key is unknown, None (or a 64-bit DSN as it is, as
    tshark shows it: `raw_unknown`)."""
    if meta is None or not meta.has_key:
        return raw if raw_unknown and wide else None
    full = raw if wide else (meta.idsn & ~0xFFFFFFFF) | raw
    return (full - meta.idsn) & M64


class MptcpTable:
    """Every MPTCP connection of one capture (stream indexes in creation order) and the TCP subflows seen."""

    def __init__(self, learnt: dict | None = None):
        self.count = 0
        self.tokens: dict[int, Connection] = {}
        self.subflows: dict[int, Subflow] = {}      # TCP stream -> its MPTCP state
        # -2's second pass (capture.tcp_analysis.TcpTable.learnt_facts): TCP stream -> (.., .., what final() gave)
        self.learnt = learnt

    def final(self) -> dict[int, tuple]:
        """TCP stream -> its MPTCP connection's (stream, master TCP stream, subflows text) as a pass ends."""
        return {stream: (sub.conn.stream, sub.conn.master, "".join(f"{s} " for s in sub.conn.subflows))
                for stream, sub in self.subflows.items() if sub.conn is not None}

    # -- tshark's mptcp_alloc_analysis / attach / get_meta_from_token / get_or_create_mptcpd_from_key ---------

    def _alloc(self, sub: Subflow, me: tuple, peer: tuple) -> Connection:
        conn = sub.conn = Connection(self.count)
        self.count += 1
        sub.meta = {me: 0, peer: 1}          # tshark's arbitrary assignment, changed when a token says otherwise
        return conn

    @staticmethod
    def _attach(conn: Connection, sub: Subflow, stream: int) -> None:
        sub.conn = conn
        if stream not in conn.subflows:
            conn.subflows.insert(0, stream)

    def _from_token(self, sub: Subflow, stream: int, ep: tuple, other: tuple, token: int) -> Connection:
        conn = sub.conn
        if conn is not None and ep in sub.meta and conn.metas[sub.meta[ep]].has_token:
            return conn
        found = self.tokens.get(token)
        if found is not None:
            conn = found
            self._attach(conn, sub, stream)
            idx = next((i for i, m in enumerate(conn.metas) if m.has_token and m.token == token), 0)
        else:
            if conn is None:
                conn = self._alloc(sub, ep, other)
                self._attach(conn, sub, stream)
                idx = 0
            else:
                idx = 1 if conn.metas[0].has_token else 0
            meta = conn.metas[idx]
            meta.token, meta.has_token = token, True
            if len(self.tokens) >= MAX_CONNECTIONS:
                self.tokens.pop(next(iter(self.tokens)))
            self.tokens[token] = conn
        sub.meta = {ep: idx, other: 1 - idx}
        return conn

    def _from_key(self, sub: Subflow, stream: int, ep: tuple, other: tuple, key: int, version: int,
                  flags: int) -> Meta:
        if sub.conn is not None and ep in sub.meta and sub.conn.metas[sub.meta[ep]].has_key:
            return sub.conn.metas[sub.meta[ep]]
        token, idsn = crypto(version, flags, key)
        conn = self._from_token(sub, stream, ep, other, token)
        meta = conn.metas[sub.meta[ep]]
        meta.key, meta.idsn, meta.has_key = key, idsn, True
        return meta

    def _meta(self, sub: Subflow, ep: tuple) -> Meta | None:
        return sub.conn.metas[sub.meta[ep]] if sub.conn is not None and ep in sub.meta else None

    def _dss_meta(self, sub: Subflow, ep: tuple) -> Meta | None:
        """The direction whose base a DSS value of `ep`'s counts from. On tshark's second pass (-2) a joined
        subflow (not the master) counts from the other direction's: measured on the real capture with its
        addresses and ports swapped every way (the client's address or port the lower, in the master or in the
        subflow), every time."""
        conn = sub.conn
        if self.learnt is None or conn is None or ep not in sub.meta or conn.master is None \
                or self.subflows.get(conn.master) is sub:
            return self._meta(sub, ep)
        return conn.metas[1 - sub.meta[ep]]

    def tolerates_dupack(self, d, stream: int) -> bool:
        """Whether a duplicate ACK of segment `d` is MPTCP's (tshark: the connection signalled an address or a
        priority since the sender's last segment): then it is no TCP duplicate ACK."""
        sub = self.subflows.get(stream)
        if sub is None or sub.conn is None:
            return False
        me = (d.src, d.sport)
        seen = sub.operations.get(me, 0)
        sub.operations[me] = sub.conn.operations
        return seen != sub.conn.operations

    # -- per segment ----------------------------------------------------------------------------------------------

    def analyze(self, d, stream: int, data: bytes, spans) -> None:
        """Record `d.mptcp` for TCP segment `d` of TCP stream `stream`, whose MPTCP options are `spans`
        ((offset, length) each, whole options within the header)."""
        me, peer = (d.src, d.sport), (d.dst, d.dport)
        sub = self.subflows.get(stream)
        if sub is None:
            if len(self.subflows) >= MAX_SUBFLOWS:
                self.subflows.pop(next(iter(self.subflows)))
            sub = self.subflows[stream] = Subflow()
        out = FrameMptcp()
        for p, n in spans:
            out.options.append(self._option(sub, stream, me, peer, data, p, n))
        conn = sub.conn
        facts = self.learnt.get(stream) if self.learnt else None
        if facts is not None and facts[2] is not None:
            # tshark's second pass: the connection as the first pass left it, from the first segment on
            mp_stream, master, subflows = facts[2]
            out.analysis = (mp_stream, master == stream, master, subflows)
        elif conn is not None:
            out.analysis = (conn.stream, conn.master == stream, conn.master,
                            "".join(f"{s} " for s in conn.subflows))
        d.mptcp = out
        d.protocols += ["mptcp"] * len(spans)         # tshark's protocol item for each option

    def _option(self, sub: Subflow, stream: int, me: tuple, peer: tuple, data: bytes, p: int, n: int) -> dict:
        vals: dict = {}
        try:
            self._values(sub, stream, me, peer, data, p, n, vals)
        except (struct.error, IndexError):     # cut by the snap length: tshark's exception, what came before kept
            pass
        return vals

    def _values(self, sub: Subflow, stream: int, me: tuple, peer: tuple, data: bytes, p: int, n: int,
                vals: dict) -> None:
        if n < 3:
            return
        subtype = data[p + 2] >> 4
        if sub.conn is None and subtype > JOIN:       # tshark allocates a connection no token will find
            self._alloc(sub, me, peer)
        if subtype == CAPABLE and n in (12, 20, 22, 24):
            version, flags = data[p + 2] & 0x0F, data[p + 3]
            key = struct.unpack_from("!Q", data, p + 4)[0]
            meta = self._from_key(sub, stream, me, peer, key, version, flags)
            sub.conn.master = stream
            vals["token"], vals["idsn"] = meta.token, meta.idsn
            if n >= 20:
                recv = struct.unpack_from("!Q", data, p + 12)[0]
                theirs = self._meta(sub, peer)
                if theirs is not None and theirs.has_key:
                    vals["mismatch"] = theirs.key != recv
                else:
                    self._from_key(sub, stream, peer, me, recv, version, flags)
        elif subtype == JOIN:
            if n == 12:
                token = struct.unpack_from("!I", data, p + 4)[0]
                self._from_token(sub, stream, peer, me, token)      # the receiver's token
            elif sub.conn is None:
                self._alloc(sub, me, peer)
        elif subtype in (3, 4, 5) and p + n <= len(data):      # ADD_ADDR, REMOVE_ADDR, MP_PRIO, dissected whole
            sub.conn.operations += 1
        elif subtype == DSS and n >= 4:
            self._dss(sub, me, peer, data, p, n, vals)

    def _dss(self, sub: Subflow, me: tuple, peer: tuple, data: bytes, p: int, n: int, vals: dict) -> None:
        flags, q, end = data[p + 3] & 0x1F, p + 4, min(p + n, len(data))
        if flags & DATA_ACK:
            size = 8 if flags & DATA_ACK8 else 4
            if q + size > end:
                return
            raw = int.from_bytes(data[q:q + size], "big")
            vals["ack"] = relative(raw, self._dss_meta(sub, peer), size == 8)
            q += size
        if flags & MAPPING:
            size = 8 if flags & DSN8 else 4
            if q + size > end:
                return
            raw = int.from_bytes(data[q:q + size], "big")
            vals["dsn"] = relative(raw, self._dss_meta(sub, me), size == 8, raw_unknown=True)


def mptcp_spans(data: bytes, p: int, end: int) -> list[tuple[int, int]]:
    """(offset, length) of each MPTCP option among the options data[p:end], as TCP's option walk finds them:
    also one the snap length cut after its length byte (tshark starts dissecting it)."""
    out = []
    there = min(end, len(data))
    while p < there:
        kind = data[p]
        if kind == 0:
            break
        if kind == 1:
            p += 1
            continue
        if p + 1 >= there:
            break
        n = data[p + 1]
        if n < 2 or p + n > end:
            break
        if kind == KIND:
            out.append((p, n))
        p += n
    return out


def has_option(d) -> bool:
    """Whether TCP segment `d` (capture.decode.Decoded) carries an MPTCP option."""
    span = d.spans[-1] if d.spans else None
    if span is None or span[0] != "tcp" or span[2] <= 20:
        return False
    p, end = span[1] + 20, span[1] + span[2]
    data = d.transport_data()
    return 30 in data[p:end] and bool(mptcp_spans(data, p, end))
