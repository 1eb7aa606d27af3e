"""tshark's default packet-list columns (No., Time, Source, Destination, Protocol, Length, Info): the summary line,
`-T psml`, and the `_ws.col.<Title>` pseudo-fields of `-e`. Time is seconds since the first frame of the capture
(not the first one shown), as tshark's default "Relative" time column."""
from __future__ import annotations

from .text import _seconds

TITLES = ("No.", "Time", "Source", "Destination", "Protocol", "Length", "Info")
COLUMN_PREFIX = "_ws.col."


def values(packet, first_ns: int | None) -> list[str]:
    frame, d = packet.frame, packet.decoded
    t = _seconds(frame.ts_ns - (frame.ts_ns if first_ns is None else first_ns), frame.prec)
    return [str(frame.number), t, d.src or "", d.dst or "", packet.protocol, str(frame.length),
            packet.info]


def column(packet, abbrev: str, first_ns: int | None) -> str | None:
    """The value of `_ws.col.<Title>`, or None for a column tshark's default layout does not have (tshark accepts
    any `_ws.col.` name and prints nothing for it)."""
    title = abbrev[len(COLUMN_PREFIX):]
    if title not in TITLES:
        return None
    return values(packet, first_ns)[TITLES.index(title)]


def is_column(abbrev: str) -> bool:
    return abbrev.startswith(COLUMN_PREFIX) and len(abbrev) > len(COLUMN_PREFIX)
