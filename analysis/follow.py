"""-z follow,PROTO,MODE,STREAM: the payload of one conversation, per direction, as tshark's follow.

STREAM is a stream index (conversations numbered in the order they first appear, as tshark's udp.stream and
tcp.stream) or two endpoints ADDR:PORT,ADDR:PORT. Node 0 is the source of the stream's first packet.

  udp    one record per datagram
  tcp    the byte stream of each direction as tshark's follow_tcp_tap_listener builds it: retransmitted bytes
         dropped, overlaps trimmed, a segment past a gap held until the gap fills or the peer acknowledges past
         it (then "[N bytes missing in capture file]" and a NUL stand for the gap)
  blank  one record per blank message, with its summary and the buffers the dissector built from it
         (reassembled and inflated chunk data); STREAM numbers the UDP conversations as follow,udp does;
         "decoded": each message's summary and tree

The other game streams (enet, iceball, rutentoy, websocket, freeblox): analysis/follow_game.py.
"""
from __future__ import annotations

from ..capture.tcp_analysis import seq_lt
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
                "nodes": nodes, "ipv6": self.ipv6, "records": self.records}


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
        self.next_seq: list[int | None] = [None, None]   # per node: the next sequence number of its stream
        self.written = [0, 0]                               # per node: bytes of its stream so far
        self.held: list[list[dict]] = [[], []]              # per node: records past a gap, in arrival order

    def add(self, packet):
        node = self.in_stream(packet)
        if node is None:
            return
        d = packet.decoded
        t = d.tcp                # tshark's numbers are relative (a gap test against 0 must not wrap)
        data, seq, ack = bytes(d.payload), d.seq if t is None else t.seq, d.ack if t is None else t.ack
        length = len(data) + (d.cut or 0)          # the segment's length on the wire (a snap length cuts data)
        if d.flags is not None and d.flags & 0x02:  # SYN takes one sequence number
            seq = (seq + 1) & 0xFFFFFFFF
        other = 1 - node
        while self._settle(other, ack or 0, packet.number):
            pass                                    # this segment may acknowledge what the other side's gap hid
        if self.written[node] == 0 and self.next_seq[node] is None:
            self.next_seq[node] = seq
        nxt = self.next_seq[node]
        if seq_lt(seq, nxt):                       # dated: keep only what it adds past the stream's end
            end = (seq + length) & 0xFFFFFFFF
            if not seq_lt(nxt, end):
                return
            data = data[(nxt - seq) & 0xFFFFFFFF:]
            seq, length = nxt, (end - nxt) & 0xFFFFFFFF
        if not data:
            return
        rec = {"frame": packet.number, "node": node, "ts_ns": packet.frame.ts_ns, "data": data, "seq": seq}
        if seq == nxt:
            self.next_seq[node] = (nxt + length) & 0xFFFFFFFF
            self.written[node] += len(data)
            self.records.append(rec)
            while self._settle(node, 0, packet.number):
                pass
        else:
            self.held[node].append(rec)             # past a gap: held until it fits or is acknowledged

    def _settle(self, node: int, acknowledged: int, frame: int) -> bool:
        """tshark's check_follow_fragments: the first held record that now fits (or repeats bytes) moves to the
        stream; else, when the peer acknowledged past the lowest held one, the gap becomes a marker. Whether
        anything changed."""
        held, nxt = self.held[node], self.next_seq[node]
        if not held:
            return False
        lowest = held[0]["seq"]
        for i, rec in enumerate(held):
            if seq_lt(rec["seq"], lowest):
                lowest = rec["seq"]
            if seq_lt(rec["seq"], nxt):            # repeats bytes already in the stream: keep what is new
                end = (rec["seq"] + len(rec["data"])) & 0xFFFFFFFF
                if seq_lt(nxt, end):
                    new = rec["data"][(nxt - rec["seq"]) & 0xFFFFFFFF:]
                    self.records.append({**rec, "data": new, "seq": end})
                    self.next_seq[node] = end
                del held[i]
                return True
            if rec["seq"] == nxt:
                self.records.append(rec)
                self.next_seq[node] = (nxt + len(rec["data"])) & 0xFFFFFFFF
                del held[i]
                return True
        if seq_lt(lowest, acknowledged):
            gap = (lowest - nxt) & 0xFFFFFFFF
            gap -= (gap & 0x80000000) << 1           # (tshark prints it as a C int)
            marker = f"[{gap} bytes missing in capture file]".encode() + b"\0"
            self.records.append({"frame": frame, "node": node, "ts_ns": 0, "data": marker, "seq": lowest})
            self.next_seq[node] = lowest
            return True
        return False


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
