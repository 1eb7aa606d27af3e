"""-z icmp,srt[,FILTER] and -z icmpv6,srt[,FILTER]: echo requests, replies, loss, and the replies' response
times (minimum, maximum, mean, median, sample standard deviation, in ms), as tshark's tap-icmpstat.c and
tap-icmpv6stat.c print them.

A request counts when it is seen; a reply counts with its response time when it answers a request seen before
(capture/conversations.py matches them, as tshark's ICMP does in one pass)."""
from __future__ import annotations

import math

from ..engine.demand import of_filter
from .stats_base import Tap, register
from .stats_phs import compile_optional

RULE = "=" * 74


class EchoResponseTimes(Tap):
    v6 = False
    title = ""

    def __init__(self, args):
        self.filter = ",".join(args) if args else None
        self.match = compile_optional(self.filter or "", self.name)
        self.requests = 0
        self.times: list[tuple[float, int]] = []      # (ms, reply frame) per answered reply

    def standard_only(self) -> bool:
        return False        # the standard-only pass keeps no per-capture tables: no echo is matched there

    def demand(self):
        return of_filter(self.filter)       # (no game field: the games' layers are identified, not built)

    def add(self, packet):
        info = packet.decoded.icmp
        if info is None or info.v6 != self.v6 or info.ident is None:
            return
        if self.match is not None and not self.match(packet):
            return
        if info.type in (8, 128):
            self.requests += 1
        elif info.request_in is not None:
            self.times.append((info.resptime_ns / 1e6, packet.number))

    def result(self):
        times = [t for t, _ in self.times]
        out = {"kind": self.kind, "layout": "icmp_srt", "title": self.title, "filter": self.filter,
               "requests": self.requests, "replies": len(times), "lost": self.requests - len(times)}
        if times:
            # the first reply of the least and of the most time (tshark keeps the first one of each)
            low = min(range(len(times)), key=lambda i: (times[i], i))
            high = min(range(len(times)), key=lambda i: (-times[i], i))
            ordered = sorted(times)
            n = len(ordered)
            mean = sum(times) / n
            median = ordered[n // 2] if n % 2 else (ordered[(n - 1) // 2] + ordered[n // 2]) / 2
            deviation = math.sqrt(sum((t - mean) ** 2 for t in ordered) / (n - 1)) if n > 1 else 0.0
            # tshark's maximum starts at 0: replies of no positive time leave it, and its frame, at 0
            top, top_frame = (times[high], self.times[high][1]) if times[high] > 0 else (0.0, 0)
            out.update(min=times[low], max=top, mean=mean, median=median, sdev=deviation,
                       min_frame=self.times[low][1], max_frame=top_frame)
        return out


@register
class IcmpResponseTimes(EchoResponseTimes):
    name = kind = "icmp,srt"
    title = "ICMP"


@register
class Icmpv6ResponseTimes(EchoResponseTimes):
    name = kind = "icmpv6,srt"
    v6 = True
    title = "ICMPv6"


def text_lines(r) -> list[str]:
    lines = ["", RULE, f"{r['title']} Service Response Time (SRT) Statistics (all times in ms):",
             f"Filter: {r['filter'] if r['filter'] is not None else '<none>'}", "",
             "Requests  Replies   Lost      % Loss"]
    header = "Minimum   Maximum   Mean      Median    SDeviation     Min Frame Max Frame"
    if r["requests"]:
        lost = r["lost"] % 2**32      # (unsigned in tshark: more replies than requests wrap around)
        lines += [f"{r['requests']:<10}{r['replies']:<10}{lost:<10}{100.0 * lost / r['requests']:5.1f}%", "",
                  header]
        if r["replies"]:
            lines.append("".join(f"{r[k]:<10.3f}" for k in ("min", "max", "mean", "median", "sdev"))
                         + f"     {r['min_frame']:<10}{r['max_frame']:<10}")
        else:       # no reply: tshark's minimum is its start value, UINT_MAX, shown as 0
            lines.append("0.000     0.000     0.000     0.000     0.000          0         0         ")
    else:
        lines += ["0         0         0           0.0%", "", header,
                  "0.000     0.000     0.000     0.000     0.000          0         0"]
    return lines + [RULE]
