"""Display filters inside -z arguments (io,stat columns, conv/endpoints/io,phs/expert FILTER): analysis.filter."""
from __future__ import annotations

from .stats_base import StatsError


# how tshark 4.0 reports a bad filter of its own statistics (the tap's registration error), by statistic:
# (the tap's name in "Couldn't register NAME tap", a blank line first?), and expert's line on standard output
REGISTERED = {"io,phs": ("io,phs", False), "conv": ("conversations", False), "endpoints": ("endpoint", False),
              "io,stat": ("io,stat", True), "proto,colinfo": ("proto,colinfo", False)}


def compile_filter(text: str, tap: str | None = None):
    """A predicate packet -> bool for a display filter; StatsError (one line) when it does not compile, in
    tshark's words for its statistic `tap` (io,phs, conv, endpoints, io,stat, expert)."""
    from .filter import FilterError, compile_filter as compile_display_filter
    try:
        return compile_display_filter(text)
    except FilterError as exc:
        first = str(exc).splitlines()[0] if str(exc) else repr(exc)
        invalid = f'Filter "{text}" is invalid - {first}'
        report = None
        if tap == "expert":
            report = (f"Expert tap error ({invalid})!", True)
        elif tap in REGISTERED:
            name, blank = REGISTERED[tap]
            report = (("\n" if blank else "") + f"protodump: Couldn't register {name} tap: {invalid}", False)
        error = StatsError(f"-z filter {text!r}: {first}", report=report)
        error.invalid = invalid         # (a stats tree words its failure around it)
        raise error from None
