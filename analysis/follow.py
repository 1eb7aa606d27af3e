"""-z follow,PROTO,MODE,STREAM: the payload of one conversation, per direction, as tshark's follow.

STREAM is a stream index (conversations numbered in the order they first appear, as tshark's udp.stream and
tcp.stream) or two endpoints ADDR:PORT,ADDR:PORT. Node 0 is the source of the stream's first packet.

  udp    one record per datagram
  tcp    the byte stream of each direction, in order: retransmitted bytes are dropped, overlaps trimmed
         (a simple in-order stream: out-of-order segments are not reordered)
  blank  one record per blank message, with its summary and the buffers the dissector built from it
         (reassembled and inflated chunk data); STREAM numbers the UDP conversations as follow,udp does;
         "decoded": each message's summary and tree

The other game streams (enet, iceball, rutentoy, websocket, freeblox): analysis/follow_game.py.
"""
from __future__ import annotations

from .stats_base import StatsError, Tap, register

MODES = ("ascii", "hex", "raw", "yaml")


def parse_endpoint(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise StatsError(f"-z follow: {text!r} is not ADDR:PORT")
    return host, int(port)


class Follow(Tap):
    kind = "follow"
    transport = ""
    transports: tuple = ()        # a protocol carried by several transports: the first packet's one is followed
    modes = MODES

    def __init__(self, args):
        usage = f"follow,{self.proto},{'|'.join(self.modes)},N or ...,ADDR:PORT,ADDR:PORT"
        if not args or args[0] not in self.modes:
            raise StatsError(f"-z follow,{self.proto}: expected a mode (usage: -z {usage})")
        self.mode = args[0]
        rest = args[1:]
        self.index = self.pair = None
        if len(rest) == 1 and rest[0].isdigit():
            self.index = int(rest[0])
        elif len(rest) == 2:
            self.pair = (parse_endpoint(rest[0]), parse_endpoint(rest[1]))
        else:
            raise StatsError(f"-z follow,{self.proto},{','.join(args)}: expected a stream number or two"
                             f" ADDR:PORT (usage: -z {usage})")
        self.streams: dict = {}       # conversation key -> stream index
        self.nodes = None             # ((host, port), (host, port)) of the followed stream
        self.firsts: dict = {}        # per transport: (source, destination) of the followed stream's first packet
        self.records: list[dict] = []
        self.ipv6 = False

    def in_stream(self, packet) -> int | None:
        """The node (0/1) of a packet of the followed stream, else None."""
        d = packet.decoded
        if d.sport is None or (d.transport != self.transport and d.transport not in self.transports):
            return None
        src, dst = (d.src, d.sport), (d.dst, d.dport)
        key = (d.transport, src, dst) if src <= dst else (d.transport, dst, src)
        numbering = self.streams.setdefault(d.transport, {})          # udp.stream / tcp.stream / sctp.assoc
        index = numbering.setdefault(key, len(numbering))
        if self.index is not None:
            if index != self.index:
                return None
        elif {src, dst} != set(self.pair) or (src == dst and self.pair[0] != self.pair[1]):
            return None
        first = self.firsts.setdefault(d.transport, (src, dst))    # node 0: the stream's first packet's source
        if self.nodes is None:
            if not self.accepts(packet):
                return None
            self.nodes, self.transport = first, d.transport
            self.ipv6 = d.network == "ipv6"
        if d.transport != self.transport:
            return None
        return 0 if src == self.nodes[0] and dst == self.nodes[1] else 1

    def accepts(self, packet) -> bool:
        """May this packet start the followed stream (a game follow waits for a packet of its protocol)."""
        return True

    def filter_text(self) -> str:
        if self.index is not None:
            transport = self.transport or (self.transports or ("udp",))[0]
            field = "sctp.assoc_index" if transport == "sctp" else f"{transport}.stream"
            return f"{field} eq {self.index}"
        (a, ap), (b, bp) = self.pair
        ip = "ipv6" if ":" in a else "ip"
        t = self.transport

        def one(s, sp, d, dp):
            return f"(({ip}.src eq {s} and {t}.srcport eq {sp}) and ({ip}.dst eq {d} and {t}.dstport eq {dp}))"
        return f"{one(a, ap, b, bp)} or {one(b, bp, a, ap)}"

    def record(self, packet, node: int, data: bytes, **extra) -> None:
        self.records.append({"frame": packet.number, "node": node, "ts_ns": packet.frame.ts_ns,
                             "data": data, **extra})

    def result(self):
        nodes = [{"host": h, "port": p} for h, p in self.nodes] if self.nodes else \
            [{"host": "", "port": 0}, {"host": "", "port": 0}]
        return {"kind": self.kind, "proto": self.proto, "mode": self.mode, "filter": self.filter_text(),
                "nodes": nodes, "records": self.records}


@register
class FollowUdp(Follow):
    name = "follow,udp"
    proto = transport = "udp"

    def add(self, packet):
        node = self.in_stream(packet)
        if node is not None and packet.decoded.payload:
            self.record(packet, node, bytes(packet.decoded.payload))


@register
class FollowTcp(Follow):
    name = "follow,tcp"
    proto = transport = "tcp"

    def __init__(self, args):
        super().__init__(args)
        self.next_seq = [None, None]     # per node: the next in-order sequence number

    def add(self, packet):
        node = self.in_stream(packet)
        if node is None:
            return
        d = packet.decoded
        data, seq = bytes(d.payload), d.seq
        if d.flags is not None and d.flags & 0x02:          # SYN takes one sequence number
            self.next_seq[node] = (seq + 1) & 0xFFFFFFFF
            seq = (seq + 1) & 0xFFFFFFFF
        nxt = self.next_seq[node]
        if not data:
            return
        if nxt is not None:
            behind = (nxt - seq) & 0xFFFFFFFF
            if behind < 0x80000000:                  # starts before what we have: retransmission or overlap
                if behind >= len(data):
                    return
                data = data[behind:]
                seq = nxt
        self.next_seq[node] = (seq + len(data)) & 0xFFFFFFFF
        self.record(packet, node, data)


@register
class FollowBlank(Follow):
    name = "follow,blank"
    proto = "blank"
    transport = "udp"
    modes = (*MODES, "decoded")

    def filter_text(self):
        return super().filter_text() + " and blank"

    def add(self, packet):
        node = self.in_stream(packet)
        if node is None or packet.game is None or packet.protocol != "blank":
            return
        buffers = [{"name": s.name, "data": bytes(s.data)} for s in packet.sources[1:]]
        extra = {"label": packet.info, "tree": packet.game.item} if self.mode == "decoded" else {}
        self.record(packet, node, bytes(packet.decoded.payload), info=packet.info, buffers=buffers, **extra)
