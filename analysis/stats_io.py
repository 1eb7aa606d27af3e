"""-z io,stat,INTERVAL[,FILTER,...]: frames and bytes per time interval, one column per filter (none: all).

The interval arithmetic is tshark's (ui/cli/tap-iostat.c): times in microseconds relative to the first
frame; an interval of 0 or longer than the capture means one row for the whole capture; the duration is
rounded to the printed precision (the number of decimals given in INTERVAL, or chosen from the duration's
magnitude for a whole-capture row), and the last row ends at that rounded duration.
"""
from __future__ import annotations

from .stats_base import StatsError, Tap, register
from .stats_phs import compile_optional


def magnitude(value: int, max_w: int) -> int:
    """Digits of a number, at least 1 (tshark's magnitude())."""
    return min(max(len(str(value)), 1), max_w)


def parse_interval(text: str) -> tuple[int, int]:
    """'0.5' -> (500000 µs, precision 1)."""
    try:
        seconds = float(text)
    except ValueError:
        raise StatsError(f"-z io,stat,{text}: the interval must be a number of seconds") from None
    if seconds < 0 or seconds != seconds:
        raise StatsError(f"-z io,stat,{text}: the interval must not be negative")
    whole, _, frac = text.strip().partition(".")
    prec = len(frac.rstrip("0")) if frac else 0
    if prec > 6:
        raise StatsError(f"-z io,stat,{text}: at most 6 decimals (microseconds)")
    return round(seconds * 1_000_000), prec


@register
class IoStat(Tap):
    name = "io,stat"
    kind = "io_stat"
    usage = "io,stat,INTERVAL[,FILTER,...]"

    def __init__(self, args):
        if not args:
            raise StatsError(f"-z io,stat: missing interval (usage: -z {self.usage})")
        self.interval, self.prec = parse_interval(args[0])
        self.filters = args[1:] or [""]
        self.matchers = [compile_optional(f) for f in self.filters]
        self.bins = [dict() for _ in self.filters]      # column -> {interval index: [frames, bytes]}
        self.first_ns = None
        self.last_us = 0

    def standard_only(self) -> bool:
        return all(match is None for match in self.matchers)

    def add(self, packet):
        ts = packet.frame.ts_ns
        if self.first_ns is None:
            self.first_ns = ts
        rel = (ts - self.first_ns + 500) // 1000
        self.last_us = max(self.last_us, rel)
        for match, bins in zip(self.matchers, self.bins):
            if match is None or match(packet):
                # a whole-capture table (interval 0) bins by row later: keep one bin per microsecond index 0
                idx = rel // self.interval if self.interval else 0
                b = bins.setdefault(idx, [0, 0])
                b[0] += 1
                b[1] += packet.frame.length

    def result(self):
        duration = self.last_us
        whole = self.interval == 0 or self.interval > duration
        interval = duration if whole else self.interval
        dur_mag = magnitude(duration // 1_000_000, 5)
        if whole:
            prec = 1 if dur_mag >= 2 else 3 if dur_mag == 1 else 6
        else:
            prec = self.prec
        dv = 10 ** (6 - prec)
        rounded = duration + 5 * (dv // 10)          # tshark 4.0 rounds up by half a printed digit
        if whole:
            interval = rounded
        n = (rounded // interval + (1 if rounded % interval else 0)) if interval else 0
        rows = IoRows(self.bins, n, interval, rounded, whole)
        return {"kind": self.kind, "duration_us": duration, "rounded_duration_us": rounded,
                "interval_us": interval, "whole_capture": whole, "precision": prec,
                "filters": self.filters, "rows": rows}


class IoRows:
    """The rows of an io,stat table, made as they are read: a capture set spanning years at a 1 s interval has
    millions of rows (tshark prints them all, mostly empty), so they are never all held at once. The bins are
    sparse (interval index -> [frames, bytes]); `maxima(column)` gives the widest values for the column widths
    from the bins alone."""

    def __init__(self, bins, n: int, interval: int, rounded: int, whole: bool):
        self.bins, self.n, self.interval, self.rounded, self.whole = bins, n, interval, rounded, whole

    def __len__(self) -> int:
        return self.n

    def _cell(self, bins, i: int) -> tuple[int, int]:
        if self.whole:
            return tuple(sum(v[k] for v in bins.values()) for k in (0, 1))
        if i == self.n - 1:       # the last row also takes frames binned past the rounded end
            return tuple(sum(v[k] for j, v in bins.items() if j >= i) for k in (0, 1))
        return tuple(bins.get(i, (0, 0)))

    def row(self, i: int) -> dict:
        start = i * self.interval
        end = self.rounded if i == self.n - 1 else start + self.interval
        cols = [dict(zip(("frames", "bytes"), self._cell(bins, i))) for bins in self.bins]
        return {"start_us": start, "end_us": end, "last": i == self.n - 1, "columns": cols}

    def __iter__(self):
        return (self.row(i) for i in range(self.n))

    def maxima(self, column: int) -> tuple[int, int]:
        """The largest frame and byte counts of a column's rows (empty rows count 0)."""
        bins = self.bins[column]
        if not self.n:
            return 0, 0
        cells = [self._cell(bins, i) for i in {min(i, self.n - 1) for i in bins} | {self.n - 1}]
        return max(c[0] for c in cells), max(c[1] for c in cells)

    def to_json(self) -> list:
        return list(self)
