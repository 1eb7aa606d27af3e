"""Display filters inside -z arguments (io,stat columns, conv/endpoints/io,phs/expert FILTER): analysis.filter."""
from __future__ import annotations

from .stats_base import StatsError


def compile_filter(text: str):
    """A predicate packet -> bool for a display filter; StatsError (one line) when it does not compile."""
    from .filter import FilterError, compile_filter as compile_display_filter
    try:
        return compile_display_filter(text)
    except FilterError as exc:
        first = str(exc).splitlines()[0] if str(exc) else repr(exc)
        raise StatsError(f"-z filter {text!r}: {first}") from None
