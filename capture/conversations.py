"""UDP conversations as tshark numbers them: udp.stream (first-seen order of an address/port pair, both
directions) and the times since the conversation's first and previous frames (udp.time_relative/time_delta).
Bounded like TcpTable: past LIMIT conversations the oldest are forgotten (their indexes are never reused)."""
from __future__ import annotations

LIMIT = 100_000


class UdpTable:
    __slots__ = ("streams", "count")

    def __init__(self):
        self.streams: dict[tuple, list] = {}     # conversation key -> [index, first ns, last ns]
        self.count = 0

    def analyze(self, d) -> None:
        """Set d.udp = (stream index, ns since the stream's first frame, ns since its previous frame with a
        payload)."""
        a, b = (d.src, d.sport), (d.dst, d.dport)
        key = (a, b) if a <= b else (b, a)
        ts = d.frame.ts_ns
        conv = self.streams.get(key)
        if conv is None:
            if len(self.streams) >= LIMIT:
                del self.streams[next(iter(self.streams))]
            conv = self.streams[key] = [self.count, ts, ts]
            self.count += 1
        if d.payload:        # tshark 4.0 times (and moves on) the conversation only for frames with a payload
            d.udp = (conv[0], ts - conv[1], ts - conv[2])
            conv[2] = ts
        else:
            d.udp = (conv[0], 0, 0)
