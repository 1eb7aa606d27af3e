"""-z conv,TYPE and -z endpoints,TYPE: traffic between address pairs and per address, counted as tshark does.

A conversation's "A" side is the source of its first packet; frames from A are its "->" (tx) column. Bytes are
frame lengths on the wire. Rows come out busiest first, ties in first-seen order (tshark's draw loop).
"""
from __future__ import annotations

from ..engine.demand import of_filter
from .stats_base import StatsError, Tap, register
from .spill_table import LazyRows, SpillTable
from .stats_phs import compile_optional

TITLES = {"eth": "Ethernet", "ip": "IPv4", "ipv6": "IPv6", "udp": "UDP", "tcp": "TCP", "sctp": "SCTP"}


def _mac(b: bytes) -> str:
    return b.hex(":")


def addresses(packet, kind: str):
    """(src, dst, sport, dport) of a packet for one conversation type, or None when it has no such layer."""
    d = packet.decoded
    if kind == "eth":
        frame = packet.frame
        if frame.linktype != 1 or len(frame.data) < 14:
            return None
        return _mac(frame.data[6:12]), _mac(frame.data[0:6]), None, None
    if kind in ("ip", "ipv6"):
        ends = d.ip_tap() if d.network == kind else None
        return None if ends is None else (*ends, None, None)
    if d.transport != kind or d.sport is None:
        return None
    return d.src, d.dst, d.sport, d.dport


class _Table(Tap):
    """What conversations and endpoints share: the type argument, an optional filter, time origin."""

    verb = ""

    def __init__(self, args):
        if not args or args[0] not in TITLES:
            raise StatsError(f"-z {self.verb},{','.join(args)}: expected {self.verb},"
                             f"{'|'.join(TITLES)}[,FILTER]")
        self.type = args[0]
        self.name = f"{self.verb},{self.type}"
        self.filter = ",".join(args[1:])
        self.match = compile_optional(self.filter, self.verb)
        self.first_ns = None

    def standard_only(self) -> bool:
        return self.match is None

    def demand(self):
        return of_filter(self.filter or None)

    def accept(self, packet):
        if self.first_ns is None:
            self.first_ns = packet.frame.ts_ns      # times are relative to the capture's first frame
        if self.match is not None and not self.match(packet):
            return None
        return addresses(packet, self.type)


MEMORY_ROWS = 20_000     # a table's entries in memory; beyond, they spill to disk (analysis/spill_table.py)

# A conversation: key (one end, its port, the other end, its port; -1 for no port), the lower end first;
# entry [first frame, whether the lower end is A (the source of the first frame), A's frames, A's bytes,
# B's frames, B's bytes, start, stop] (times in ns from the capture's first frame).
CONV_KEYS = ("low", "low_port", "high", "high_port")
CONV_VALUES = ("first", "low_is_a", "a_frames", "a_bytes", "b_frames", "b_bytes", "start", "stop")
_CROSSED = {"a_frames": "b_frames", "a_bytes": "b_bytes", "b_frames": "a_frames", "b_bytes": "a_bytes"}
# each counter adds the entry's own, or its other side's when the entry's A is the row's B
CONV_MERGE = ", ".join(f"{c} = {c} + CASE WHEN excluded.low_is_a = low_is_a THEN excluded.{c} ELSE excluded.{x} END"
                       for c, x in _CROSSED.items()) + \
    ", start = min(start, excluded.start), stop = max(stop, excluded.stop)"
# (`first` and `low_is_a` stay the row's: an entry that spills later began later)


def conversation_order(pair):
    """Busiest first, ties in first-seen order (tshark's draw loop)."""
    c = pair[1]
    return -(c[2] + c[4]), c[0]


def fold_conversation(into: list, entry: list) -> None:
    """Add a later-begun entry of the same conversation (another shard's) to `into`."""
    same = entry[1] == into[1]
    into[2] += entry[2] if same else entry[4]
    into[3] += entry[3] if same else entry[5]
    into[4] += entry[4] if same else entry[2]
    into[5] += entry[5] if same else entry[3]
    into[6], into[7] = min(into[6], entry[6]), max(into[7], entry[7])


# An endpoint: key (address, port or -1); entry [first seen, tx packets, tx bytes, rx packets, rx bytes], where
# first seen is twice the first frame's number, plus one when the endpoint was that frame's destination.
END_KEYS = ("address", "port")
END_VALUES = ("first", "tx_packets", "tx_bytes", "rx_packets", "rx_bytes")
END_MERGE = """tx_packets = tx_packets + excluded.tx_packets,
    tx_bytes = tx_bytes + excluded.tx_bytes, rx_packets = rx_packets + excluded.rx_packets,
    rx_bytes = rx_bytes + excluded.rx_bytes"""


def endpoint_order(pair):
    e = pair[1]
    return -(e[1] + e[3]), e[0]


def _rows(table, order, row):
    """A table's rows for the result: a list, or rows read from disk as they are written when it spilled."""
    if isinstance(table, SpillTable) and table.spilled:
        return LazyRows(lambda: map(row, table.sorted_rows()), table.count())
    return [row(pair) for pair in sorted(table.items(), key=order)]


def _port(p):
    return None if p == -1 else p


def _endpoint_name(addr, port):
    return addr if port is None else f"{addr}:{port}"


@register
class Conversations(_Table):
    name = verb = "conv"
    kind = "conv"

    def __init__(self, args):
        super().__init__(args)
        self.convs = SpillTable(CONV_KEYS, CONV_VALUES, CONV_MERGE, "a_frames + b_frames DESC, first", MEMORY_ROWS)

    def shard(self) -> None:
        """In a -j or Dask shard the table stays in memory: it moves to the parent to be merged."""
        self.convs.limit = float("inf")

    def add(self, packet):
        a = self.accept(packet)
        if a is None:
            return
        src, dst, sport, dport = a
        one = (src, -1 if sport is None else sport)
        other = (dst, -1 if dport is None else dport)
        low_is_src = one <= other
        key = one + other if low_is_src else other + one
        convs = self.convs
        c = convs.get(key)
        ts = packet.frame.ts_ns - self.first_ns
        if c is None:
            c = convs.add(key, [packet.number, low_is_src, 0, 0, 0, 0, ts, ts])
        elif ts < c[6]:
            c[6] = ts
        elif ts > c[7]:
            c[7] = ts
        if low_is_src == c[1]:
            c[2] += 1
            c[3] += packet.frame.length
        else:
            c[4] += 1
            c[5] += packet.frame.length

    @staticmethod
    def _row(pair):
        (low, low_port, high, high_port), c = pair
        a, ap, b, bp = (low, low_port, high, high_port) if c[1] else (high, high_port, low, low_port)
        ap, bp = _port(ap), _port(bp)
        return {"a": a, "a_port": ap, "b": b, "b_port": bp,
                "a_name": _endpoint_name(a, ap), "b_name": _endpoint_name(b, bp),
                "rx_frames": c[4], "rx_bytes": c[5], "tx_frames": c[2], "tx_bytes": c[3],
                "frames": c[2] + c[4], "bytes": c[3] + c[5],
                "rel_start": c[6] / 1e9, "duration": (c[7] - c[6]) / 1e9}

    def result(self):
        rows = _rows(self.convs, conversation_order, self._row)
        return {"kind": self.kind, "type": self.type, "title": f"{TITLES[self.type]} Conversations",
                "filter": self.filter, "ports": self.type in ("udp", "tcp", "sctp"), "conversations": rows}


@register
class Endpoints(_Table):
    name = verb = "endpoints"
    kind = "endpoints"

    def __init__(self, args):
        super().__init__(args)
        self.ends = SpillTable(END_KEYS, END_VALUES, END_MERGE, "tx_packets + rx_packets DESC, first", MEMORY_ROWS)

    def shard(self) -> None:
        """In a -j or Dask shard the table stays in memory: it moves to the parent to be merged."""
        self.ends.limit = float("inf")

    def _count(self, key, slot, size, seen):
        e = self.ends.get(key)
        if e is None:
            e = self.ends.add(key, [seen, 0, 0, 0, 0])
        e[slot] += 1
        e[slot + 1] += size

    def add(self, packet):
        a = self.accept(packet)
        if a is None:
            return
        src, dst, sport, dport = a
        size, seen = packet.frame.length, 2 * packet.number
        self._count((src, -1 if sport is None else sport), 1, size, seen)
        self._count((dst, -1 if dport is None else dport), 3, size, seen + 1)

    @staticmethod
    def _row(pair):
        (addr, port), e = pair
        return {"address": addr, "port": _port(port), "packets": e[1] + e[3], "bytes": e[2] + e[4],
                "tx_packets": e[1], "tx_bytes": e[2], "rx_packets": e[3], "rx_bytes": e[4]}

    def result(self):
        return {"kind": self.kind, "type": self.type, "title": f"{TITLES[self.type]} Endpoints",
                "filter": self.filter, "ports": self.type in ("udp", "tcp", "sctp"),
                "endpoints": _rows(self.ends, endpoint_order, self._row)}
