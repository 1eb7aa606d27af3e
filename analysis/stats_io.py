"""-z io,stat,INTERVAL[,FILTER,...]: frames and bytes per time interval, one column per filter (none: all); a column
may instead be a function of a field, FUNC(FIELD)[FILTER] with FUNC one of COUNT SUM MIN MAX AVG LOAD.

The interval arithmetic is tshark's (ui/cli/tap-iostat.c): times in microseconds relative to the first
frame; an interval of 0 or longer than the capture means one row for the whole capture; the duration is moved up
to the next printed digit (the number of decimals given in INTERVAL, or chosen from the duration's magnitude for a
whole-capture row) only when it is past half of one; the rows cover that duration, the last one ends at it (a
LOAD there is over its span), and a frame past it is in no row.
"""
from __future__ import annotations

import re

from ..engine.demand import combine, of_fields, of_filter
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
        self.functions = [function_column(f) for f in self.filters]    # None: a frames-and-bytes column
        self.matchers = [compile_optional(f if fn is None else fn.filter, "io,stat")
                         for f, fn in zip(self.filters, self.functions)]
        self.bins = [dict() for _ in self.filters]      # column -> {interval index: [frames, bytes]}
        self.first_ns = None
        self.last_us = 0

    def standard_only(self) -> bool:
        return all(match is None for match in self.matchers) and all(fn is None for fn in self.functions)

    def shard(self) -> None:
        """This tap sees some conversations of a run whose shards are merged (api/tap_merge.py prepare)."""
        for fn in self.functions:
            if fn is not None:
                fn.shard()

    def prime(self, filters) -> None:
        """The display filters of the whole run (-Y, -R, every -z): tshark 4.0 fills a function's field only when
        some filter names it (proto_get_finfo_ptr_array finds no item of a field nothing asked for), and counts
        0 otherwise; protodump does the same so that its tables equal tshark's."""
        words = set()
        for text in filters:       # the filters only: a function's own field names no filter
            words.update(re.findall(r"[A-Za-z_][\w.-]*", _FUNCTION_CALL.sub("", text or "")))
        for fn in self.functions:
            if fn is not None:
                fn.primed = fn.field in words

    def demand(self):
        # the filters' fields, and each function's own field (SUM(udp.length) reads udp.length)
        fields = of_fields([fn.field for fn in self.functions if fn is not None])
        return combine([*(of_filter(f or None) for f in self.filters), fields])

    def add(self, packet):
        ts = packet.frame.ts_ns
        if self.first_ns is None:
            self.first_ns = ts
        rel = (ts - self.first_ns + 500) // 1000
        self.last_us = max(self.last_us, rel)
        for match, bins, fn in zip(self.matchers, self.bins, self.functions):
            if fn is not None:
                if match is None or match(packet):
                    idx = rel // self.interval if self.interval else 0
                    fn.add(packet, idx, self.interval or WHOLE)     # interval 0: tshark's G_MAXUINT64
                continue
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
        half = 5 * (dv // 10)
        rounded = duration + half          # tshark 4.0 rounds up by half a printed digit
        # iostat_draw's own `duration`: moved up to the next printed digit only when past half of one, else the
        # real end; the last row's LOAD is over it (a whole-capture row: all of it)
        end = duration if duration % dv <= half else rounded // dv * dv
        if whole:
            interval = end
        n = (end // interval + (1 if end % interval else 0)) if interval else 0
        rows = IoRows(self.bins, n, interval, end, whole)
        last_span = max(end - (n - 1) * interval, 1) if n else 0
        funcs = [None if fn is None else fn.table(interval, n, last_span) for fn in self.functions]
        return {"kind": self.kind, "duration_us": duration, "rounded_duration_us": rounded,
                "interval_us": interval, "whole_capture": whole, "precision": prec,
                "filters": self.filters, "rows": rows, "functions": funcs}


class IoRows:
    """The rows of an io,stat table, made as they are read: a capture set spanning years at a 1 s interval has
    millions of rows (tshark prints them all, mostly empty), so they are never all held at once. The bins are
    sparse (interval index -> [frames, bytes]); `maxima(column)` gives the widest values for the column widths
    from the bins alone."""

    def __init__(self, bins, n: int, interval: int, rounded: int, whole: bool):
        self.bins, self.n, self.interval, self.rounded, self.whole = bins, n, interval, rounded, whole

    def __len__(self) -> int:
        return self.n

    def __eq__(self, other) -> bool:      # same table: compared on the sparse bins, never row by row
        return isinstance(other, IoRows) and (self.n, self.interval, self.rounded, self.whole, self.bins) == \
            (other.n, other.interval, other.rounded, other.whole, other.bins)

    __hash__ = None

    def __repr__(self) -> str:
        return f"IoRows({self.n} rows of {self.interval} us)"

    def _cell(self, bins, i: int) -> tuple[int, int]:
        if self.whole:
            return tuple(sum(v[k] for v in bins.values()) for k in (0, 1))
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
        # a bin past the last row is printed nowhere but widens the column (tshark tracks widths as it taps)
        cells = [self._cell(bins, i) for i in {*bins, self.n - 1}]
        return max(c[0] for c in cells), max(c[1] for c in cells)

    def to_json(self) -> list:
        return list(self)


FUNCTIONS = ("COUNT", "SUM", "MIN", "MAX", "AVG", "LOAD")
_FUNCTION_CALL = re.compile(r"(COUNT|SUM|MIN|MAX|AVG|LOAD)\([^)]*\)")
_FUNCTION = re.compile(r"^\s*(COUNT|SUM|MIN|MAX|AVG|LOAD)\(\s*([^)\s]*)\s*\)(.*)$")
# fields tshark types FT_RELATIVE_TIME (protodump keeps their "S.NNNNNNNNN" text)
RELATIVE_TIME = frozenset(("frame.time_delta", "frame.time_delta_displayed", "frame.time_relative",
                           "frame.offset_shift", "udp.time_relative", "udp.time_delta", "tcp.time_relative",
                           "tcp.time_delta", "tcp.analysis.ack_rtt", "tcp.analysis.initial_rtt"))
NS = 1_000_000_000
WHOLE = 2 ** 64 - 1       # the interval tshark taps a whole-capture table with (a LOAD value stays in its row)


def function_column(spec: str):
    """FUNC(FIELD)[FILTER] -> an IoFunction; a plain filter -> None."""
    m = _FUNCTION.match(spec)
    if m is None:
        return None
    func, field, flt = m.groups()
    if not field:
        raise StatsError(f'-z io,stat: {func}() needs a field: "{spec}"')
    return IoFunction(func, field, flt.strip())


def _kind_of(field: str) -> str:
    if field in RELATIVE_TIME:
        return "time"
    from .filter_fields import registry
    spec = registry().get(field)
    return "float" if spec is not None and spec.ftype in ("float", "double") else "int"


def magnitude_of(value: int) -> int:
    return magnitude(max(int(value), 0), 15)


class IoFunction:
    """One function column, as ui/cli/tap-iostat.c of tshark 4.0 computes it: per interval `frames` (frames the
    column's filter passes), `num` (values, for AVG), `counter` (integers; relative times in ns, LOAD in µs) or
    `fcounter` (floats); the widest value for the column width is tracked after every frame, as tshark does.

    A cell also keeps what merging shards (--dask, -j) needs to give the one-process result: the number of its
    first frame, whether that frame had a value (MIN starts from it, or from 0), the smallest value, and the
    largest tracked width value of the cell. An AVG column on a shard (`shard()`) also logs each frame's values
    per cell: its width follows the running mean over the frames of every shard, in frame order."""

    def __init__(self, func: str, field: str, flt: str):
        self.func, self.field, self.filter = func, field, flt
        self.primed = False
        self.cells: dict[int, list] = {}          # interval index -> [frames, num, counter, fcounter]
        self.kind = _kind_of(field)              # "int", "float", "time": from the field's registration
        self.max_val = 0
        self.last = 0                            # the latest interval with a cell (LOAD spreads back from it)
        self.log: dict | None = None             # AVG on a shard: interval index -> [(frame number, values)]

    def shard(self) -> None:
        """This column sees some conversations of a run that merges shards (api/shards.py): keep what merge needs."""
        if self.func == "AVG":
            self.log = {}

    def _values(self, packet):
        if not self.primed:
            return []
        items = packet.index().get(self.field, ())
        out = []
        for item in items:
            value = item.value
            if self.kind == "time":
                try:
                    secs, _, frac = str(value).partition(".")
                    sign = -1 if secs.startswith("-") else 1
                    ns = int(secs) * NS + sign * int((frac + "000000000")[:9])
                except ValueError:
                    continue
                out.append(ns)
            elif isinstance(value, (bool, int, float)):
                out.append(float(value) if self.kind == "float" else int(value))
        return out

    def cell(self, idx: int) -> list:
        c = self.cells.get(idx)
        if c is None:      # frames, num, counter, fcounter, first frame, first had a value, smallest value, width
            c = self.cells[idx] = [0, 0, 0, 0.0, 0, False, None, 0]
            self.last = max(self.last, idx)
        return c

    def add(self, packet, idx: int, interval_us: int) -> None:
        if idx < self.last:          # tshark ignores frames in an interval before the latest one
            return
        c = self.cell(idx)
        c[0] += 1
        values = self._values(packet)
        if c[0] == 1:
            c[4], c[5] = packet.frame.number, bool(values)
        if self.log is not None and values:
            self.log.setdefault(idx, []).append((packet.frame.number, values))
        func, floats = self.func, self.kind == "float"
        if func == "COUNT":          # every occurrence, whatever its type (a protocol's too: COUNT(frame))
            c[2] += len(packet.index().get(self.field, ())) if self.primed else 0
        for i, v in enumerate(values):
            if func == "SUM":
                c[3 if floats else 2] += v
            elif func == "MIN":
                k = 3 if floats else 2
                if (c[0] == 1 and i == 0) or v < c[k]:
                    c[k] = v
                if c[6] is None or v < c[6]:
                    c[6] = v
            elif func == "MAX":
                k = 3 if floats else 2
                if v > c[k]:
                    c[k] = v
            elif func == "AVG":
                c[1] += 1
                c[3 if floats else 2] += v
            elif func == "LOAD" and self.kind == "time":
                us = v // 1000
                tival = us % interval_us
                c[2] += tival
                us -= tival
                back = idx - 1
                while us > 0:
                    pit = self.cell(back if back >= 0 else self.last)
                    if us < interval_us:
                        pit[2] += us
                        break
                    pit[2] += interval_us
                    us -= interval_us
                    back -= 1
        self._track(c)

    def _track(self, c) -> None:
        q = self._width_value(c)
        if q > c[7]:
            c[7] = q
            if q > self.max_val:
                self.max_val = q

    def _width_value(self, c) -> int:
        """What tshark keeps of a cell for the column's width (its max_vals)."""
        func, kind = self.func, self.kind
        if func in ("COUNT", "LOAD"):
            return c[2]
        if func == "AVG":
            if not c[1]:
                return 0
            if kind == "float":
                return int(c[3]) // c[1]
            if kind == "time":
                return (c[2] // c[1] + 500_000_000) // NS
            return c[2] // c[1]
        if kind == "float":
            return int(c[3] + 0.5)
        return c[2]

    def merge(self, parts: list[IoFunction]) -> None:
        """The shards' columns (each over some conversations of the same run) into this one, as one process would
        have computed it. AVG's width follows the running mean frame by frame (tshark tracks it after every frame):
        where several shards share an interval, their logged values are replayed in frame order."""
        self.primed = any(p.primed for p in parts)
        self.last = max([self.last, *(p.last for p in parts)])
        floats = self.kind == "float"
        for idx in sorted({i for p in parts for i in p.cells}):
            have = sorted((p.cells[idx] for p in parts if idx in p.cells), key=lambda c: c[4])
            c = self.cell(idx)
            c[0], c[1] = sum(h[0] for h in have), sum(h[1] for h in have)
            first = have[0]
            c[4], c[5] = first[4], first[5]
            mins = [h[6] for h in have if h[6] is not None]
            c[6] = min(mins) if mins else None
            if self.func == "MIN":      # from the interval's first frame's value, or from 0 when it had none
                low = min(mins) if mins else 0
                value = low if first[5] else min(low, 0)
                if floats:
                    c[3] = float(value)
                else:
                    c[2] = value
                c[7] = first[7]         # the running minimum starts at its first value: its widest
            elif self.func == "MAX":
                c[2], c[3] = max(h[2] for h in have), max(h[3] for h in have)
                c[7] = self._width_value(c)
            elif len(have) > 1 and self.func == "AVG" and all(p.log is not None for p in parts):
                self._replay(c, sorted(e for p in parts for e in p.log.get(idx, ())))
            else:
                c[2], c[3] = sum(h[2] for h in have), sum(h[3] for h in have)
                c[7] = have[0][7] if len(have) == 1 else self._width_value(c)
            self.max_val = max(self.max_val, c[7])

    def _replay(self, c: list, entries) -> None:
        """An AVG cell from its frames' values in frame order, as add tracks it (sums in the same order too)."""
        k = 3 if self.kind == "float" else 2
        c[1], c[2], c[3], c[7] = 0, 0, 0.0, 0
        for _, values in entries:
            for v in values:
                c[1] += 1
                c[k] += v
            self._track(c)

    def table(self, interval_us: int, n: int, last_span: int) -> dict:
        """What the renderer needs: the column's width and a formatter of the value of row i."""
        func, kind = self.func, self.kind or "int"
        if func == "COUNT":
            width = max(5, magnitude_of(self.max_val))
        elif func == "LOAD" and kind != "time":     # tshark's LOAD has a value for relative times only: blank
            width = len(func)
        elif func == "LOAD" or kind == "time":
            top = self.max_val
            if func == "LOAD":
                top = self.max_val // max(interval_us, 1)
            elif func != "AVG":
                top = (self.max_val + 500_000_000) // NS
            width = magnitude_of(top) + 7
        elif kind == "float":
            width = magnitude_of(self.max_val) + 7
        else:
            width = max(len(func), magnitude_of(self.max_val))
        return FunctionTable(func, width, self, (interval_us, last_span), n)

    def text(self, i: int, last: bool, interval_us: int, last_span: int) -> str:
        cells = self.cells
        # a frame past the last row (at the very end when the duration is a whole number of intervals) is in
        # no row, as tshark prints only the first n items of a column
        frames, num, counter, fcounter = (cells.get(i) or (0, 0, 0, 0.0))[:4]
        func, kind = self.func, self.kind or "int"
        if func == "COUNT":
            return str(counter)
        if func == "LOAD" and kind != "time":
            return None           # tshark 4.0 prints no cell at all (its row is one column short)
        if func == "LOAD":        # the last row's load is over its own (shorter) span, as printed
            iv = max(last_span if last else interval_us, 1)
            return f"{counter // iv}.{(counter % iv) * 1_000_000 // iv:06d}"
        if kind == "time":
            if func == "AVG":     # the mean, rounded to the microsecond
                us = (counter // num + 500) // 1000 if num else 0
                return f"{us // 1_000_000}.{us % 1_000_000:06d}"
            return f"{counter // NS}.{counter % NS // 1000:06d}"
        if kind == "float":
            value = fcounter / num if func == "AVG" and num else (0.0 if func == "AVG" else fcounter)
            return f"{value:.6f}"
        if func == "AVG":
            return str(counter // num if num else 0)
        return str(counter)


class FunctionTable:
    """A function column for the renderer: ["name"], ["width"], ["value"](row, last) -> its text; in JSON its
    name and values. Picklable (a -j worker sends its tables to the parent)."""

    def __init__(self, name: str, width: int, column: IoFunction, spans: tuple[int, int], rows: int):
        self.fields = {"name": name, "width": width, "value": self.value}
        self.column, self.spans, self.rows = column, spans, rows

    def value(self, i: int, last: bool = False) -> str | None:
        return self.column.text(i, last, *self.spans)

    def __getitem__(self, key):
        return self.fields[key]

    def to_json(self) -> dict:
        return {"name": self.fields["name"], "values": [self.value(i, i == self.rows - 1) for i in range(self.rows)]}
