"""UDP conversations as tshark numbers them: udp.stream (first-seen order of an address/port pair, both
directions) and the times since the conversation's first and previous frames (udp.time_relative/time_delta).
Bounded like TcpTable: past LIMIT conversations the oldest are forgotten (their indexes are never reused)."""
from __future__ import annotations

from collections import OrderedDict

LIMIT = 100_000
INCOMPLETE = -1           # in UdpTable.replies: some replies went unrecorded (LIMIT)


class UdpTable:
    __slots__ = ("streams", "count", "echoes", "replies", "learnt")

    def __init__(self):
        # OrderedDict: the oldest leaves in constant time (a dict scans the holes its earlier deletions left)
        self.streams: OrderedDict[tuple, list] = OrderedDict()    # key() -> [index, first ns, last ns]
        self.count = 0
        # ICMP echo (src, dst, id, seq) -> [request frame, ns, answered]
        self.echoes: OrderedDict[tuple, list] = OrderedDict()
        # -2 (cli/two_pass_opts.py): the first pass records each answered request's reply frame (`replies`,
        # request frame -> reply frame), the second shows them (`learnt`): "(reply in N)", or "no response"
        self.replies: dict[int, int] | None = None
        self.learnt: dict[int, int] | None = None

    @staticmethod
    def key(src: str, sport: int, dst: str, dport: int) -> tuple:
        """One flat tuple for both directions (a third of two nested pairs' memory: LIMIT of them are kept)."""
        return (src, sport, dst, dport) if (src, sport) <= (dst, dport) else (dst, dport, src, sport)

    def _conv(self, src: str, sport: int, dst: str, dport: int, ts: int) -> list:
        key = self.key(src, sport, dst, dport)
        conv = self.streams.get(key)
        if conv is None:
            if len(self.streams) >= LIMIT:
                self.streams.popitem(last=False)
            conv = self.streams[key] = [self.count, ts, ts]
            self.count += 1
        return conv

    def icmp(self, d) -> None:
        """An ICMP message: the UDP stream of the datagram it quotes (tshark counts it as that conversation's);
        an echo reply's request frame and response time."""
        info, ts = d.icmp, d.frame.ts_ns
        if info.quoted_udp is not None and info.quoted_udp[0] + 8 <= d.payload_offset + len(d.payload):
            _, src, sport, dst, dport = info.quoted_udp       # (tshark: only a whole quoted UDP header)
            info.udp_stream = self._conv(src, sport, dst, dport, ts)[0]
        if info.ident is None:
            return
        if info.type in (8, 128):
            if len(self.echoes) >= LIMIT:
                self.echoes.popitem(last=False)
            self.echoes[(d.src, d.dst, info.ident, info.seq)] = [d.frame.number, ts, False]
            learnt = self.learnt
            if learnt is not None:
                info.response_in = learnt.get(d.frame.number)
                if info.response_in is None and INCOMPLETE not in learnt:
                    # tshark says nothing is missing of a request to a multicast group: " (multicast)"
                    from ipaddress import ip_address
                    info.unanswered = "multicast" if ip_address(d.dst).is_multicast else True
        else:
            request = self.echoes.get((d.dst, d.src, info.ident, info.seq))
            if request is not None and not request[2]:     # (a second reply to it, a duplicate, answers nothing)
                info.request_in, info.resptime_ns = request[0], ts - request[1]
                request[2] = True
                replies = self.replies
                if replies is not None:
                    if len(replies) < LIMIT:
                        replies[request[0]] = d.frame.number
                    else:          # full: the second pass shows the replies recorded, and claims no request unanswered
                        replies[INCOMPLETE] = 0

    def analyze(self, d) -> None:
        """Set d.udp = (stream index, ns since the stream's first frame, ns since its previous frame with a
        payload)."""
        ts = d.frame.ts_ns
        if d.problems and any(p.abbrev == "udp.length.bad" and " < " in p.message for _, p in d.problems):
            return                  # (tshark stops at a length under 8, before it looks up the conversation)
        conv = self._conv(d.src, d.sport, d.dst, d.dport, ts)
        if d.payload or d.cut:      # tshark 4.0 times (and moves on) the conversation only for frames with a
            # payload (on the wire: a snap length may have cut it all)
            d.udp = (conv[0], ts - conv[1], ts - conv[2])
            conv[2] = ts
        else:
            d.udp = (conv[0], 0, 0)
