"""-z conv,TYPE and -z endpoints,TYPE: traffic between address pairs and per address, counted as tshark does.

A conversation's "A" side is the source of its first packet; frames from A are its "->" (tx) column. Bytes are
frame lengths on the wire. Rows come out busiest first, ties in first-seen order (tshark's draw loop).
"""
from __future__ import annotations

from ..engine.demand import of_filter
from .stats_base import StatsError, Tap, register
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
        if d.network != kind or d.src is None:
            return None
        return d.src, d.dst, None, None
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


def _busiest_first(rows, total):
    return sorted(rows, key=lambda r: -total(r))       # sorted() is stable: ties keep first-seen order


def _endpoint_name(addr, port):
    return addr if port is None else f"{addr}:{port}"


@register
class Conversations(_Table):
    name = verb = "conv"
    kind = "conv"

    def __init__(self, args):
        super().__init__(args)
        self.convs: dict = {}

    def add(self, packet):
        a = self.accept(packet)
        if a is None:
            return
        src, dst, sport, dport = a
        ends = ((src, sport), (dst, dport))
        k = ((src, sport or -1), (dst, dport or -1))      # no None in comparisons (eth/ip have no ports)
        key = k if k[0] <= k[1] else k[::-1]
        c = self.convs.get(key)
        ts = packet.frame.ts_ns - self.first_ns
        if c is None:
            c = self.convs[key] = {"a": ends[0], "b": ends[1], "tx": [0, 0], "rx": [0, 0], "start": ts, "stop": ts}
        c["start"], c["stop"] = min(c["start"], ts), max(c["stop"], ts)
        side = c["tx"] if ends[0] == c["a"] else c["rx"]
        side[0] += 1
        side[1] += packet.frame.length

    def result(self):
        rows = []
        for c in _busiest_first(self.convs.values(), lambda c: c["tx"][0] + c["rx"][0]):
            (a, ap), (b, bp) = c["a"], c["b"]
            rows.append({"a": a, "a_port": ap, "b": b, "b_port": bp,
                         "a_name": _endpoint_name(a, ap), "b_name": _endpoint_name(b, bp),
                         "rx_frames": c["rx"][0], "rx_bytes": c["rx"][1],
                         "tx_frames": c["tx"][0], "tx_bytes": c["tx"][1],
                         "frames": c["tx"][0] + c["rx"][0], "bytes": c["tx"][1] + c["rx"][1],
                         "rel_start": c["start"] / 1e9, "duration": (c["stop"] - c["start"]) / 1e9})
        return {"kind": self.kind, "type": self.type, "title": f"{TITLES[self.type]} Conversations",
                "filter": self.filter, "ports": self.type in ("udp", "tcp", "sctp"), "conversations": rows}


@register
class Endpoints(_Table):
    name = verb = "endpoints"
    kind = "endpoints"

    def __init__(self, args):
        super().__init__(args)
        self.ends: dict = {}

    def _count(self, key, slot, size):
        e = self.ends.setdefault(key, [0, 0, 0, 0])
        e[slot] += 1
        e[slot + 1] += size

    def add(self, packet):
        a = self.accept(packet)
        if a is None:
            return
        src, dst, sport, dport = a
        size = packet.frame.length
        self._count((src, sport), 0, size)
        self._count((dst, dport), 2, size)

    def result(self):
        rows = [{"address": addr, "port": port, "packets": e[0] + e[2], "bytes": e[1] + e[3],
                 "tx_packets": e[0], "tx_bytes": e[1], "rx_packets": e[2], "rx_bytes": e[3]}
                for (addr, port), e in self.ends.items()]
        return {"kind": self.kind, "type": self.type, "title": f"{TITLES[self.type]} Endpoints",
                "filter": self.filter, "ports": self.type in ("udp", "tcp", "sctp"),
                "endpoints": _busiest_first(rows, lambda r: r["packets"])}

